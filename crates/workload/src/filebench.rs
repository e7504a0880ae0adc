//! The four filebench personalities of COCO's workload table (the seed's slide
//! "Workloads"), as in-memory file-level traces with content that zlib compresses by a
//! per-file ratio drawn from a Zipfian distribution over the personality's range:
//!
//! | personality | pattern | I/O size | R:W | compression ratio |
//! |---|---|---|---|---|
//! | webserver | sequential | 16 KiB–1 MiB | 9:1 | 1–2 |
//! | varmail | sequential | 1 MiB | 1:1 | 2–3 |
//! | fileserver | random | 16 KiB | 1:2 | 2–3 |
//! | oltp | random | 2 KiB–256 KiB | 1:9 | 3–4 |
//!
//! Table values are the seed's. **Assumed** (the seed does not say): the Zipf exponent
//! (1.0) over ten equal buckets of the range with the lowest ratio the most frequent; the
//! file set (`FilebenchConfig`); fsync after every write for varmail and oltp (filebench's
//! varmail fsyncs its appends, oltp's log writer syncs) and never for the other two; I/O
//! sizes uniform in the range at 512-byte granularity; files chosen uniformly.
//!
//! `flashstack run --workload filebench:NAME` runs one on a whole stack.

use flashstack_content::ratio::fill_for_ratio;
use flashstack_sim::Rng;

use crate::op::{Data, FileOp, FileTrace, OpKind, OpenFlags};

/// A filebench personality of the seed's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Personality {
    Webserver,
    Varmail,
    Fileserver,
    Oltp,
}

/// Sequential or random offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    Sequential,
    Random,
}

/// One row of the seed's table, plus the assumed fsync behaviour.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PersonalitySpec {
    pub pattern: Pattern,
    pub io_bytes_min: u64,
    pub io_bytes_max: u64,
    pub read_parts: u32,
    pub write_parts: u32,
    pub ratio_min: f64,
    pub ratio_max: f64,
    pub fsync_each_write: bool,
}

impl Personality {
    pub const ALL: [Personality; 4] = [
        Personality::Webserver,
        Personality::Varmail,
        Personality::Fileserver,
        Personality::Oltp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Personality::Webserver => "webserver",
            Personality::Varmail => "varmail",
            Personality::Fileserver => "fileserver",
            Personality::Oltp => "oltp",
        }
    }

    /// By name (`webserver`, …), or `None`.
    pub fn from_name(name: &str) -> Option<Personality> {
        Personality::ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn spec(self) -> PersonalitySpec {
        const KIB: u64 = 1024;
        let (pattern, io_bytes_min, io_bytes_max, read_parts, write_parts, lo, hi, fsync) =
            match self {
                Personality::Webserver => (
                    Pattern::Sequential,
                    16 * KIB,
                    1024 * KIB,
                    9,
                    1,
                    1.0,
                    2.0,
                    false,
                ),
                Personality::Varmail => (
                    Pattern::Sequential,
                    1024 * KIB,
                    1024 * KIB,
                    1,
                    1,
                    2.0,
                    3.0,
                    true,
                ),
                Personality::Fileserver => {
                    (Pattern::Random, 16 * KIB, 16 * KIB, 1, 2, 2.0, 3.0, false)
                }
                Personality::Oltp => (Pattern::Random, 2 * KIB, 256 * KIB, 1, 9, 3.0, 4.0, true),
            };
        PersonalitySpec {
            pattern,
            io_bytes_min,
            io_bytes_max,
            read_parts,
            write_parts,
            ratio_min: lo,
            ratio_max: hi,
            fsync_each_write: fsync,
        }
    }
}

/// The scale of a run (the seed's sizes are not stated; these are flashstack's).
#[derive(Clone, Debug, PartialEq)]
pub struct FilebenchConfig {
    pub files: u32,
    pub file_bytes: u64,
    /// Reads and writes after the file set is laid down.
    pub ops: u32,
    pub zipf_exponent: f64,
    pub ratio_buckets: u32,
    /// Virtual time between two operations of the trace (a closed loop issues the next
    /// as soon as it may; the replay waits for completions anyway).
    pub gap_ns: u64,
}

