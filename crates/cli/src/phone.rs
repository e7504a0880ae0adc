//! `flashstack phone`: make a used phone (`age`), describe one (`info`); and the phones
//! whole-stack runs and mounts start from (`--phone FILE`, `--fresh`, else the built-in
//! aged phone of the stack, built on first use into the cache directory).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use clap::{Args, Subcommand};
use flashstack_phone::{
    default_cache_dir, default_cache_max_bytes, AgingSpec, Fidelity, PhoneCache, PhoneImage,
    Provenance,
};
use flashstack_stack::StackConfig;

use crate::stackrun::resolve_stack;

#[derive(Subcommand)]
pub enum PhoneCommand {
    /// Make a used phone: months of app installs, updates, caches, media and the
    /// personas' own tasks on a whole stack, until it is --fill full after --days days;
    /// saved in one file (`run --phone FILE`, `mount --phone FILE`).
    Age(AgeArgs),
    /// What a phone file holds: how it was made, its fill, free space, fragmentation per
    /// kind of file, and its device's wear.
    Info(InfoArgs),
}

#[derive(Args)]
pub struct AgeArgs {
    /// The stack: a preset (default, ldc-emmc, ufs31), a stack TOML file, or either with
    /// +key=value overrides.
    #[arg(long, value_name = "PRESET|FILE.toml", default_value = "default")]
    stack: String,
    /// Target utilisation of the file system at the end (valid blocks ÷ user blocks).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.8)]
    fill: f64,
    /// Days of use.
    #[arg(long, default_value_t = 90)]
    days: u32,
    /// The seed of the aging timeline: the same stack, fill, days and seed give a
    /// byte-identical phone.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run every app session as its persona's real task (SQLite and all) instead of its
    /// page-level footprint: slower; the fast path is checked against it in the tests.
    #[arg(long)]
    realistic: bool,
    /// The phone file to write.
    #[arg(long, short, value_name = "FILE")]
    output: PathBuf,
    /// No progress lines.
    #[arg(long, short)]
    quiet: bool,
    /// Check every read of the apps' sessions against what they wrote or read before,
    /// and stop at the first wrong byte naming the file, offset and byte. The phone is
    /// the same as without it (the checker makes no I/O of its own).
    #[arg(long)]
    check_reads: bool,
}

#[derive(Args)]
pub struct InfoArgs {
    /// The phone file (`flashstack phone age -o FILE`).
    file: PathBuf,
    /// Print the whole header as JSON.
    #[arg(long)]
    json: bool,
}

pub fn phone(command: PhoneCommand) -> Result<()> {
    match command {
        PhoneCommand::Age(args) => age(args),
        PhoneCommand::Info(args) => info(args),
    }
}

fn age(args: AgeArgs) -> Result<()> {
    let config = resolve_stack(&args.stack, &StackConfig::preset("default")?)
        .with_context(|| format!("--stack {}", args.stack))?;
    let fidelity = if args.realistic {
        Fidelity::Realistic
    } else {
        Fidelity::Fast
    };
    let spec = AgingSpec::new(args.fill, args.days, args.seed, fidelity);
    spec.validate().map_err(|e| anyhow!("--{e}"))?;
    let started = Instant::now();
    let quiet = args.quiet;
    let mut progress = |day: u32, days: u32| {
        if !quiet && (day.is_multiple_of(10) || day == days) {
            eprintln!(
                "aging: day {day}/{days} ({:.0} s)",
                started.elapsed().as_secs_f64()
            );
        }
    };
    let image = if args.check_reads {
        let (image, reads) = flashstack_phone::build_checked(&config, &spec, &mut progress)?;
        if !quiet {
            eprintln!("aging: {reads} reads of the apps' sessions checked, all as written");
        }
        image
    } else {
        flashstack_phone::build(&config, &spec, &mut progress)?
    };
    let aged_s = started.elapsed().as_secs_f64();
    let saved = Instant::now();
    let bytes = image.save(&args.output)?;
    println!("{}", image.header.summary());
    println!(
        "aged in {aged_s:.1} s; {} written in {:.1} s ({})",
        args.output.display(),
        saved.elapsed().as_secs_f64(),
        flashstack_sim::units::format_bytes(bytes)
    );
    Ok(())
}

