//! A cold start is a cold app: the process restarts between the setup and the task, so
//! the task opens the app's databases again with SQLite's page cache empty, and its reads
//! reach flash (`FullStackOptions::cold_start`, `RunOptions::restart_app`).

use flashstack_experiments::fullstack::{self, FullStackOptions, StackWorkload};
use flashstack_stack::StackConfig;

/// (file opens in the task, file reads in the task, page-cache misses, task time in ns).
fn launch(cold_start: bool) -> (u64, u64, u64, u64) {
    let mut config = StackConfig::preset("default").unwrap();
    config.device.nand.geometry.blocks_per_plane = 4096;
    let persona = flashstack_apps::persona("spotify:launch").unwrap();
    let options = FullStackOptions {
        seed: 1,
        record: false,
        cold_start,
        ..FullStackOptions::default()
    };
    let out = fullstack::run(&config, &StackWorkload::Persona(persona.as_ref()), &options).unwrap();
    let calls = |kind: &str| out.run.file_ops.get(kind).map_or(0, |m| m.count);
    let persona = out.run.persona.as_ref().expect("a persona report");
    (
        calls("open"),
        calls("read"),
        out.run.cache.read_misses,
        persona.task_ns,
    )
}

#[test]
fn a_cold_launch_reopens_the_apps_databases_and_reads_them_from_flash() {
    let (warm_opens, warm_reads, warm_misses, warm_ns) = launch(false);
    let (cold_opens, cold_reads, cold_misses, cold_ns) = launch(true);
    // The warm task finds its databases open from the setup; the cold one opens them
    // again (the main database and its attached ones), as the launched process does,
    // and reads their schema and pages.
    assert!(
        cold_opens > warm_opens,
        "opens: cold {cold_opens}, warm {warm_opens}"
    );
    assert!(
        cold_reads > warm_reads,
        "reads: cold {cold_reads}, warm {warm_reads}"
    );
    assert_eq!(warm_misses, 0);
    // Dropping the page cache alone gave 92 misses on this launch.
    assert!(cold_misses > 92, "{cold_misses} misses");
    assert!(cold_ns > warm_ns, "cold {cold_ns} ns, warm {warm_ns} ns");
}