impl Default for FilebenchConfig {
    fn default() -> Self {
        FilebenchConfig {
            files: 16,
            file_bytes: 4 << 20,
            ops: 2_000,
            zipf_exponent: 1.0,
            ratio_buckets: 10,
            gap_ns: 10_000,
        }
    }
}

/// Bucket `0..buckets` of a Zipf(s) draw from `u` in [0, 1): bucket k has weight
/// 1 / (k + 1)^s (inverse CDF).
pub fn zipf_bucket(u: f64, buckets: u32, s: f64) -> u32 {
    let weights: Vec<f64> = (0..buckets)
        .map(|k| 1.0 / ((k + 1) as f64).powf(s))
        .collect();
    let total: f64 = weights.iter().sum();
    let mut acc = 0.0;
    for (k, w) in weights.iter().enumerate() {
        acc += w / total;
        if u < acc {
            return k as u32;
        }
    }
    buckets - 1
}

/// The compression ratio of each file: Zipfian over `ratio_buckets` equal buckets of the
/// personality's range, at each bucket's midpoint.
pub fn file_ratios(spec: &PersonalitySpec, config: &FilebenchConfig, rng: &mut Rng) -> Vec<f64> {
    let width = (spec.ratio_max - spec.ratio_min) / config.ratio_buckets as f64;
    (0..config.files)
        .map(|_| {
            let k = zipf_bucket(rng.unit_f64(), config.ratio_buckets, config.zipf_exponent);
            spec.ratio_min + width * (k as f64 + 0.5)
        })
        .collect()
}

/// The trace: the file set under `/fb/<name>/` written whole (the ratio of each file),
/// then `config.ops` reads and writes by the personality.
pub fn generate(p: Personality, config: &FilebenchConfig, seed: u64) -> FileTrace {
    let spec = p.spec();
    let mut rng = Rng::new(seed ^ 0xF11E_BE7C);
    let ratios = file_ratios(&spec, config, &mut rng);
    let mut ops = Vec::new();
    let mut t = 0u64;
    let mut push = |kind: OpKind, ops: &mut Vec<FileOp>| {
        ops.push(FileOp {
            time_ns: t,
            tid: 1,
            kind,
        });
        t += config.gap_ns;
    };
    let dir = format!("/fb/{}", p.name());
    push(OpKind::Mkdir { path: "/fb".into() }, &mut ops);
    push(OpKind::Mkdir { path: dir.clone() }, &mut ops);
    let chunk = 1 << 20;
    for (fd, &ratio) in ratios.iter().enumerate() {
        let fd = fd as u32;
        let path = format!("{dir}/f{fd}");
        push(
            OpKind::Open {
                fd,
                path,
                flags: OpenFlags::RDWR_CREATE,
            },
            &mut ops,
        );
        let mut offset = 0;
        while offset < config.file_bytes {
            let len = chunk.min(config.file_bytes - offset);
            let data = content(seed, fd, offset, len, ratio);
            push(
                OpKind::Pwrite {
                    fd,
                    offset_bytes: offset,
                    len_bytes: len,
                    data,
                },
                &mut ops,
            );
            offset += len;
        }
        push(OpKind::Fsync { fd }, &mut ops);
    }
    let mut cursor = vec![0u64; config.files as usize];
    let parts = spec.read_parts + spec.write_parts;
    for _ in 0..config.ops {
        let fd = rng.below(config.files as u64) as u32;
        let len = io_len(&spec, config, &mut rng);
        let offset = match spec.pattern {
            Pattern::Sequential => {
                let c = &mut cursor[fd as usize];
                if *c + len > config.file_bytes {
                    *c = 0;
                }
                let at = *c;
                *c += len;
                at
            }
            Pattern::Random => rng.below((config.file_bytes - len) / 512 + 1) * 512,
        };
        if (rng.below(parts as u64) as u32) < spec.read_parts {
            push(
                OpKind::Pread {
                    fd,
                    offset_bytes: offset,
                    len_bytes: len,
                },
                &mut ops,
            );
        } else {
            let data = content(seed ^ rng.next_u64(), fd, offset, len, ratios[fd as usize]);
            push(
                OpKind::Pwrite {
                    fd,
                    offset_bytes: offset,
                    len_bytes: len,
                    data,
                },
                &mut ops,
            );
            if spec.fsync_each_write {
                push(OpKind::Fsync { fd }, &mut ops);
            }
        }
    }
    for fd in 0..config.files {
        push(OpKind::Close { fd }, &mut ops);
    }
    FileTrace { ops }
}

