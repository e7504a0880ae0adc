//! The MobiFS seed's two benchmarks as personas, runnable on any stack
//! (`--workload bench:fs-write`, `--workload bench:sqlite`):
//!
//! - **File-system write throughput with fsync** ([`FsWriteBench`]): one file written
//!   sequentially in `record_bytes` records, each followed by fsync, `file_bytes` in all;
//!   one user operation per MiB. Throughput = bytes ÷ the operations' total latency.
//! - **SQLite transaction throughput** ([`SqliteBench`]): one row of `row_bytes` inserted
//!   per transaction (rollback journal PERSIST, synchronous FULL: Android's framework
//!   default of the seed's era), `transactions` in all; one user operation per
//!   transaction. Throughput = transactions ÷ their total latency.
//!
//! The seed does not say which benchmark programs it ran nor their sizes (the slides show
//! only the ratios 18.8× and 11.2×); these are ours (`docs/mobifs-reproduction.md`).

use flashstack_sqlvfs::SqliteConfig;

use crate::ctx::Ctx;
use crate::error::AppError;
use crate::persona::{mkdir_quiet, Journal, Persona};

const BENCH_DIR: &str = "/data/data/com.flashstack.bench";

/// Sequential writes with an fsync after each record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsWriteBench {
    pub file_bytes: u64,
    pub record_bytes: u64,
}

impl Default for FsWriteBench {
    fn default() -> Self {
        Self {
            file_bytes: 16 << 20,
            record_bytes: 4096,
        }
    }
}

/// The user operation of [`FsWriteBench`]: one MiB of records.
pub const FS_WRITE_OP: &str = "write 1 MiB, fsync per record";
/// The user operation of [`SqliteBench`]: one transaction.
pub const SQLITE_OP: &str = "insert transaction";

impl Persona for FsWriteBench {
    fn name(&self) -> String {
        "bench:fs-write".into()
    }
    fn description(&self) -> String {
        format!(
            "MobiFS's file-system benchmark: {} MiB written in {} B records, fsync after each",
            self.file_bytes >> 20,
            self.record_bytes
        )
    }
    fn calibration(&self) -> String {
        "none (a benchmark; the seed reports 18.8x MobiFS over Ext4)".into()
    }
    fn setup(&self, ctx: &mut Ctx) -> Result<(), AppError> {
        mkdir_quiet(ctx, &format!("{BENCH_DIR}/files"))
    }
    fn run(&self, ctx: &mut Ctx) -> Result<(), AppError> {
        let path = format!("{BENCH_DIR}/files/throughput.bin");
        let file = ctx.open(&path, true)?;
        let record = self.record_bytes.max(1);
        let per_op = (1u64 << 20).div_ceil(record).max(1);
        let records = self.file_bytes.div_ceil(record);
        let mut n = 0;
        while n < records {
            let batch = per_op.min(records - n);
            ctx.user_op(FS_WRITE_OP, |ctx| {
                for i in n..n + batch {
                    let data = ctx.text_page(i, 0);
                    let len = (record as usize).min(data.len());
                    ctx.write_at(file, &path, i * record, &data[..len])?;
                    ctx.fsync(file, &path)?;
                }
                Ok(())
            })?;
            n += batch;
        }
        ctx.close(file, &path)
    }
}

/// One row inserted per transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteBench {
    pub transactions: u64,
    pub row_bytes: usize,
}

impl Default for SqliteBench {
    fn default() -> Self {
        Self {
            transactions: 1000,
            row_bytes: 100,
        }
    }
}

impl Persona for SqliteBench {
    fn name(&self) -> String {
        "bench:sqlite".into()
    }
    fn description(&self) -> String {
        format!(
            "MobiFS's database benchmark: {} transactions of one {}-byte row each",
            self.transactions, self.row_bytes
        )
    }
    fn calibration(&self) -> String {
        "none (a benchmark; the seed reports 11.2x MobiFS over Ext4)".into()
    }
    fn setup(&self, ctx: &mut Ctx) -> Result<(), AppError> {
        mkdir_quiet(ctx, &format!("{BENCH_DIR}/databases"))?;
        open_db(ctx)?;
        ctx.db()?
            .execute_batch("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT)")?;
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx) -> Result<(), AppError> {
        if ctx.db().is_err() {
            open_db(ctx)?;
        }
        for _ in 0..self.transactions {
            let body = "x".repeat(self.row_bytes);
            ctx.user_op(SQLITE_OP, |ctx| {
                ctx.txn(|c, _| {
                    c.execute("INSERT INTO t (body) VALUES (?1)", [&body])?;
                    Ok(((), vec![("main".into(), "t".into())]))
                })
            })?;
        }
        Ok(())
    }
}

fn open_db(ctx: &mut Ctx) -> Result<(), AppError> {
    let config: SqliteConfig = Journal::Persist.config();
    let path = format!("{BENCH_DIR}/databases/bench.db");
    ctx.open_app(&[("main".into(), path, config)], &[])
}
