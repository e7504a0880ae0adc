//! The app files besides SQLite, written the way Android apps write them.

use crate::ctx::Ctx;
use crate::error::AppError;

/// Bytes per `write` call of buffered Java streams writing a file (a 64 KiB buffer, as
/// image loaders and download managers use).
pub const STREAM_CHUNK_BYTES: usize = 64 * 1024;

/// Writes a new file (or replaces one: truncated first) in `STREAM_CHUNK_BYTES` writes;
/// `fsync` when the app syncs it (`FileOutputStream.getFD().sync()`).
pub fn write_file(ctx: &mut Ctx, path: &str, data: &[u8], fsync: bool) -> Result<(), AppError> {
    let f = ctx.open(path, true)?;
    ctx.truncate(f, path, 0)?;
    let mut at = 0u64;
    for chunk in data.chunks(STREAM_CHUNK_BYTES) {
        ctx.write_at(f, path, at, chunk)?;
        at += chunk.len() as u64;
    }
    if fsync {
        ctx.fsync(f, path)?;
    }
    ctx.close(f, path)
}

/// Writes a new file that did not exist (no truncate call): downloads, image caches, photos.
pub fn create_file(ctx: &mut Ctx, path: &str, data: &[u8], fsync: bool) -> Result<(), AppError> {
    let f = ctx.open(path, true)?;
    let mut at = 0u64;
    for chunk in data.chunks(STREAM_CHUNK_BYTES) {
        ctx.write_at(f, path, at, chunk)?;
        at += chunk.len() as u64;
    }
    if fsync {
        ctx.fsync(f, path)?;
    }
    ctx.close(f, path)
}

/// Android's `AtomicFile` / shared-preferences commit: write `path.new`, fsync it, rename
/// it over `path`. After a power cut either the old or the new file is there, whole.
pub fn atomic_write(ctx: &mut Ctx, path: &str, data: &[u8]) -> Result<(), AppError> {
    let tmp = format!("{path}.new");
    create_file(ctx, &tmp, data, true)?;
    ctx.rename(&tmp, path)
}

/// Appends to a file (logs, a cache journal), creating it if needed; not synced.
pub fn append(ctx: &mut Ctx, path: &str, data: &[u8]) -> Result<(), AppError> {
    let f = ctx.open(path, true)?;
    let end = ctx.size(f, path)?;
    ctx.write_at(f, path, end, data)?;
    ctx.close(f, path)
}

/// Reads a whole file (up to `max_bytes`), as an app loads a cached image or its prefs.
pub fn read_file(ctx: &mut Ctx, path: &str, max_bytes: usize) -> Result<Vec<u8>, AppError> {
    if !ctx.exists(path)? {
        return Ok(Vec::new());
    }
    let f = ctx.open(path, false)?;
    let mut out = Vec::new();
    let mut at = 0u64;
    while out.len() < max_bytes {
        let want = STREAM_CHUNK_BYTES.min(max_bytes - out.len());
        let chunk = ctx.read_at(f, path, at, want)?;
        if chunk.is_empty() {
            break;
        }
        at += chunk.len() as u64;
        out.extend_from_slice(&chunk);
    }
    ctx.close(f, path)?;
    Ok(out)
}
