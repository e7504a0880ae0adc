//! `flashstack fs`: F2FS image files on the host — format, list, read, inspect, and copy a
//! host file in. Images come from outside, so every command verifies the whole image
//! first ([`Verify::Full`]). A command that changes an image mounts it read-write (which
//! refuses an inconsistent image with an error naming the structure), works, unmounts (a
//! checkpoint) and replaces the image file only then, atomically (sparse: zero blocks
//! become holes). Reading commands mount a private copy read-write (so fsync'd data is
//! recovered by roll-forward) and, if the image is inconsistent, read-only instead, with a
//! warning: what the checks vouch for is still readable.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use flashstack_f2fs::{
    mkfs, F2fs, F2fsError, FileKind, FsError, MemDevice, MkfsOptions, MountOptions, Verify,
};

#[derive(Subcommand)]
pub enum FsCommand {
    /// Format a new image file (mkfs.f2fs 1.15 layout).
    Mkfs(MkfsArgs),
    /// List a directory.
    Ls(PathArgs),
    /// Print a file's bytes.
    Cat(PathArgs),
    /// Inode details of a file or directory.
    Stat(PathArgs),
    /// Copy a host file into the image (parent directories are created).
    Put(PutArgs),
    /// Fold every MedFS delta (inline, and DCM's pseudo files, which are removed) into its
    /// base block, so the image is stock F2FS again (fsck.f2fs reads inline delta zones
    /// as block addresses and finds pseudo files unreachable; docs/medfs.md).
    RestoreDeltas(ImageArgs),
    /// Fragmentation per kind of file and per app: extents, DoF, block I/Os, plane/die
    /// collisions and read time (docs/janusd.md); of an image or of a phone (--phone).
    Frag(crate::frag::FragArgs),
    /// Defragment: --mode copy (the conventional baseline), P (janusdP), L or janusd
    /// (need REMAP); prints data copied, NAND programs and erases, DoF before and after.
    Defrag(crate::frag::DefragArgs),
}

#[derive(Args)]
pub struct ImageArgs {
    /// An F2FS image file; it is written back only if the command succeeds.
    image: PathBuf,
}

#[derive(Args)]
pub struct MkfsArgs {
    /// The image file to create (overwritten if it exists).
    image: PathBuf,
    /// Image size, e.g. 256MiB or 16GiB.
    #[arg(long)]
    size: String,
}

#[derive(Args)]
pub struct PathArgs {
    /// An F2FS image file (`fs mkfs`, `mkfs.f2fs`, or a run's --image-out).
    image: PathBuf,
    /// Path inside the image, e.g. /data/app.db.
    path: String,
}

#[derive(Args)]
pub struct PutArgs {
    /// An F2FS image file; it is written back only if the copy succeeds.
    image: PathBuf,
    /// The file on this machine to copy in.
    host_file: PathBuf,
    /// Destination path inside the image.
    path: String,
}

pub fn fs(command: FsCommand) -> Result<()> {
    match command {
        FsCommand::Mkfs(a) => format(&a),
        FsCommand::Ls(a) => ls(&a),
        FsCommand::Cat(a) => cat(&a),
        FsCommand::Stat(a) => stat(&a),
        FsCommand::Put(a) => put(&a),
        FsCommand::RestoreDeltas(a) => restore_deltas(&a),
        FsCommand::Frag(a) => crate::frag::frag(a),
        FsCommand::Defrag(a) => crate::frag::defrag(a),
    }
}

fn restore_deltas(a: &ImageArgs) -> Result<()> {
    let mut fs = open_for_writing(&a.image)?;
    let merged = fs
        .restore_deltas()
        .with_context(|| format!("restoring the deltas of {}", a.image.display()))?;
    let written = fs.metrics().data_blocks;
    let dev = fs.unmount()?;
    dev.export(&a.image)?;
    println!(
        "{}: {merged} deltas (inline and DCM) folded into their bases ({written} data blocks written, \
         then the unmount checkpoint)",
        a.image.display()
    );
    Ok(())
}

fn format(a: &MkfsArgs) -> Result<()> {
    let bytes = flashstack_sim::units::parse_size(&a.size)
        .with_context(|| format!("--size '{}'", a.size))?;
    let mut dev = MemDevice::new(bytes);
    let layout = mkfs(&mut dev, &MkfsOptions::default())?;
    dev.export(&a.image)?;
    println!(
        "{}: {} main segments, {} user blocks, overprovision {:.2}%",
        a.image.display(),
        layout.segment_count_main,
        layout.user_block_count,
        layout.overprovision
    );
    Ok(())
}