fn info(args: InfoArgs) -> Result<()> {
    let image = PhoneImage::load(&args.file)?;
    let h = &image.header;
    if args.json {
        println!("{}", serde_json::to_string_pretty(h)?);
        return Ok(());
    }
    println!("{}", h.summary());
    println!(
        "stack '{}' (device '{}'), seed {}, {:?} path, {} days to {:.0}% fill",
        h.stack.name,
        h.stack.device.name,
        h.spec.seed,
        h.spec.fidelity,
        h.spec.days,
        h.spec.fill * 100.0
    );
    println!(
        "personas' apps installed and used: {}",
        h.persona_apps.join(", ")
    );
    let c = &h.counts;
    println!(
        "while aging: {} app sessions ({} of the personas), {} installs, {} updates, {} \
         uninstalls, {} photos, {} videos, {} media deleted, {} downloads, {} cache files \
         trimmed, {} written through the file API",
        c.app_sessions,
        c.persona_sessions,
        c.app_installs,
        c.app_updates,
        c.app_uninstalls,
        c.photos,
        c.videos,
        c.media_deleted,
        c.downloads,
        c.cache_files_trimmed,
        flashstack_sim::units::format_bytes(c.file_bytes_written)
    );
    println!(
        "{:<16} {:>7} {:>10} {:>8} {:>6} {:>6} {:>7} {:>11}",
        "files", "count", "MiB", "extents", "DoF", "p90", "max", "fragmented"
    );
    for (class, f) in &h.fs.classes {
        println!(
            "{:<16} {:>7} {:>10.1} {:>8.2} {:>6.2} {:>6.1} {:>7.0} {:>10.0}%",
            class,
            f.files,
            f.blocks as f64 * 4096.0 / (1 << 20) as f64,
            f.extents_mean,
            f.dof_mean,
            f.dof_p90,
            f.dof_max,
            f.fragmented_share * 100.0
        );
    }
    let d = &h.device;
    println!(
        "device: {:.1}% of LBAs mapped, turnover {:.2}, WA {:.3}, erases min/mean/max {}/{:.2}/{}, \
         {} free blocks",
        d.mapped_share * 100.0,
        d.turnover,
        d.write_amplification,
        d.erase_count_min,
        d.erase_count_mean,
        d.erase_count_max,
        d.blocks_free
    );
    println!(
        "blocks by valid share (0-10% ... 100%): {:?}",
        d.valid_share_histogram
    );
    Ok(())
}

/// Where a whole-stack run starts (`flashstack_sweep::point`, shared with `sweep`).
pub use flashstack_sweep::point::StartChoice;

/// A hash of this program's executable: phones a changed program builds never mix with
/// those of an older one in the cache.
fn build_id() -> String {
    std::env::current_exe()
        .map(|path| flashstack_sweep::point::build_id_of(&path))
        .unwrap_or_default()
}

/// The built-in aged phone of `config`, from the cache or built now (saying so).
pub fn builtin_phone(config: &StackConfig, quiet: bool) -> Result<PhoneImage> {
    aged_phone(config, &flashstack_phone::builtin_spec(), quiet)
}

/// The phone `spec` ages on `config`, from the phone cache or built now and kept there
/// (saying so): the built-in phone's path for any aging specification.
pub fn aged_phone(config: &StackConfig, spec: &AgingSpec, quiet: bool) -> Result<PhoneImage> {
    let cache = PhoneCache {
        dir: default_cache_dir(),
        build_id: build_id(),
        max_bytes: default_cache_max_bytes(),
    };
    let started = Instant::now();
    let name = config.name.clone();
    let (fill_pct, days) = (spec.fill * 100.0, spec.days);
    let (image, provenance) = flashstack_sweep::point::aged_phone(
        config,
        spec,
        &cache,
        &mut |path| {
            if !quiet {
                eprintln!(
                    "{name}: building the aged phone ({fill_pct:.0}% full, {days} days of use; \
                     first use of this stack, kept in {})",
                    path.display()
                );
            }
        },
        &mut |day, days| {
            if !quiet && (day % 30 == 0 || days < 30) {
                eprintln!(
                    "{name}: aging day {day}/{days} ({:.0} s)",
                    started.elapsed().as_secs_f64()
                );
            }
        },
    )?;
    if let (false, Provenance::Built { saved: None }) = (quiet, &provenance) {
        eprintln!("{name}: the aged phone could not be kept (no writable cache directory)");
    }
    Ok(image)
}
