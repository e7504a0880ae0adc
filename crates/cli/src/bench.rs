//! `flashstack bench`: replay speed and memory, measured in wall-clock time (the only place
//! the project reads the wall clock; simulated figures never depend on it).

use std::time::Instant;

use anyhow::{anyhow, Result};
use clap::Args;
use flashstack_content::ContentConfig;
use flashstack_replay::{NoProgress, OutOfRange, Precondition, Progress, Replayer, RunConfig};
use flashstack_report::ReportOptions;
use flashstack_sim::units::format_bytes;
use flashstack_trace::{synthetic, Interarrival, Pattern, SizeDistribution, SyntheticSpec};

use crate::device;
use crate::progress::Bar;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Device preset, TOML file, or either with +key=value overrides.
    #[arg(long, value_name = "PRESET|FILE.toml", default_value = "ldc-emmc")]
    device: String,
    /// Random 4 KiB writes to replay after preconditioning.
    #[arg(long, default_value_t = 1_000_000)]
    requests: u64,
    /// Fraction of the user capacity holding data (the writes' footprint).
    #[arg(long, default_value_t = 0.9)]
    utilization: f64,
    /// Store page contents (bytes from the content model).
    #[arg(long)]
    contents: bool,
    /// Memory check instead: write this many bytes with contents stored on an empty device
    /// and compare peak memory with 1.1 × stored bytes + 16 B per flash page.
    #[arg(long, value_name = "SIZE")]
    memory: Option<String>,
    /// Persona speed instead: every catalogue persona on the in-memory file system (the
    /// apps and SQLite alone) and on the default whole stack; simulated user operations
    /// per second and app-hours per wall-clock minute and per CPU-minute of the process.
    #[arg(long)]
    personas: bool,
    /// Seed of the random writes and the content (speed does not depend on it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn config(
    args: &BenchArgs,
    contents: bool,
    precondition: Option<Precondition>,
) -> Result<RunConfig> {
    let device = device::resolve(&args.device)?;
    if let (true, Some(p)) = (contents, &precondition) {
        crate::run::check_memory_for_contents(&device, p.utilization)?;
    }
    Ok(RunConfig {
        device,
        seed: args.seed,
        store_contents: contents,
        content: ContentConfig::default(),
        precondition,
        out_of_range: OutOfRange::Error,
        verify_reads: false,
        report: ReportOptions::default(),
        workload_name: "bench".into(),
    })
}

fn random_writes(count: u64, footprint_bytes: u64) -> SyntheticSpec {
    SyntheticSpec {
        pattern: Pattern::Uniform,
        count,
        read_fraction: 0.0,
        trim_fraction: 0.0,
        flush_every: None,
        sizes: SizeDistribution::fixed(4096),
        interarrival: Interarrival::Back2Back,
        footprint_bytes: Some(footprint_bytes / 4096 * 4096),
        align_bytes: 4096,
    }
}

pub fn bench(args: BenchArgs) -> Result<()> {
    if let Some(size) = &args.memory {
        return memory(&args, flashstack_sim::units::parse_size(size)?);
    }
    if args.personas {
        return personas(args.seed);
    }
    let precondition = Precondition {
        utilization: args.utilization,
        aging_factor_max: 2.0,
        ..Precondition::default()
    };
    let mut replayer = Replayer::new(config(&args, args.contents, Some(precondition))?)?;
    let mut bar = Bar::new(false);
    let started = Instant::now();
    replayer.prepare(&mut bar)?;
    bar.finish();
    let precondition_s = started.elapsed().as_secs_f64();
    let footprint = (replayer.capacity_bytes() as f64 * args.utilization) as u64;
    let spec = random_writes(args.requests, footprint);
    let source =
        synthetic(&spec, replayer.capacity_bytes(), args.seed).map_err(|e| anyhow!("{e}"))?;
    let requests: Vec<_> = source.collect();
    // The timed replay reports nothing while it runs (no progress calls in the measured
    // loop), only its line when done.
    bar.phase("timed replay", None);
    let started = Instant::now();
    replayer.replay(requests.into_iter(), None, &mut NoProgress)?;
    let replay_s = started.elapsed().as_secs_f64();
    bar.finish();
    let report = replayer.report();
    println!("device                {}", args.device);
    println!("contents stored       {}", args.contents);
    println!(
        "precondition          {} in {precondition_s:.2} s",
        replayer
            .precondition
            .as_ref()
            .map_or(String::new(), |p| p.to_string())
    );
    println!(
        "requests              {} random 4 KiB writes over {:.0}% of {}",
        args.requests,
        args.utilization * 100.0,
        format_bytes(replayer.capacity_bytes())
    );
    println!(
        "write amplification   {:.3}",
        report.write_amplification.total
    );
    println!(
        "NAND programs/erases  {} / {}",
        report.nand.page_programs, report.nand.block_erases
    );
    println!("wall time (replay)    {replay_s:.3} s");
    println!(
        "requests per second   {:.0}",
        args.requests as f64 / replay_s
    );
    println!(
        "page programs/second  {:.0}",
        report.nand.page_programs as f64 / replay_s
    );
    println!(
        "host MB/s simulated   {:.1}",
        report.host.write_bytes as f64 / 1e6 / replay_s
    );
    if args.contents {
        device_path_with_contents(&mut replayer, args.requests, footprint, args.seed)?;
    }
    if let Some(rss) = peak_rss_bytes() {
        println!("peak memory           {}", format_bytes(rss));
    }
    Ok(())
}