fn verified(read_only: bool) -> MountOptions {
    MountOptions {
        verify: Verify::Full,
        read_only,
        ..MountOptions::default()
    }
}

/// Mounts an image to change it: read-write, verified whole.
pub(crate) fn open_for_writing(image: &Path) -> Result<F2fs<MemDevice>> {
    let dev = MemDevice::import(image)?;
    F2fs::mount_opts(dev, verified(false)).with_context(|| format!("mounting {}", image.display()))
}

/// Mounts an image to read it: read-write on the private copy in memory (never written
/// back), or read-only if the image is inconsistent (then what is wrong goes to stderr).
pub(crate) fn open_for_reading(image: &Path) -> Result<F2fs<MemDevice>> {
    let mounting = || format!("mounting {}", image.display());
    let refusal = match F2fs::mount_opts(MemDevice::import(image)?, verified(false)) {
        Err(e @ FsError::Device(F2fsError::Corrupt(_))) => e,
        other => return other.with_context(mounting),
    };
    let fs = F2fs::mount_opts(MemDevice::import(image)?, verified(true)).with_context(mounting)?;
    eprintln!(
        "warning: {}: {refusal}; reading it read-only{}",
        image.display(),
        match fs.warnings().len() as u64 + fs.warnings_dropped() {
            0 | 1 => String::new(),
            n => format!(" ({n} inconsistencies)"),
        }
    );
    if fs.skipped_recovery() > 0 {
        eprintln!(
            "warning: {}: data fsync'd after the last checkpoint ({} files) is not shown",
            image.display(),
            fs.skipped_recovery()
        );
    }
    Ok(fs)
}

fn kind_name(kind: FileKind) -> &'static str {
    match kind {
        FileKind::File => "file",
        FileKind::Dir => "dir",
        FileKind::Symlink => "symlink",
        FileKind::Other => "other",
        FileKind::CharDevice => "chardev",
        FileKind::BlockDevice => "blockdev",
        FileKind::Fifo => "fifo",
        FileKind::Socket => "socket",
    }
}

fn ls(a: &PathArgs) -> Result<()> {
    let mut fs = open_for_reading(&a.image)?;
    for e in fs.readdir(&a.path)? {
        let st = fs.stat_ino(e.ino)?;
        println!(
            "{:<5} {:>12} {:>8}  {}",
            kind_name(e.kind),
            st.size_bytes,
            e.ino,
            e.name
        );
    }
    Ok(())
}

fn cat(a: &PathArgs) -> Result<()> {
    use std::io::Write;
    let mut fs = open_for_reading(&a.image)?;
    let ino = fs.lookup(&a.path)?;
    let size = fs.stat_ino(ino)?.size_bytes;
    let mut out = std::io::stdout().lock();
    let mut offset = 0u64;
    while offset < size {
        let chunk = fs.read(ino, offset, 1 << 20)?;
        if chunk.is_empty() {
            break;
        }
        out.write_all(&chunk)?;
        offset += chunk.len() as u64;
    }
    Ok(())
}

fn stat(a: &PathArgs) -> Result<()> {
    let mut fs = open_for_reading(&a.image)?;
    let st = fs.stat(&a.path)?;
    println!("{}", serde_json::to_string_pretty(&st)?);
    Ok(())
}

fn put(a: &PutArgs) -> Result<()> {
    let data = std::fs::read(&a.host_file)
        .with_context(|| format!("reading {}", a.host_file.display()))?;
    let mut fs = open_for_writing(&a.image)?;
    let parts: Vec<&str> = a.path.split('/').filter(|p| !p.is_empty()).collect();
    let Some((_, dirs)) = parts.split_last() else {
        bail!("'{}' names the root directory", a.path);
    };
    let mut dir = String::new();
    for d in dirs {
        dir = format!("{dir}/{d}");
        match fs.mkdir(&dir) {
            Ok(_) | Err(FsError::Exists(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let ino = match fs.create(&a.path) {
        Ok(ino) => ino,
        Err(FsError::Exists(_)) => fs.lookup(&a.path)?,
        Err(e) => return Err(e.into()),
    };
    fs.truncate(ino, 0)?;
    fs.write(ino, 0, &data)?;
    let metrics = fs.metrics().clone();
    let dev = fs.unmount()?;
    dev.export(&a.image)?;
    println!(
        "{} bytes -> {}:{} ({} data blocks written, then the unmount checkpoint)",
        data.len(),
        a.image.display(),
        a.path,
        metrics.data_blocks
    );
    Ok(())
}
