//! `flashstack mount`: the emulated stack as a FUSE file system. The default mode mounts
//! the whole stack of a `StackConfig` (page cache over the project's F2FS, in its real
//! on-disk format, over the emulated FTL and NAND); block-file mode (`--block`) exposes the
//! device as `MOUNTPOINT/disk.img` for a kernel file system on a loop device.

use std::fs::File;
use std::io::{BufWriter, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use flashstack_block::BlockDevice;
use flashstack_block::LBA_SIZE;
use flashstack_f2fs::{mkfs, F2fs, InodeClock, MkfsOptions, MountOptions, Timestamp, Verify};
use flashstack_ftl::Ftl;
use flashstack_fuse::{
    data_ranges, BlockFile, DiskTree, F2fsTree, F2fsTreeMetrics, ImageBacked, InodeFs, Recording,
    RequestClock, TreeFs, DISK_FILE_NAME,
};
use flashstack_report::{render_json, render_table, ReportOptions, RunInfo, RunReport};
use flashstack_stack::StackConfig;

use crate::device;
use crate::stackrun::resolve_stack;

#[derive(Args, Debug)]
pub struct MountArgs {
    /// An empty directory to mount on.
    mountpoint: PathBuf,
    /// Block-file mode: expose the device as MOUNTPOINT/disk.img (for losetup + mkfs)
    /// instead of mounting F2FS.
    #[arg(long)]
    block: bool,
    /// The stack to mount (F2FS mode): a preset (default, ldc-emmc, ufs31) or a stack TOML
    /// file, giving the device, F2FS's format and mount options and the page cache (a
    /// device specification is put under the default stack). Default: default.
    #[arg(long, value_name = "PRESET|FILE.toml", conflicts_with = "block")]
    stack: Option<String>,
    /// Device preset, TOML file, or either with +key=value overrides. In F2FS mode it
    /// replaces the stack's device; block-file mode's default is ldc-emmc.
    #[arg(long, value_name = "PRESET|FILE.toml")]
    device: Option<String>,
    /// Logical device image (sparse): loaded at mount if it exists (else made: a fresh
    /// F2FS in F2FS mode, an empty disk in block-file mode). Kept current at every device
    /// flush (fsync, sync, unmount), so it survives the daemon being killed. A short or
    /// oversized image is refused and left as it was.
    #[arg(long, value_name = "FILE")]
    image: Option<PathBuf>,
    /// Write the run's metrics as JSON at unmount.
    #[arg(long, value_name = "FILE")]
    metrics: Option<PathBuf>,
    /// Record everything the mounted programs do as a file-level trace (format:
    /// docs/file-traces.md; writes carry their bytes), replayable on any stack.
    #[arg(long, value_name = "TRACE", conflicts_with = "block")]
    record: Option<PathBuf>,
    /// Seed of the device's randomness (default: the stack's seed; 1 in block-file mode).
    #[arg(long)]
    seed: Option<u64>,
    /// Mount a used phone (`flashstack phone age`): its F2FS over its worn device, on the
    /// stack (its device must be the phone's). The file itself is not changed.
    #[arg(long, value_name = "FILE.phone", conflicts_with_all = ["block", "image"])]
    phone: Option<PathBuf>,
    /// Let users other than the one mounting use the mount (FUSE's allow_other; a
    /// non-root user needs `user_allow_other` in /etc/fuse.conf). The kernel checks their
    /// access against the stored modes and owners.
    #[arg(long)]
    allow_other: bool,
    /// At unmount, fold every MedFS delta (`fs.mount.delta`) into its base block, so the
    /// image left behind is stock F2FS that fsck.f2fs and dump.f2fs read (as
    /// `flashstack fs restore-deltas IMAGE` does afterwards). Its writes are in the report.
    #[arg(long, conflicts_with = "block")]
    restore_deltas: bool,
}

/// Block-file mode's device when --device is not given.
const BLOCK_DEVICE_DEFAULT: &str = "ldc-emmc";

pub fn mount(args: MountArgs) -> Result<()> {
    check_mountpoint(&args.mountpoint)?;
    if !args.block {
        let stack = stack_config(&args)?;
        check_fuse_device()?;
        return mount_f2fs(&args, stack);
    }
    check_fuse_device()?;
    let spec = args.device.as_deref().unwrap_or(BLOCK_DEVICE_DEFAULT);
    let config = device::resolve(spec)?;
    let seed = args.seed.unwrap_or(1);
    let ftl = Ftl::new(config.clone(), true, seed).with_context(|| format!("device '{spec}'"))?;
    let mut file = BlockFile::new(ftl);
    let ftl = match &args.image {
        None => serve_block(file, &args, &config.name)?,
        Some(path) => {
            let image = open_block_image(&mut file, path)?;
            let backed = BlockFile::new(ImageBacked::new(file.into_inner(), image));
            serve_block(backed, &args, &config.name)?.into_inner()
        }
    };
    let report = report(&ftl, &config, seed, "FUSE block file");
    print!("{}", render_table(std::slice::from_ref(&report)));
    if let Some(path) = &args.metrics {
        std::fs::write(path, render_json(std::slice::from_ref(&report)))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Serves the device as `MOUNTPOINT/disk.img` until unmounted; prints the file's counters
/// and returns the device. Every flush the kernel sends (fsync, close) reaches the device.
fn serve_block<D: BlockDevice + Send + 'static>(
    file: BlockFile<D>,
    args: &MountArgs,
    name: &str,
) -> Result<D> {
    let size_bytes = file.size_bytes();
    let tree = Arc::new(Mutex::new(DiskTree::new(file, current_ids())));
    let stop = stop_on_signals()?;
    let session = start(args, TreeFs::new(Arc::clone(&tree)))?;
    let disk = args.mountpoint.join(DISK_FILE_NAME);
    eprintln!(
        "{name}: {} ready ({size_bytes} bytes). Unmount with `umount {}` or Ctrl-C.",
        disk.display(),
        args.mountpoint.display()
    );
    wait_for_unmount(session, &args.mountpoint, &stop)?;
    let tree = Arc::try_unwrap(tree)
        .map_err(|_| anyhow::anyhow!("the file system is still in use after unmount"))?
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let mut file = tree.into_file();
    file.sync().context("the last flush at unmount")?;
    let c = file.counters();
    println!(
        "block file: {} reads ({} bytes), {} writes ({} bytes, {} partial-block merges), {} \
         syncs, {} discards ({} bytes)",
        c.reads,
        c.read_bytes,
        c.writes,
        c.write_bytes,
        c.partial_block_merges,
        c.syncs,
        c.discards,
        c.discard_bytes
    );
    Ok(file.into_inner())
}

/// Block-file mode's image: an existing one (exactly the device's size) is loaded into the
/// device; a new one is made, sparse, of the device's size. Returns the file to mirror into.
fn open_block_image(file: &mut BlockFile<Ftl>, path: &Path) -> Result<File> {
    if path.exists() {
        check_image_size(path, file.size_bytes(), ImageKind::Disk)?;
        let blocks = load_image(file, path)?;
        eprintln!("{}: loaded {blocks} blocks", path.display());
        return open_existing(path);
    }
    create_sparse(path, file.size_bytes())
}

/// The stack `--stack` names (default: the `default` preset), its device replaced by
/// `--device` if given.
fn stack_config(args: &MountArgs) -> Result<StackConfig> {
    let spec = args.stack.as_deref().unwrap_or("default");
    let mut config = resolve_stack(spec, &StackConfig::preset("default")?)
        .with_context(|| format!("--stack {spec}"))?;
    if let Some(device) = &args.device {
        config.device = device::resolve(device)?;
        config.name = format!("{} with {device}", config.name);
    }
    if let Some(seed) = args.seed {
        config.seed = seed;
    }
    Ok(config)
}

/// The whole stack on the emulated device: F2FS made fresh (or loaded from `--image`) and
/// mounted under a page cache, all configured by the stack; at unmount every dirty page is
/// written back, F2FS checkpoints, and the device, cache and F2FS figures are reported.
/// With `--image` the device's durable state is mirrored into the image at every flush, so
/// the image survives the daemon being killed (the next mount recovers fsync'd files by
/// roll-forward; what was only in the page cache is lost, as at a power cut).
fn mount_f2fs(args: &MountArgs, stack: StackConfig) -> Result<()> {
    let (ftl, metrics, stack, label) = match &args.phone {
        Some(path) => mount_phone(args, stack, path)?,
        None => {
            let (ftl, metrics) = mount_new_or_image(args, &stack)?;
            (ftl, metrics, stack, "FUSE F2FS mount")
        }
    };
    let report = report(&ftl, &stack.device, stack.seed, label);
    print!("{}", render_table(std::slice::from_ref(&report)));
    print!("{}", metrics.render_table());
    if let Some(path) = &args.metrics {
        std::fs::write(path, mount_json(&report, &stack, &metrics)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// A new F2FS on an empty device, or the one in `--image`, served until unmounted.
fn mount_new_or_image(args: &MountArgs, stack: &StackConfig) -> Result<(Ftl, F2fsTreeMetrics)> {
    let ftl = Ftl::new(stack.device.clone(), true, stack.seed)
        .with_context(|| format!("device '{}'", stack.device.name))?;
    let format = MkfsOptions {
        overprovision: stack.fs.overprovision_percent,
        ..MkfsOptions::default()
    };
    match &args.image {
        Some(path) => {
            let backed = image_backed(ftl, path, &format)?;
            // An image from outside is verified whole before anything is written to it.
            let (backed, metrics) = serve_f2fs(backed, stack, args, Verify::Full, |d| {
                d.resume()
                    .with_context(|| format!("image {}: cannot write it", path.display()))
            })?;
            Ok((backed.into_inner(), metrics))
        }
        None => {
            let mut ftl = ftl;
            mkfs(&mut ftl, &format).context("mkfs")?;
            serve_f2fs(ftl, stack, args, Verify::Mount, |_| Ok(()))
        }
    }
}

/// `--phone`: the phone's device rebuilt from the file (a `--stack` given must have the
/// same device; by default the stack the phone was made on), F2FS mounted from the time
/// the phone was shut down. Returns the device, the mount's metrics and the stack used.
fn mount_phone(
    args: &MountArgs,
    stack: StackConfig,
    path: &Path,
) -> Result<(Ftl, F2fsTreeMetrics, StackConfig, &'static str)> {
    let image = flashstack_phone::PhoneImage::load(path)?;
    let stack = if args.stack.is_none() && args.device.is_none() {
        let mut own = image.header.stack.clone();
        own.seed = args.seed.unwrap_or(own.seed);
        own
    } else {
        stack
    };
    eprintln!("{}: {}", path.display(), image.header.summary());
    let (ftl, start_ns) = image.into_device(&stack, stack.seed)?;
    let (ftl, metrics) = serve_f2fs_at(ftl, &stack, args, start_ns, Verify::Mount, |_| Ok(()))?;
    Ok((ftl, metrics, stack, "FUSE F2FS mount of a used phone"))
}

/// The `--metrics` JSON of an F2FS mount: the device report's fields, then `stack` (its
/// name), the virtual clock when requests began and at the end, `requests`, `cache`,
/// `f2fs` and the pages lost to writeback errors.
fn mount_json(report: &RunReport, stack: &StackConfig, m: &F2fsTreeMetrics) -> Result<String> {
    let mut json = serde_json::to_value(report)?;
    let object = json
        .as_object_mut()
        .context("the device report is a JSON object")?;
    object.insert("stack".into(), stack.name.clone().into());
    object.insert("virtual_start_ns".into(), m.started_ns.into());
    object.insert("virtual_end_ns".into(), m.now_ns.into());
    object.insert("requests".into(), serde_json::to_value(&m.requests)?);
    object.insert("cache".into(), serde_json::to_value(&m.cache)?);
    object.insert("f2fs".into(), serde_json::to_value(&m.f2fs)?);
    object.insert("writeback_pages_lost".into(), m.writeback_pages_lost.into());
    let mut text = serde_json::to_string_pretty(&json)?;
    text.push('\n');
    Ok(text)
}

/// The device mirrored into `path`. An existing image is checked and loaded first, and
/// mirroring is paused until F2FS has mounted it (so a refused image is never written); a
/// new one is made, sparse, by mkfs through the mirror.
fn image_backed(ftl: Ftl, path: &Path, format: &MkfsOptions) -> Result<ImageBacked<Ftl>> {
    let mut file = BlockFile::new(ftl);
    if path.exists() {
        check_image_size(path, file.size_bytes(), ImageKind::F2fs)?;
        let blocks = load_image(&mut file, path)?;
        eprintln!("{}: loaded {blocks} blocks", path.display());
        return Ok(ImageBacked::paused(file.into_inner(), open_existing(path)?));
    }
    let image = create_sparse(path, file.size_bytes())?;
    let mut backed = ImageBacked::new(file.into_inner(), image);
    mkfs(&mut backed, format).context("mkfs")?;
    backed.flush(0).context("writing the new image")?;
    Ok(backed)
}

/// What an image holds, for the checks made before it is used.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ImageKind {
    /// Block-file mode: the whole device, byte for byte.
    Disk,
    /// F2FS mode: an F2FS image, at most the device's size.
    F2fs,
}

/// Refuses an image whose size does not fit: block-file mode needs exactly the device's
/// bytes; F2FS mode needs whole blocks, at most the device's size, and at least what the
/// F2FS superblock in it spans (a shorter file was truncated: zero-padding it would serve
/// an empty or wrong file system). Nothing is written.
fn check_image_size(path: &Path, device_bytes: u64, kind: ImageKind) -> Result<()> {
    let mut image = File::open(path).with_context(|| format!("image {}", path.display()))?;
    let len = image.metadata()?.len();
    let shown = path.display();
    if kind == ImageKind::Disk {
        if len != device_bytes {
            bail!(
                "image {shown} is {len} bytes but the device holds {device_bytes} bytes: \
                 block-file images are the whole device (choose the --device it was saved from)"
            );
        }
        return Ok(());
    }
    if !len.is_multiple_of(LBA_SIZE as u64) || len > device_bytes {
        bail!(
            "image {shown} is {len} bytes: not a whole number of 4096-byte blocks within the \
             device's {device_bytes} bytes"
        );
    }
    let sb = image_superblock(&mut image, len)
        .with_context(|| format!("image {shown}: no valid F2FS superblock"))?;
    let spans = sb.block_count.saturating_mul(LBA_SIZE as u64);
    if spans > len {
        bail!(
            "image {shown} is truncated: {len} bytes, but the F2FS in it spans {spans} bytes \
             ({} blocks of 4096 bytes)",
            sb.block_count
        );
    }
    if spans > device_bytes {
        bail!(
            "image {shown} holds an F2FS of {spans} bytes, larger than the device's \
             {device_bytes} bytes (choose a larger --device)"
        );
    }
    Ok(())
}

/// The F2FS superblock of an image file: the first copy, else the second.
fn image_superblock(image: &mut File, len: u64) -> Result<flashstack_f2fs::Superblock> {
    let mut blocks = vec![0u8; 2 * LBA_SIZE];
    let n = (len as usize).min(blocks.len());
    image.read_exact(&mut blocks[..n])?;
    let mut first_error = None;
    for copy in 0..2u8 {
        let start = copy as usize * LBA_SIZE;
        let block: &[u8; LBA_SIZE] = blocks[start..start + LBA_SIZE]
            .try_into()
            .expect("a block's bytes");
        match flashstack_f2fs::Superblock::from_block(block, copy) {
            Ok(sb) => return Ok(sb),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(anyhow::anyhow!(
        "{}",
        first_error.expect("both copies were tried")
    ))
}

fn open_existing(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("image {}", path.display()))
}

/// A new image file of `size_bytes`, all hole (nothing written yet).
fn create_sparse(path: &Path, size_bytes: u64) -> Result<File> {
    let image = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("image {}", path.display()))?;
    image
        .set_len(size_bytes)
        .with_context(|| format!("image {}: cannot size it", path.display()))?;
    Ok(image)
}

/// Mounts F2FS on `dev` under the stack's page cache and serves it with FUSE until it is
/// unmounted; returns the device after F2FS's unmount checkpoint, and the mount's figures.
/// `mounted` runs once F2FS has accepted the device (to start mirroring an image).
fn serve_f2fs<D: BlockDevice + Send + 'static>(
    dev: D,
    stack: &StackConfig,
    args: &MountArgs,
    verify: Verify,
    mounted: impl FnOnce(&mut D) -> Result<()>,
) -> Result<(D, F2fsTreeMetrics)> {
    serve_f2fs_at(dev, stack, args, 0, verify, mounted)
}

/// [`serve_f2fs`] with the first request at virtual time `start_ns`.
fn serve_f2fs_at<D: BlockDevice + Send + 'static>(
    dev: D,
    stack: &StackConfig,
    args: &MountArgs,
    start_ns: flashstack_sim::Nanos,
    verify: Verify,
    mounted: impl FnOnce(&mut D) -> Result<()>,
) -> Result<(D, F2fsTreeMetrics)> {
    let opts = MountOptions {
        start_ns,
        config: stack.fs.mount.clone(),
        verify,
        ..MountOptions::default()
    };
    let mut fs = F2fs::mount_opts(dev, opts).context("mounting F2FS")?;
    mounted(fs.device_mut())?;
    // Inode times on the mount are real: programs compare them with the wall clock.
    fs.set_inode_clock(Box::new(WallClock));
    warn_of_deltas(stack, args);
    let mobifs = stack.cache.policy == flashstack_cache::PolicyName::Mobifs;
    let (tree, tick) = if mobifs {
        warn_of_transactions(stack);
        let clock = Box::new(SinceMount(std::time::Instant::now()));
        let tree = F2fsTree::with_wall_clock(fs, stack.cache.clone(), clock);
        (tree.context("the page cache")?, Some(TICK))
    } else {
        let tree = F2fsTree::new(fs, stack.cache.clone());
        (tree.context("the page cache")?, None)
    };
    let tree = match &args.record {
        None => serve(tree, args, &stack.name, tick)?,
        Some(path) => {
            let out = File::create(path)
                .with_context(|| format!("cannot create the trace {}", path.display()))?;
            let recording = Recording::new(tree, Box::new(BufWriter::new(out)))
                .with_context(|| format!("cannot write the trace {}", path.display()))?;
            let (tree, stats, flushed) = serve(recording, args, &stack.name, tick)?.finish();
            flushed.with_context(|| format!("writing the trace {}", path.display()))?;
            eprintln!(
                "{}: recorded {} operations ({} bytes written{})",
                path.display(),
                stats.ops,
                stats.write_bytes,
                if stats.unnamed > 0 {
                    format!(", {} under /.ino-N names", stats.unnamed)
                } else {
                    String::new()
                }
            );
            tree
        }
    };
    // Taken before F2FS's own unmount checkpoint (the device report includes it).
    let metrics = tree.metrics();
    let mut fs = tree.into_inner().context("writing the page cache back")?;
    if args.restore_deltas {
        let merged = fs.restore_deltas().context("restoring MedFS deltas")?;
        eprintln!("restored {merged} MedFS deltas into their base blocks: stock F2FS");
    }
    let dev = fs.unmount().context("unmount checkpoint")?;
    Ok((dev, metrics))
}

/// An image written with MedFS's deltas in its inodes is not stock F2FS (fsck.f2fs would
/// read a delta's bytes as block addresses and "fix" it away): say so at mount, with the
/// way out, unless `--restore-deltas` folds them at unmount.
fn warn_of_deltas(stack: &StackConfig, args: &MountArgs) {
    let deltas_on = stack.fs.mount.delta.mode != flashstack_f2fs::DeltaMode::Off;
    if deltas_on && !args.restore_deltas {
        if let Some(image) = &args.image {
            eprintln!(
                "note: MedFS deltas are on ({}): files updated on this mount keep deltas in \
                 their inodes, which is not stock F2FS; fold them with `flashstack fs \
                 restore-deltas {}` before fsck.f2fs or a kernel mount, or mount with \
                 --restore-deltas",
                format!("{:?}", stack.fs.mount.delta.mode).to_lowercase(),
                image.display()
            );
        }
    }
}

/// How often a mount whose clock follows the wall clock lets due background work run
/// between requests (MobiFS's checkpoints are due to the second; this is well within).
const TICK: Duration = Duration::from_millis(250);

/// Real time since the mount began, for [`F2fsTree::with_wall_clock`]: the binary is the
/// only place the wall clock is read.
struct SinceMount(std::time::Instant);

impl RequestClock for SinceMount {
    fn elapsed_ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// MobiFS's transactions trade durability at fsync for a bounded staleness: say so.
fn warn_of_transactions(stack: &StackConfig) {
    let bound_s = stack.cache.mobifs.staleness_bound_ns as f64 / 1e9;
    eprintln!(
        "note: MobiFS's transactions are on (cache.policy = mobifs): fsync returns before \
         the data is on the device. A power cut or kill -9 loses at most the last {bound_s} s \
         of fsync'd data (cache.mobifs.staleness_bound_ns), in whole transactions; the \
         mount's files are one app's transactions; unmounting persists everything."
    );
}

/// Serves `core` with FUSE until the mount is unmounted; returns the core. With `tick`,
/// a thread lets the core's background work due by the wall clock run that often.
fn serve<T: InodeFs>(core: T, args: &MountArgs, name: &str, tick: Option<Duration>) -> Result<T> {
    let tree = Arc::new(Mutex::new(core));
    let stop = stop_on_signals()?;
    let session = start(args, TreeFs::new(Arc::clone(&tree)))?;
    eprintln!(
        "{name}: page cache + F2FS mounted on {}. Unmount with `umount {}` or Ctrl-C.",
        args.mountpoint.display(),
        args.mountpoint.display()
    );
    let ticking = Arc::new(AtomicBool::new(true));
    let ticker = tick.map(|period| {
        let (tree, ticking) = (Arc::clone(&tree), Arc::clone(&ticking));
        std::thread::spawn(move || tick_until_stopped(&tree, &ticking, period))
    });
    let served = wait_for_unmount(session, &args.mountpoint, &stop);
    ticking.store(false, Ordering::SeqCst);
    if let Some(ticker) = ticker {
        let _ = ticker.join();
    }
    served?;
    Ok(Arc::try_unwrap(tree)
        .map_err(|_| anyhow::anyhow!("the file system is still in use after unmount"))?
        .into_inner()
        .unwrap_or_else(|p| p.into_inner()))
}

fn tick_until_stopped<T: InodeFs>(tree: &Mutex<T>, ticking: &AtomicBool, period: Duration) {
    let mut reported = false;
    while ticking.load(Ordering::SeqCst) {
        std::thread::sleep(period);
        let result = tree.lock().unwrap_or_else(|p| p.into_inner()).tick();
        if let (Err(e), false) = (result, reported) {
            eprintln!("background checkpoint failed: {e} (the next fsync reports it)");
            reported = true;
        }
    }
}

/// An existing, empty directory: mounting over files would hide them.
fn check_mountpoint(path: &Path) -> Result<()> {
    let entries = std::fs::read_dir(path)
        .with_context(|| format!("mountpoint {}: not a readable directory", path.display()))?;
    if entries.count() != 0 {
        bail!("mountpoint {}: directory is not empty", path.display());
    }
    Ok(())
}

fn check_fuse_device() -> Result<()> {
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "FUSE is not available: /dev/fuse is missing (load the fuse module; in a \
             container, pass --device /dev/fuse)"
        ),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => bail!(
            "FUSE is not usable: no permission to open /dev/fuse (run as root, or install \
             fuse3 for the setuid fusermount3 helper)"
        ),
        Err(e) => bail!("FUSE is not usable: /dev/fuse: {e}"),
    }
}

/// Mounts with `default_permissions`: the kernel checks every access against the modes
/// and owners the core stores; `--allow-other` lets other users in.
fn start<F: fuser::Filesystem>(args: &MountArgs, fs: F) -> Result<fuser::BackgroundSession> {
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName("flashstack".into()),
        fuser::MountOption::Subtype("flashstack".into()),
        fuser::MountOption::DefaultPermissions,
    ];
    if args.allow_other {
        config.acl = fuser::SessionACL::All;
    }
    fuser::spawn_mount(fs, &args.mountpoint, &config)
        .with_context(|| format!("cannot mount on {}", args.mountpoint.display()))
}

