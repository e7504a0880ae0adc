//! `flashstack fs frag` and `fs defrag`: a file system's fragmentation (extents, DoF,
//! block I/Os, plane/die collisions, read time) per kind of file and per app, and the
//! defragmenters (copy baseline, janusdP, janusdL by REMAP, janusd choosing per file). On
//! an image (no device, so no physical placement and no read times; L and janusd load it
//! into a fresh FTL of `--device`, which has REMAP) or on a used phone (`--phone FILE`, as
//! `mount --phone`: its F2FS over its worn device).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use flashstack_block::BlockDevice;
use flashstack_f2fs::{F2fs, MountOptions, Verify};
use flashstack_ftl::DeviceConfig;
use flashstack_janusd::{
    defragment, measure, DefragMode, DefragOptions, DefragReport, FragReport, GroupFrag,
    JanusdPolicy, Mechanisms, ReadModel, RemapDefrag,
};
use flashstack_phone::PhoneImage;
use flashstack_stack::image_ftl::{ftl_holding, image_of};

use crate::fs::{open_for_reading, open_for_writing};

#[derive(Args)]
pub struct FragArgs {
    /// IMAGE [PATH]: an F2FS image file and a file or directory in it (default /); with
    /// --phone only [PATH].
    #[arg(value_name = "IMAGE|PATH", num_args = 0..=2)]
    targets: Vec<String>,
    /// A used phone (`flashstack phone age`) instead of an image: its F2FS over its own
    /// device, so pages' planes and dies and read times are known. Not changed.
    #[arg(long, value_name = "FILE.phone")]
    phone: Option<PathBuf>,
    /// Print the whole report (every file) as JSON.
    #[arg(long)]
    json: bool,
    /// How many of the most fragmented files to list.
    #[arg(long, default_value_t = 10)]
    top: usize,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// The conventional copying defragmenter (F2FS's defragment ioctl, e4defrag).
    Copy,
    /// janusdP: copy only files whose pages collide on one plane.
    #[value(name = "P")]
    P,
    /// janusdL: remap in the FTL (REMAP), no data copied.
    #[value(name = "L")]
    L,
    /// janusd: L or P per file.
    Janusd,
}

