//! How fast file-level traces are written, read and analysed on this machine (wall clock;
//! an example, not a library path). `cargo run --release -p flashstack-workload --example
//! filetrace_speed [OPS]`.

use std::time::Instant;

use flashstack_content::ContentClass;
use flashstack_workload::text::{parse_str, to_text};
use flashstack_workload::{analyze, Data, FileOp, FileTrace, OpKind, OpenFlags};

fn main() {
    let ops_wanted: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    // SQLite-like traffic: per transaction a journal write, a sync, 4 page updates, a sync.
    let mut ops = Vec::with_capacity(ops_wanted + 8);
    let mut time_ns = 0u64;
    let mut push = |ops: &mut Vec<FileOp>, kind| {
        time_ns += 1000;
        ops.push(FileOp {
            time_ns,
            tid: 1,
            kind,
        });
    };
    for (fd, path) in [(3, "/data/app.db"), (4, "/data/app.db-wal")] {
        push(
            &mut ops,
            OpKind::Open {
                fd,
                path: path.into(),
                flags: OpenFlags::RDWR_CREATE,
            },
        );
    }
    let mut page = 0u64;
    while ops.len() < ops_wanted {
        push(
            &mut ops,
            OpKind::Write {
                fd: 4,
                len_bytes: 4120,
                data: Data::Class {
                    class: ContentClass::SqliteTable,
                    change_ratio: None,
                },
            },
        );
        push(&mut ops, OpKind::Fdatasync { fd: 4 });
        for _ in 0..4 {
            page = (page * 7 + 3) % 1000;
            push(
                &mut ops,
                OpKind::Pwrite {
                    fd: 3,
                    offset_bytes: page * 4096,
                    len_bytes: 4096,
                    data: Data::Class {
                        class: ContentClass::SqliteTable,
                        change_ratio: Some(0.138),
                    },
                },
            );
        }
        push(&mut ops, OpKind::Fsync { fd: 3 });
    }
    let trace = FileTrace { ops };
    let n = trace.ops.len() as f64;
    let start = Instant::now();
    let text = to_text(&trace);
    let write_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let parsed = parse_str(&text, "speed").unwrap();
    let parse_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let summary = analyze(&parsed).unwrap();
    let analyze_s = start.elapsed().as_secs_f64();
    assert_eq!(parsed, trace);
    println!(
        "{} ops, {:.1} MB of text: write {:.2} M ops/s, parse {:.2} M ops/s, analyze {:.2} M ops/s",
        trace.ops.len(),
        text.len() as f64 / 1e6,
        n / write_s / 1e6,
        n / parse_s / 1e6,
        n / analyze_s / 1e6
    );
    print!("{}", summary.render());
}