/// Inode times from the host's wall clock, for a mount real programs use (make, rsync and
/// git compare file times with the time of day). Simulated runs keep F2FS's
/// `VirtualClock`; the binary is the only place a file system gets the wall clock.
struct WallClock;

impl InodeClock for WallClock {
    fn now(&self, _virtual_ns: u64) -> Timestamp {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp {
            secs: since.as_secs() as i64,
            nsec: since.subsec_nanos(),
        }
    }
}

/// The owner of the mounted files: whoever runs flashstack (from /proc, no libc call).
fn current_ids() -> (u32, u32) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let id = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (id("Uid:"), id("Gid:"))
}

/// A flag SIGINT and SIGTERM set, registered before the mount appears, so a signal sent
/// as soon as it is visible is never lost.
fn stop_on_signals() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    Ok(stop)
}

/// Returns once the file system is unmounted: from outside (`umount`), or by us after
/// SIGINT/SIGTERM. A busy mount (a loop device still attached) is reported and waited on.
fn wait_for_unmount(
    session: fuser::BackgroundSession,
    mountpoint: &Path,
    stop: &AtomicBool,
) -> Result<()> {
    let mut session = Some(session);
    loop {
        std::thread::sleep(Duration::from_millis(50));
        if session.as_ref().is_some_and(|s| s.guard.is_finished()) {
            let s = session.take().expect("checked");
            return s.join().context("FUSE session ended with an error");
        }
        if stop.swap(false, Ordering::SeqCst) {
            match unmount(mountpoint) {
                Ok(()) => {}
                Err(e) => eprintln!(
                    "cannot unmount {}: {e}; still mounted",
                    mountpoint.display()
                ),
            }
        }
    }
}

