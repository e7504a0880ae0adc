//! Properties: no input makes a parser or importer panic, and every valid trace survives
//! write → parse unchanged (and re-writes to the same bytes).

use flashstack_content::ContentClass;
use flashstack_workload::text::{parse_str, to_text, HEADER};
use flashstack_workload::{analyze, mobigen, strace, Data, FileOp, FileTrace, OpKind, OpenFlags};
use flashstack_workload::{Access, Resolver};
use proptest::prelude::*;

fn arb_path() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/data/a.db".to_string()),
        Just("/data/a.db-journal".to_string()),
        Just("/tmp/x y.tmp".to_string()),
        Just("/sdcard/ü%.jpg".to_string()),
        "/[a-z\\t %#é]{1,8}",
    ]
}

fn arb_data() -> impl Strategy<Value = Data> {
    prop_oneof![
        Just(Data::Unknown),
        (
            0..ContentClass::ALL.len(),
            proptest::option::of(0.0f64..=1.0)
        )
            .prop_map(|(i, r)| {
                Data::Class {
                    class: ContentClass::ALL[i],
                    change_ratio: r,
                }
            }),
    ]
}

fn arb_flags() -> impl Strategy<Value = OpenFlags> {
    (0..3u8, any::<[bool; 5]>()).prop_map(|(a, b)| OpenFlags {
        access: [Access::Rdonly, Access::Wronly, Access::Rdwr][a as usize],
        create: b[0],
        exclusive: b[1],
        truncate: b[2],
        append: b[3],
        directory: b[4],
    })
}

/// A raw step; the builder keeps the ones the fd state machine accepts.
fn arb_kind() -> impl Strategy<Value = OpKind> {
    let fd = 0..3u32;
    let len = 0..10_000u64;
    let off = 0..1u64 << 40;
    prop_oneof![
        4 => (fd.clone(), arb_path(), arb_flags()).prop_map(|(fd, path, flags)| OpKind::Open {
            fd,
            path,
            flags
        }),
        1 => fd.clone().prop_map(|fd| OpKind::Close { fd }),
        1 => (fd.clone(), len.clone()).prop_map(|(fd, len_bytes)| OpKind::Read { fd, len_bytes }),
        1 => (fd.clone(), off.clone(), len.clone()).prop_map(|(fd, offset_bytes, len_bytes)| {
            OpKind::Pread {
                fd,
                offset_bytes,
                len_bytes,
            }
        }),
        1 => (fd.clone(), len.clone(), arb_data()).prop_map(|(fd, len_bytes, data)| OpKind::Write {
            fd,
            len_bytes,
            data
        }),
        4 => (
            fd.clone(),
            off.clone(),
            proptest::collection::vec(any::<u8>(), 0..40)
        )
            .prop_map(|(fd, offset_bytes, bytes)| OpKind::Pwrite {
                fd,
                offset_bytes,
                len_bytes: bytes.len() as u64,
                data: Data::Bytes(bytes)
            }),
        1 => (fd.clone(), off.clone(), len.clone(), arb_data()).prop_map(
            |(fd, offset_bytes, len_bytes, data)| OpKind::Pwrite {
                fd,
                offset_bytes,
                len_bytes,
                data
            }
        ),
        1 => (fd.clone(), off.clone()).prop_map(|(fd, offset_bytes)| OpKind::Seek { fd, offset_bytes }),
        1 => fd.clone().prop_map(|fd| OpKind::Fsync { fd }),
        1 => fd.clone().prop_map(|fd| OpKind::Fdatasync { fd }),
        1 => (fd.clone(), proptest::option::of(0u64..1 << 40))
            .prop_map(|(fd, size_bytes)| OpKind::Fstat { fd, size_bytes }),
        1 => (fd.clone(), len.clone()).prop_map(|(fd, len_bytes)| OpKind::Ftruncate { fd, len_bytes }),
        1 => (arb_path(), len.clone())
            .prop_map(|(path, len_bytes)| OpKind::Truncate { path, len_bytes }),
        1 => arb_path().prop_map(|path| OpKind::Unlink { path }),
        1 => (arb_path(), arb_path()).prop_map(|(from, to)| OpKind::Rename { from, to }),
        1 => (arb_path(), arb_path()).prop_map(|(from, to)| OpKind::Link { from, to }),
        1 => arb_path().prop_map(|path| OpKind::Mkdir { path }),
        1 => arb_path().prop_map(|path| OpKind::Rmdir { path }),
        1 => (arb_path(), proptest::option::of(0u64..1 << 40))
            .prop_map(|(path, size_bytes)| OpKind::Stat { path, size_bytes }),
        1 => Just(OpKind::Sync),
    ]
}

fn arb_trace() -> impl Strategy<Value = FileTrace> {
    proptest::collection::vec((0..1000u64, 0..4u32, arb_kind()), 0..60).prop_map(|steps| {
        let mut resolver = Resolver::new();
        let mut time_ns = 0;
        let mut ops = Vec::new();
        for (gap, tid, kind) in steps {
            time_ns += gap;
            let op = FileOp { time_ns, tid, kind };
            if resolver.apply(&op).is_ok() {
                ops.push(op);
            }
        }
        FileTrace { ops }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn traces_round_trip(trace in arb_trace()) {
        let text = to_text(&trace);
        let parsed = parse_str(&text, "p").unwrap();
        prop_assert_eq!(&parsed, &trace);
        prop_assert_eq!(to_text(&parsed), text);
        analyze(&parsed).unwrap();
    }

    #[test]
    fn arbitrary_text_never_panics(body in "(?s).{0,400}") {
        let _ = parse_str(&body, "f");
        let _ = parse_str(&format!("{HEADER}\n{body}"), "f");
        let _ = mobigen::import(body.as_bytes(), "m");
        let _ = strace::import(body.as_bytes(), "s");
    }

    #[test]
    fn plausible_lines_never_panic(
        lines in proptest::collection::vec(
            (0..3u64, 0..3u32, prop_oneof![
                Just("open"), Just("pwrite"), Just("write"), Just("close"), Just("read"),
                Just("fsync"), Just("rename"), Just("pread"), Just("seek"), Just("unlink"),
            ], "[ 0-9a-z:/|%.\"-]{0,24}"),
            0..12,
        )
    ) {
        let body: String = lines
            .iter()
            .map(|(t, tid, op, rest)| format!("{t} {tid} {op} {rest}\n"))
            .collect();
        let _ = parse_str(&format!("{HEADER}\n{body}"), "f");
        let _ = mobigen::import(body.as_bytes(), "m");
        let strace_body: String = lines
            .iter()
            .map(|(t, tid, op, rest)| format!("{tid} 10:00:0{t}.5 {op}({rest}) = {t}\n"))
            .collect();
        let _ = strace::import(strace_body.as_bytes(), "s");
    }
}

/// The generator must make traces worth round-tripping, not mostly empty ones.
#[test]
fn generated_traces_are_substantial() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut ops, mut writes_with_bytes) = (0, 0);
    for _ in 0..50 {
        let trace = arb_trace().new_tree(&mut runner).unwrap().current();
        ops += trace.ops.len();
        writes_with_bytes += trace
            .ops
            .iter()
            .filter(|op| {
                matches!(
                    op.kind,
                    OpKind::Pwrite {
                        data: Data::Bytes(_),
                        ..
                    }
                )
            })
            .count();
    }
    assert!(ops >= 50 * 8, "only {ops} ops in 50 traces");
    assert!(
        writes_with_bytes >= 20,
        "only {writes_with_bytes} captured writes"
    );
}