/// The device alone with contents stored: the same kind of random writes, with payloads
/// taken from a pool of pages generated beforehand, so the figure excludes the content
/// model's generation cost.
fn device_path_with_contents(
    replayer: &mut Replayer,
    requests: u64,
    footprint_bytes: u64,
    seed: u64,
) -> Result<()> {
    use flashstack_block::{BlockDevice, Hints, Payload};
    let model = flashstack_content::ContentModel::new(seed, Default::default());
    let pool: Vec<Vec<u8>> = (0..1024u64)
        .map(|i| {
            let mut page = vec![0u8; 4096];
            model.fill(i * 977, 1 + (i % 7) as u32, &mut page);
            page
        })
        .collect();
    let mut rng = flashstack_sim::Rng::new(seed ^ 0xBE7C);
    let lbas = footprint_bytes / 4096;
    let targets: Vec<u64> = (0..requests).map(|_| rng.below(lbas)).collect();
    let ftl = &mut replayer.ftl;
    let programs_before = ftl.nand().counters().page_programs;
    let started = Instant::now();
    for (i, &lba) in targets.iter().enumerate() {
        let now = ftl.busy_until_ns();
        let payload = Payload::Bytes(&pool[i % pool.len()]);
        ftl.write(now, lba, payload, Hints::default())?;
    }
    let wall_s = started.elapsed().as_secs_f64();
    let programs = ftl.nand().counters().page_programs - programs_before;
    println!("device path, contents stored, payloads pre-generated:");
    println!(
        "  writes per second   {:.0} ({requests} writes, WA {:.3}, {wall_s:.3} s)",
        requests as f64 / wall_s,
        programs as f64 / requests as f64
    );
    Ok(())
}

fn memory(args: &BenchArgs, bytes: u64) -> Result<()> {
    let mut replayer = Replayer::new(config(args, true, None)?)?;
    replayer.prepare(&mut NoProgress)?;
    let mut bar = Bar::new(false);
    let spec = SyntheticSpec {
        pattern: Pattern::Sequential,
        sizes: SizeDistribution::fixed(128 * 1024),
        ..random_writes(bytes / (128 * 1024), bytes)
    };
    let source =
        synthetic(&spec, replayer.capacity_bytes(), args.seed).map_err(|e| anyhow!("{e}"))?;
    bar.phase("timed writes", None);
    let started = Instant::now();
    replayer.replay(source, None, &mut NoProgress)?;
    let wall_s = started.elapsed().as_secs_f64();
    bar.finish();
    let stored = replayer.ftl.nand().stored_slots() * 4096;
    let pages = replayer.ftl.config().nand.geometry.pages();
    let bound = stored as f64 * 1.1 + 16.0 * pages as f64;
    let rss = peak_rss_bytes().ok_or_else(|| anyhow!("cannot read /proc/self/status"))?;
    println!(
        "device                {} ({} flash pages)",
        args.device, pages
    );
    println!("bytes stored          {}", format_bytes(stored));
    println!(
        "write rate            {:.0} MB/s with contents ({wall_s:.2} s)",
        stored as f64 / 1e6 / wall_s
    );
    println!("peak memory           {}", format_bytes(rss));
    println!(
        "bound                 {} (1.1 × stored + 16 B/page)",
        format_bytes(bound as u64)
    );
    println!("within bound          {}", (rss as f64) <= bound);
    Ok(())
}

/// Simulated user operations per second and simulated app-hours (setup and task) per
/// wall-clock minute, over every persona of the catalogue.
fn personas(seed: u64) -> Result<()> {
    use flashstack_experiments::fullstack::{self, FullStackOptions, StackWorkload};
    let names: Vec<String> = flashstack_apps::catalog()
        .into_iter()
        .map(|e| e.name)
        .collect();
    let mut bar = Bar::new(false);
    for target in ["memfs", "stack"] {
        let (mut ops, mut simulated_ns) = (0u64, 0u64);
        // One progress call per persona: nothing that weighs on the timing.
        bar.phase(&format!("personas on {target}"), Some(names.len() as u64));
        let started = Instant::now();
        let cpu_started_s = process_cpu_s();
        for (done, name) in names.iter().enumerate() {
            bar.advance(done as u64);
            let persona = flashstack_apps::persona(name)?;
            let report = if target == "memfs" {
                let fs = flashstack_sqlvfs::MemFs::new(seed, Default::default());
                flashstack_apps::run(persona.as_ref(), Box::new(fs), seed)?
            } else {
                let config = flashstack_stack::StackConfig::preset("default")?;
                let options = FullStackOptions {
                    seed,
                    record: false,
                    ..FullStackOptions::default()
                };
                let workload = StackWorkload::Persona(persona.as_ref());
                let out = fullstack::run(&config, &workload, &options)?;
                out.run
                    .persona
                    .ok_or_else(|| anyhow!("{name}: no persona report"))?
            };
            ops += report.user_ops;
            simulated_ns += report.setup_ns + report.task_ns;
        }
        let wall_s = started.elapsed().as_secs_f64();
        let cpu_s = process_cpu_s() - cpu_started_s;
        bar.finish();
        let app_hours = simulated_ns as f64 / 3.6e12;
        println!(
            "{target:>5}: {} personas, {ops} user operations, {app_hours:.2} simulated app-hours \
             in {wall_s:.1} s: {:.0} user ops/s, {:.2} app-hours per wall-clock minute \
             ({:.2} per CPU-minute, {cpu_s:.2} s of CPU)",
            names.len(),
            ops as f64 / wall_s,
            app_hours / (wall_s / 60.0),
            app_hours / (cpu_s / 60.0)
        );
    }
    Ok(())
}

/// CPU time (user and system) the process has used so far, in seconds: on a machine
/// shared with other work the wall-clock rate trails it.
fn process_cpu_s() -> f64 {
    #[cfg(unix)]
    {
        // SAFETY: getrusage writes one `rusage` into the zeroed struct it is given.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut usage);
            usage
        };
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
    #[cfg(not(unix))]
    {
        0.0
    }
}