#[derive(Args)]
pub struct DefragArgs {
    /// IMAGE [PATH]: an F2FS image file (rewritten only if the pass succeeds) and a file
    /// or directory in it (default /); with --phone only [PATH].
    #[arg(value_name = "IMAGE|PATH", num_args = 0..=2)]
    targets: Vec<String>,
    /// The defragmenter.
    #[arg(long, value_enum)]
    mode: ModeArg,
    /// A used phone instead of an image (the file is not changed; see --output).
    #[arg(long, value_name = "FILE.phone")]
    phone: Option<PathBuf>,
    /// With --phone: save the defragmented phone to this file.
    #[arg(long, short, value_name = "FILE.phone", requires = "phone")]
    output: Option<PathBuf>,
    /// With --phone: write its F2FS image after the pass (for fsck.f2fs, dump.f2fs).
    #[arg(long, value_name = "IMAGE", requires = "phone")]
    image_out: Option<PathBuf>,
    /// A collision ratio (pages on the busiest plane ÷ the ideal) at which janusdP copies
    /// a file.
    #[arg(long, default_value_t = JanusdPolicy::default().collision_ratio_min)]
    collision_ratio_min: f64,
    /// With an IMAGE and --mode L or janusd: the device preset (or device TOML) the image is
    /// loaded into, since REMAP is the FTL's; a fresh device, so its counters show what
    /// the pass cost, not a phone's history (use --phone for that).
    #[arg(long, value_name = "PRESET|FILE.toml", default_value = "ldc-emmc")]
    device: String,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Where a command works: an image, or a phone, and the path inside.
enum Target {
    Image(PathBuf, String),
    Phone(PathBuf, String),
}

fn target(targets: &[String], phone: Option<&Path>) -> Result<Target> {
    let path = |p: Option<&String>| p.cloned().unwrap_or_else(|| "/".to_string());
    match (phone, targets) {
        (Some(f), [] | [_]) => Ok(Target::Phone(f.to_path_buf(), path(targets.first()))),
        (Some(_), _) => bail!("with --phone give only the PATH inside it, not an image"),
        (None, []) => bail!("give an F2FS image file (or --phone FILE)"),
        (None, [image, rest @ ..]) => Ok(Target::Image(image.into(), path(rest.first()))),
    }
}

pub fn frag(a: FragArgs) -> Result<()> {
    let model = ReadModel::default();
    let (report, label) = match target(&a.targets, a.phone.as_deref())? {
        Target::Image(image, path) => {
            let mut fs = open_for_reading(&image)?;
            let r = measure(&mut fs, &path, &model)
                .with_context(|| format!("{}:{path}", image.display()))?;
            (r, format!("image {}", image.display()))
        }
        Target::Phone(file, path) => {
            let image = PhoneImage::load(&file)?;
            let summary = image.header.summary();
            let config = image.header.stack.clone();
            let mut stack = image.into_stack(None, config.seed)?;
            let r = stack
                .with_fs(|fs| measure(fs, &path, &model))?
                .with_context(|| format!("{}:{path}", file.display()))?;
            (r, format!("phone {} ({summary})", file.display()))
        }
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    print!("{}", render_frag(&report, &label, a.top));
    Ok(())
}

pub fn defrag(a: DefragArgs) -> Result<()> {
    let opts = |path: String| DefragOptions {
        mode: match a.mode {
            ModeArg::Copy => DefragMode::Copy,
            ModeArg::P => DefragMode::Physical,
            ModeArg::L => DefragMode::Logical,
            ModeArg::Janusd => DefragMode::Janusd,
        },
        policy: JanusdPolicy {
            collision_ratio_min: a.collision_ratio_min,
            ..JanusdPolicy::default()
        },
        model: ReadModel::default(),
        path,
    };
    let (report, label) = match target(&a.targets, a.phone.as_deref())? {
        Target::Image(image, path) if opts(String::new()).mode.may_remap() => {
            let device = crate::device::resolve(&a.device)
                .with_context(|| format!("--device {}", a.device))?;
            let report = defrag_image_on_ftl(&image, &opts(path), device)?;
            (report, image.display().to_string())
        }
        Target::Image(image, path) => (
            defrag_image(&image, &opts(path))?,
            image.display().to_string(),
        ),
        Target::Phone(file, path) => (
            defrag_phone(
                &file,
                &opts(path),
                a.output.as_deref(),
                a.image_out.as_deref(),
            )?,
            file.display().to_string(),
        ),
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_defrag(&report, &label));
    }
    Ok(())
}

/// On an image: verified whole and mounted read-write; written back (atomically) only
/// after the pass and its checkpoint succeeded.
fn defrag_image(image: &Path, opts: &DefragOptions) -> Result<DefragReport> {
    let mut fs = open_for_writing(image)?;
    let report = defragment(&mut fs, opts, Mechanisms::default())
        .with_context(|| format!("{}: defragmenting {}", image.display(), opts.path))?;
    let dev = fs.unmount()?;
    dev.export(image)?;
    Ok(report)
}

/// L and janusd on an image: verified, loaded into a fresh FTL of `device`
/// (`flashstack_stack::image_ftl`), defragmented there with janusdL, read back and
/// written over the image only after the pass and its unmount succeeded.
fn defrag_image_on_ftl(
    image: &Path,
    opts: &DefragOptions,
    device: DeviceConfig,
) -> Result<DefragReport> {
    let mem = open_for_writing(image)?.unmount()?;
    let capacity = mem.capacity_lbas();
    let (ftl, start_ns) = ftl_holding(&mem, device, 1)
        .with_context(|| format!("loading {} into a device", image.display()))?;
    let mount = MountOptions {
        verify: Verify::Mount,
        start_ns,
        ..MountOptions::default()
    };
    let mut fs = F2fs::mount_opts(ftl, mount)
        .with_context(|| format!("mounting {} on the device", image.display()))?;
    let mut remap = RemapDefrag;
    let mech = Mechanisms {
        logical: Some(&mut remap),
    };
    let report = defragment(&mut fs, opts, mech)
        .with_context(|| format!("{}: defragmenting {}", image.display(), opts.path))?;
    let now = fs.now_ns();
    let mut ftl = fs.unmount()?;
    image_of(&mut ftl, capacity, now)?.export(image)?;
    Ok(report)
}

/// On a phone: run on its stack; saved to `output` if given (the input is never changed).
fn defrag_phone(
    file: &Path,
    opts: &DefragOptions,
    output: Option<&Path>,
    image_out: Option<&Path>,
) -> Result<DefragReport> {
    for out in [output, image_out].into_iter().flatten() {
        if out == file {
            bail!(
                "{} is the phone being read: write to another file",
                out.display()
            );
        }
    }
    let image = PhoneImage::load(file)?;
    let (spec, counts, apps) = (
        image.header.spec.clone(),
        image.header.counts.clone(),
        image.header.persona_apps.clone(),
    );
    let seed = image.header.stack.seed;
    let mut stack = image.into_stack(None, seed)?;
    let mut remap = RemapDefrag;
    let report = stack
        .with_fs(|fs| {
            let mech = Mechanisms {
                logical: Some(&mut remap),
            };
            defragment(fs, opts, mech)
        })?
        .with_context(|| format!("{}: defragmenting {}", file.display(), opts.path))?;
    if let Some(img) = image_out {
        stack
            .write_image(img)
            .with_context(|| format!("writing {}", img.display()))?;
    }
    if let Some(out) = output {
        let saved = PhoneImage::capture(stack, &spec, counts, apps)?;
        saved.save(out)?;
    }
    Ok(report)
}

fn ms(ns: Option<u64>) -> String {
    ns.map_or("-".into(), |n| format!("{:.1}", n as f64 / 1e6))
}

fn opt2(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}"))
}

