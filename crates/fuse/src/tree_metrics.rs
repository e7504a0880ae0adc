//! [`F2fsTreeMetrics`]: what an F2FS mount did, by layer (requests, page cache, F2FS), for
//! the report at unmount. The device's own report sits beside it (the caller's).

use std::collections::BTreeMap;

use flashstack_cache::{CacheMetrics, WritebackReason};
use flashstack_sim::units::{format_bytes, format_count, format_ns};
use flashstack_sim::Nanos;
use flashstack_stack::OpMetrics;
use serde::Serialize;

/// What the mount did, by layer: requests, the page cache, F2FS.
#[derive(Clone, Debug, Serialize)]
pub struct F2fsTreeMetrics {
    /// The mount's virtual clock when it began serving (after mkfs and F2FS's mount,
    /// which took device time) and at the end.
    pub started_ns: Nanos,
    pub now_ns: Nanos,
    /// Requests by kind (`write`, `fsync`, `lookup`, ...): count, bytes, latency in
    /// virtual time (completion − arrival).
    pub requests: BTreeMap<String, OpMetrics>,
    pub cache: CacheMetrics,
    pub f2fs: flashstack_f2fs::Metrics,
    /// Pages whose writeback failed (no space, device error): reported to fsync, lost.
    pub writeback_pages_lost: u64,
}

const LABEL: usize = 34;

fn line(out: &mut String, label: &str, value: String) {
    out.push_str(&format!("  {label:<LABEL$} {value}\n"));
}

impl F2fsTreeMetrics {
    /// The terminal form: a row per request kind, then the page cache's and F2FS's
    /// headline figures.
    pub fn render_table(&self) -> String {
        let mut out = format!(
            "mount (page cache + F2FS): requests from {} to {} of virtual time ({})\n\
             {:<12} {:>10} {:>12} {:>10} {:>10} {:>10}\n",
            format_ns(self.started_ns),
            format_ns(self.now_ns),
            format_ns(self.now_ns - self.started_ns),
            "request",
            "count",
            "bytes",
            "p50",
            "p99",
            "max"
        );
        for (name, op) in &self.requests {
            let l = &op.latency;
            out.push_str(&format!(
                "{:<12} {:>10} {:>12} {:>10} {:>10} {:>10}\n",
                name,
                format_count(op.count),
                if op.bytes > 0 {
                    format_bytes(op.bytes)
                } else {
                    "-".into()
                },
                format_ns(l.latency_ns_p50),
                format_ns(l.latency_ns_p99),
                format_ns(l.latency_ns_max)
            ));
        }
        let c = &self.cache;
        out.push_str("page cache\n");
        let reasons: Vec<String> = WritebackReason::ALL
            .iter()
            .filter_map(|r| {
                let pages = c.pages_written_back.get(r).copied().unwrap_or(0);
                (pages > 0).then(|| format!("{} {}", r.name(), format_count(pages)))
            })
            .collect();
        let total = format_count(c.pages_written_back_total());
        line(
            &mut out,
            "pages written back",
            match reasons.is_empty() {
                true => total,
                false => format!("{total} ({})", reasons.join(", ")),
            },
        );
        line(
            &mut out,
            "write-back calls",
            format_count(c.write_back_calls),
        );
        line(
            &mut out,
            "read hits / misses",
            format!(
                "{} / {}",
                format_count(c.read_hits),
                format_count(c.read_misses)
            ),
        );
        line(
            &mut out,
            "read-modify-write reads",
            format_count(c.read_modify_write_reads),
        );
        line(&mut out, "evictions", format_count(c.evictions));
        line(
            &mut out,
            "dirty high water",
            format_bytes(c.dirty_bytes_high_water),
        );
        if self.writeback_pages_lost > 0 {
            line(
                &mut out,
                "pages lost to writeback errors",
                format_count(self.writeback_pages_lost),
            );
        }
        let f = &self.f2fs;
        out.push_str("F2FS (4 KiB blocks)\n");
        line(&mut out, "blocks written", format_count(f.total_blocks()));
        line(
            &mut out,
            "  data / in place / node",
            format!(
                "{} / {} / {}",
                format_count(f.data_blocks),
                format_count(f.ipu_data_blocks),
                format_count(f.node_blocks)
            ),
        );
        line(
            &mut out,
            "  checkpoint / NAT / SIT / SSA",
            format!(
                "{} / {} / {} / {}",
                format_count(f.checkpoint_blocks),
                format_count(f.nat_blocks),
                format_count(f.sit_blocks),
                format_count(f.ssa_blocks)
            ),
        );
        line(
            &mut out,
            "  cleaning moved data / node",
            format!(
                "{} / {}",
                format_count(f.gc_data_blocks),
                format_count(f.gc_node_blocks)
            ),
        );
        line(&mut out, "fsyncs", format_count(f.fsyncs));
        line(
            &mut out,
            "checkpoints (threshold/periodic)",
            format!(
                "{} ({})",
                format_count(f.checkpoints),
                format_count(f.bg_checkpoints)
            ),
        );
        line(
            &mut out,
            "cleaning cycles (in background)",
            format!(
                "{} ({})",
                format_count(f.gc_cycles),
                format_count(f.bg_gc_cycles)
            ),
        );
        line(
            &mut out,
            "blocks discarded / read",
            format!(
                "{} / {}",
                format_count(f.discarded_blocks),
                format_count(f.blocks_read)
            ),
        );
        out
    }
}