fn io_len(spec: &PersonalitySpec, config: &FilebenchConfig, rng: &mut Rng) -> u64 {
    let span = (spec.io_bytes_max - spec.io_bytes_min) / 512;
    let len = spec.io_bytes_min + rng.below(span + 1) * 512;
    len.min(config.file_bytes)
}

/// `len` bytes at `offset` of file `fd`, page by page at `ratio`.
fn content(seed: u64, fd: u32, offset: u64, len: u64, ratio: f64) -> Data {
    let mut bytes = vec![0u8; len as usize];
    for (i, page) in bytes.chunks_mut(4096).enumerate() {
        let page_seed = seed ^ ((fd as u64) << 40) ^ (offset / 4096 + i as u64);
        fill_for_ratio(page_seed, ratio, page);
    }
    Data::Bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_puts_the_most_weight_on_the_first_bucket() {
        let mut counts = [0u32; 10];
        let mut rng = Rng::new(1);
        for _ in 0..10_000 {
            counts[zipf_bucket(rng.unit_f64(), 10, 1.0) as usize] += 1;
        }
        // Weights 1, 1/2, …, 1/10 over H_10 ≈ 2.929: 34 %, 17 %, …, 3.4 %.
        assert!((3_200..3_650).contains(&counts[0]), "{counts:?}");
        assert!((1_550..1_850).contains(&counts[1]), "{counts:?}");
        assert!(counts.windows(2).all(|w| w[0] + 120 >= w[1]), "{counts:?}");
        assert_eq!(zipf_bucket(0.999_999, 10, 1.0), 9);
    }

    #[test]
    fn traces_follow_the_table() {
        let config = FilebenchConfig {
            files: 4,
            file_bytes: 2 << 20,
            ops: 600,
            ..FilebenchConfig::default()
        };
        for p in Personality::ALL {
            let spec = p.spec();
            let trace = generate(p, &config, 5);
            assert_eq!(trace, generate(p, &config, 5), "deterministic");
            let run = &trace.ops[trace
                .ops
                .iter()
                .position(|o| matches!(o.kind, OpKind::Fsync { fd: 3 }))
                .unwrap()..];
            let (mut reads, mut writes) = (0u32, 0u32);
            for op in run {
                match &op.kind {
                    OpKind::Pread { len_bytes, .. } => {
                        reads += 1;
                        assert!((spec.io_bytes_min..=spec.io_bytes_max).contains(len_bytes));
                    }
                    OpKind::Pwrite {
                        len_bytes,
                        data: Data::Bytes(b),
                        ..
                    } => {
                        writes += 1;
                        assert_eq!(b.len() as u64, *len_bytes);
                    }
                    _ => {}
                }
            }
            let read_share = reads as f64 / (reads + writes) as f64;
            let wanted = spec.read_parts as f64 / (spec.read_parts + spec.write_parts) as f64;
            assert!(
                (read_share - wanted).abs() < 0.06,
                "{p:?}: {read_share} vs {wanted}"
            );
            let mut rng = Rng::new(9);
            let big = FilebenchConfig {
                files: 400,
                ..config.clone()
            };
            for r in file_ratios(&spec, &big, &mut rng) {
                assert!(r > spec.ratio_min && r < spec.ratio_max, "{p:?} {r}");
            }
        }
        assert_eq!(Personality::from_name("oltp"), Some(Personality::Oltp));
        assert_eq!(Personality::from_name("nope"), None);
    }
}