fn group_line(name: &str, g: &GroupFrag) -> String {
    format!(
        "{:<28} {:>6} {:>9.1} {:>8.2} {:>7.2} {:>6.1} {:>6.0} {:>5.0}% {:>7} {:>6} {:>6} {:>6} {:>9}\n",
        name,
        g.files,
        g.blocks as f64 * 4096.0 / (1 << 20) as f64,
        g.extents_mean,
        g.dof_mean,
        g.dof_p90,
        g.dof_max,
        g.fragmented_share * 100.0,
        g.block_ios,
        g.block_ios_ideal,
        opt2(g.collision_ratio_mean),
        g.colliding_share.map_or("-".into(), |s| format!("{:.0}%", s * 100.0)),
        ms(g.read_ns),
    )
}

fn header_line(first: &str) -> String {
    format!(
        "{:<28} {:>6} {:>9} {:>8} {:>7} {:>6} {:>6} {:>6} {:>7} {:>6} {:>6} {:>6} {:>9}\n",
        first,
        "files",
        "MiB",
        "extents",
        "DoF",
        "p90",
        "max",
        "frag",
        "I/Os",
        "ideal",
        "coll",
        "coll%",
        "read ms"
    )
}

fn render_frag(r: &FragReport, label: &str, top: usize) -> String {
    let mut out = format!("{label}: {}\n", r.path);
    out += &match (r.units, r.dies) {
        (Some(u), Some(d)) => format!("device: {u} planes in {d} dies; "),
        _ => "no device (a plain image): planes, dies and read times unknown; ".into(),
    };
    out += &format!(
        "requests up to {} KiB, {:.0} µs host time each; longest free run {:.0} MiB\n",
        r.model.max_request_bytes / 1024,
        r.model.host_overhead_ns_per_request as f64 / 1e3,
        r.longest_free_run_blocks as f64 / 256.0
    );
    out += &header_line("kind of file");
    for (k, g) in &r.by_class {
        out += &group_line(k, g);
    }
    out += &group_line("all", &r.all);
    out += &header_line("app");
    for (k, g) in &r.by_app {
        out += &group_line(k, g);
    }
    let mut worst: Vec<_> = r.files.iter().collect();
    worst.sort_by(|a, b| b.dof.total_cmp(&a.dof).then(a.path.cmp(&b.path)));
    if top > 0 && !worst.is_empty() {
        out += "most fragmented files (DoF, extents, I/Os, collision ratio, read ms):\n";
        for f in worst.into_iter().take(top) {
            out += &format!(
                "  {:>7.1} {:>6} {:>6} {:>6} {:>8}  {}\n",
                f.dof,
                f.extents,
                f.block_ios,
                opt2(f.physical.as_ref().map(|p| p.collision_ratio)),
                ms(f.read_ns),
                f.path
            );
        }
    }
    out
}

fn render_defrag(r: &DefragReport, label: &str) -> String {
    let c = &r.cost;
    let opt = |v: Option<u64>| v.map_or("- (no device)".into(), |n| n.to_string());
    let mut out = format!(
        "{label}: defragmented {} with --mode {}: {} files considered, {} copied, {} remapped\n",
        r.path,
        r.mode.name(),
        r.files_considered,
        r.files_copied,
        r.files_remapped
    );
    out += &format!(
        "data copied: {} read, {} written; {} blocks remapped; F2FS wrote {} blocks in all\n",
        flashstack_sim::units::format_bytes(c.bytes_read),
        flashstack_sim::units::format_bytes(c.bytes_written),
        c.blocks_remapped,
        c.fs_blocks_written
    );
    out += &format!(
        "NAND: {} pages programmed, {} blocks erased\n",
        opt(c.nand_page_programs),
        opt(c.nand_erases)
    );
    out += &header_line("");
    out += &group_line("before", &r.before);
    out += &group_line("after", &r.after);
    out
}