fn unmount(mountpoint: &Path) -> Result<()> {
    let status = std::process::Command::new("umount")
        .arg(mountpoint)
        .status()
        .context("cannot run umount")?;
    if !status.success() {
        bail!("umount failed (busy? detach the loop device first: losetup -d)");
    }
    Ok(())
}

fn report(
    ftl: &Ftl,
    config: &flashstack_ftl::DeviceConfig,
    seed: u64,
    workload: &str,
) -> RunReport {
    let info = RunInfo {
        device: config.name.clone(),
        gc_policy: ftl.policy_name().to_string(),
        workload: workload.to_string(),
        seed,
        contents_stored: true,
        user_capacity_bytes: ftl.user_capacity_bytes(),
        raw_capacity_bytes: config.nand.geometry.raw_bytes(),
        precondition: None,
    };
    RunReport::from_device(ftl, info, &ReportOptions::default())
}

const IMAGE_CHUNK: usize = 256 * LBA_SIZE;

/// Writes the image's non-zero blocks into the file, reading only the parts of the image
/// that hold data (holes are zeros, as the device's unwritten blocks); returns how many.
fn load_image(file: &mut BlockFile<Ftl>, path: &Path) -> Result<u64> {
    let image = File::open(path).with_context(|| format!("image {}", path.display()))?;
    let ranges = data_ranges(&image).with_context(|| format!("image {}", path.display()))?;
    let mut chunk = vec![0u8; IMAGE_CHUNK];
    let mut blocks = 0u64;
    for (start, end) in ranges {
        // Whole blocks: a data range may start or end inside one.
        let (mut offset, end) = (
            start / LBA_SIZE as u64 * LBA_SIZE as u64,
            end.div_ceil(LBA_SIZE as u64) * LBA_SIZE as u64,
        );
        while offset < end {
            let n = IMAGE_CHUNK.min((end - offset) as usize);
            image
                .read_exact_at(&mut chunk[..n], offset)
                .with_context(|| format!("image {}: reading at {offset}", path.display()))?;
            for (i, block) in chunk[..n].chunks_exact(LBA_SIZE).enumerate() {
                if block.iter().any(|&b| b != 0) {
                    file.write_at(offset + (i * LBA_SIZE) as u64, block)?;
                    blocks += 1;
                }
            }
            offset += n as u64;
        }
    }
    file.sync()?;
    Ok(blocks)
}
