//! Each MedFS-table task, run on MemFs with the recorder and analysed by
//! `flashstack_workload::analyze`, matches its row within ±20% (relative) on Vol, Small,
//! UR and UD.

use flashstack_apps::medfs::tasks;
use flashstack_apps::run;
use flashstack_sqlvfs::{MemFs, MemFsConfig};

/// The seed the mixes were calibrated with.
const SEED: u64 = 1;
/// Largest relative deviation allowed on each column.
const TOLERANCE: f64 = 0.20;

#[test]
fn every_medfs_row_is_matched_within_20_percent() {
    let mut table = String::from(
        "task                        Vol MB (paper/ours)   Small %         UR %            UD %\n",
    );
    let mut failures = Vec::new();
    for task in tasks() {
        let persona = task.persona();
        let fs = MemFs::new(SEED, MemFsConfig::default());
        let report = run(&persona, Box::new(fs), SEED)
            .unwrap_or_else(|e| panic!("{} failed: {e}", task.key));
        let t = report.trace.expect("the task is recorded");
        let ours = [
            t.write_bytes as f64 / 1e6,
            t.small_write_share.unwrap_or(0.0),
            t.update_ratio.unwrap_or(0.0),
            t.update_difference.unwrap_or(0.0),
        ];
        let paper = [task.row.vol_mb, task.row.small, task.row.ur, task.row.ud];
        table.push_str(&format!(
            "{:26} {:7.1} / {:7.2}   {:5.1} / {:5.1}   {:5.1} / {:5.1}   {:5.1} / {:5.2}\n",
            task.key,
            paper[0],
            ours[0],
            paper[1] * 100.0,
            ours[1] * 100.0,
            paper[2] * 100.0,
            ours[2] * 100.0,
            paper[3] * 100.0,
            ours[3] * 100.0
        ));
        for (i, column) in ["Vol", "Small", "UR", "UD"].iter().enumerate() {
            let deviation = (ours[i] - paper[i]).abs() / paper[i];
            if deviation > TOLERANCE {
                failures.push(format!(
                    "{} {column}: paper {:.4}, ours {:.4} ({:+.0}%)",
                    task.key,
                    paper[i],
                    ours[i],
                    (ours[i] / paper[i] - 1.0) * 100.0
                ));
            }
        }
    }
    println!("{table}");
    assert!(
        failures.is_empty(),
        "{} columns outside ±20%:\n{}\n{table}",
        failures.len(),
        failures.join("\n")
    );
}
