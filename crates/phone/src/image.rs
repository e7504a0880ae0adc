//! A phone's state in one file: the F2FS image lives on the device, and the device's
//! internal state is saved whole (every block's erase count and write pointer, every
//! programmed page's spare area, the bytes of every live page, the trim records, the
//! mapping and the valid counts).
//!
//! Format (little-endian): the 16-byte magic `FLASHSTACK-PHONE`, a `u32` format version,
//! then sections, each an 8-byte tag, a `u64` length, the payload and a `u64` checksum of
//! the payload: `HEADER` (JSON: the stack it was made on, how it was aged, what was
//! measured), `BLOCKS`, `PAGES` (programmed pages only), `LPNS`, `FRAMEMAP`, `FRAMES`
//! (distinct page contents, stored once), `TRIMLOG`, `BINDLOG` (the remap records: since
//! format version 2; a version 1 file has none and loads as a device without remaps),
//! `MAPPING`, `VALID`, `END`. Erased
//! pages and free space take no room, so the file follows the data held, not the device
//! size. Every section is checked when read; a wrong or damaged file is an error naming
//! the file, the section and what is wrong.
//!
//! Loading rebuilds the device the way it mounts after a clean shutdown: the array from
//! the file, then the mapping, valid counts and free pools by an OOB scan, which must
//! agree with the saved mapping and valid counts.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use flashstack_ftl::{DeviceParts, Ftl};
use flashstack_nand::{NandParts, StoredFrames, FRAMES_PER_CHUNK};
use flashstack_sim::Nanos;
use flashstack_stack::{Stack, StackConfig};
use serde::{Deserialize, Serialize};

/// Page-content frames in chunks of [`FRAMES_PER_CHUNK`], as the NAND model keeps them.
type FrameChunks = Vec<Box<[u8]>>;

use crate::age::{AgingCounts, AgingSpec};
use crate::error::PhoneError;
use crate::measure::{device_state, fs_state, DeviceState, FsState};

const MAGIC: &[u8; 16] = b"FLASHSTACK-PHONE";
/// The file format this build writes (it also reads [`FORMAT_VERSION_NO_BINDS`]).
pub const FORMAT_VERSION: u32 = 2;
/// The format before remap records (no `BINDLOG` section), still read.
pub const FORMAT_VERSION_NO_BINDS: u32 = 1;
/// Changes whenever aging would build a different phone from the same inputs: part of the
/// built-in phone's cache key.
pub const AGING_MODEL_VERSION: u32 = 1;
const NO_FRAME: u32 = u32::MAX;
const UNMAPPED: u32 = u32::MAX;

/// What a phone file says about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhoneHeader {
    pub format_version: u32,
    pub model_version: u32,
    /// The stack the phone was made on (its device is the one saved).
    pub stack: StackConfig,
    pub spec: AgingSpec,
    /// Virtual time of the clean shutdown after aging.
    pub now_ns: Nanos,
    /// The personas' apps installed and used (`AppSpec::name`).
    pub persona_apps: Vec<String>,
    pub counts: AgingCounts,
    pub fs: FsState,
    pub device: DeviceState,
}

impl PhoneHeader {
    /// One line: fill, age, free segments, mean DoF (the report header's).
    pub fn summary(&self) -> String {
        format!(
            "aged phone: {:.1}% full, {} days, {} free segments of {}, mean DoF {:.2}, \
             device erases mean {:.2} (max {})",
            self.fs.utilization * 100.0,
            self.spec.days,
            self.fs.free_segments,
            self.fs.main_segments,
            self.fs.dof_mean,
            self.device.erase_count_mean,
            self.device.erase_count_max
        )
    }
}

/// A used phone: its header and its device's durable state.
#[derive(Clone, Debug)]
pub struct PhoneImage {
    pub header: PhoneHeader,
    pub device: DeviceParts,
    /// The mapping and valid counts at shutdown, checked against the rebuilt ones.
    pub mapping: Vec<u32>,
    pub valid: Vec<u32>,
}

impl PhoneImage {
    /// Shuts `stack` down cleanly (after measuring its file system) and keeps its state.
    /// Bytes of pages no logical page maps any more are dropped (a clean state never
    /// reads them again): only their spare areas are kept.
    pub fn capture(
        mut stack: Stack,
        spec: &AgingSpec,
        counts: AgingCounts,
        persona_apps: Vec<String>,
    ) -> Result<PhoneImage, PhoneError> {
        let now = stack.now_ns();
        stack
            .sync_all(now)
            .map_err(|e| PhoneError::Stack(format!("sync: {e}")))?;
        let fs = stack
            .with_fs(fs_state)
            .map_err(|e| PhoneError::Stack(e.to_string()))?
            .map_err(|e| PhoneError::Stack(format!("measuring the file system: {e}")))?;
        let config = stack.config().clone();
        let (ftl, now_ns) = stack
            .shut_down(now)
            .map_err(|e| PhoneError::Stack(format!("shutdown: {e}")))?;
        let device = device_state(&ftl);
        let mut parts = ftl
            .to_parts()
            .map_err(|e| PhoneError::Device(e.to_string()))?;
        if ftl.slots_per_block() == ftl.config().nand.geometry.pages_per_block
            && ftl.config().ftl.slot_bytes == 4096
        {
            drop_dead_frames(&mut parts.nand, &ftl.mapping().to_vec());
        }
        Ok(PhoneImage {
            header: PhoneHeader {
                format_version: FORMAT_VERSION,
                model_version: AGING_MODEL_VERSION,
                stack: config,
                spec: spec.clone(),
                now_ns,
                persona_apps,
                counts,
                fs,
                device,
            },
            mapping: ftl.mapping().to_vec(),
            valid: ftl.valid_slots_per_block().to_vec(),
            device: parts,
        })
    }

    /// Whether `config`'s device can hold this phone's state: the same flash array, slot
    /// size and user capacity (its FTL policies, page cache and F2FS mount options may
    /// differ).
    pub fn check_compatible(&self, config: &StackConfig) -> Result<(), PhoneError> {
        let mine = &self.header.stack.device;
        let theirs = &config.device;
        let capacity = |d: &flashstack_ftl::DeviceConfig| d.user_capacity_bytes().ok();
        if mine.nand != theirs.nand
            || mine.ftl.slot_bytes != theirs.ftl.slot_bytes
            || capacity(mine) != capacity(theirs)
        {
            return Err(PhoneError::Incompatible(format!(
                "the phone was made on device '{}' ({} bytes of user capacity); stack '{}' has \
                 device '{}' with another flash array, slot size or capacity: make a phone \
                 for it with `flashstack phone age --stack {}`",
                mine.name,
                capacity(mine).unwrap_or(0),
                config.name,
                theirs.name,
                config.name
            )));
        }
        Ok(())
    }

    /// The phone on `config` (its own stack when `None`), powered up at the virtual time it
    /// was shut down: the device rebuilt and checked, F2FS mounted, an empty page cache.
    pub fn into_stack(self, config: Option<&StackConfig>, seed: u64) -> Result<Stack, PhoneError> {
        let config = config.cloned().unwrap_or_else(|| self.header.stack.clone());
        let (ftl, start_ns) = self.into_device(&config, seed)?;
        Stack::from_ftl(config, ftl, start_ns).map_err(|e| PhoneError::Stack(e.to_string()))
    }

    /// The phone's device on `config`'s device settings, rebuilt and checked, and the
    /// virtual time its mount scan ended (when the first request may arrive).
    pub fn into_device(self, config: &StackConfig, seed: u64) -> Result<(Ftl, Nanos), PhoneError> {
        self.check_compatible(config)?;
        let (ftl, done) =
            Ftl::from_parts(config.device.clone(), self.device, seed, self.header.now_ns)
                .map_err(|e| PhoneError::Device(e.to_string()))?;
        check_rebuilt(&ftl, &self.mapping, &self.valid)?;
        Ok((ftl, done.complete_ns))
    }

    /// Writes the phone to `path` (through a temporary file renamed at the end, so a
    /// failed save leaves any existing file untouched).
    pub fn save(&self, path: &Path) -> Result<u64, PhoneError> {
        let io = |source| PhoneError::Io {
            path: path.display().to_string(),
            source,
        };
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let file = std::fs::File::create(&tmp).map_err(io)?;
        let mut out = BufWriter::with_capacity(4 << 20, file);
        let written = self.write_to(&mut out).and_then(|n| {
            out.flush()?;
            Ok(n)
        });
        let written = match written {
            Ok(n) => n,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(io(e));
            }
        };
        drop(out);
        std::fs::rename(&tmp, path).map_err(io)?;
        Ok(written)
    }

    fn write_to(&self, out: &mut impl Write) -> std::io::Result<u64> {
        let mut w = SectionWriter { out, bytes: 0 };
        w.raw(MAGIC)?;
        w.raw(&FORMAT_VERSION.to_le_bytes())?;
        let header = serde_json::to_vec_pretty(&self.header).map_err(std::io::Error::other)?;
        w.section(b"HEADER\0\0", &header)?;
        let n = &self.device.nand;
        let geometry = &self.header.stack.device.nand.geometry;
        let spp = (geometry.page_size_bytes / self.header.stack.device.ftl.slot_bytes) as usize;
        let ppb = geometry.pages_per_block as usize;
        let mut blocks = Vec::with_capacity(n.erase_count.len() * 8);
        for b in 0..n.erase_count.len() {
            blocks.extend_from_slice(&n.erase_count[b].to_le_bytes());
            blocks.extend_from_slice(&n.write_ptr[b].to_le_bytes());
            blocks.push(n.bad[b] as u8);
            blocks.push(n.failing[b] as u8);
        }
        w.section(b"BLOCKS\0\0", &blocks)?;
        let programmed: Vec<usize> = (0..n.write_ptr.len())
            .flat_map(|b| (b * ppb)..(b * ppb + n.write_ptr[b] as usize))
            .collect();
        let mut pages = Vec::with_capacity(programmed.len() * 9);
        let mut lpns = Vec::with_capacity(programmed.len() * spp * 4);
        let mut frame_map = Vec::new();
        let no_frames = StoredFrames {
            slot_frame: Vec::new(),
            frame_count: 0,
            chunks: Vec::new(),
        };
        let frames = n.frames.as_ref().unwrap_or(&no_frames);
        for &p in &programmed {
            pages.push(n.page_flags[p]);
            pages.extend_from_slice(&n.page_seq[p].to_le_bytes());
            for s in p * spp..(p + 1) * spp {
                lpns.extend_from_slice(&n.slot_lpn[s].to_le_bytes());
                let f = frames.slot_frame.get(s).copied().unwrap_or(NO_FRAME);
                frame_map.extend_from_slice(&f.to_le_bytes());
            }
        }
        w.section(b"PAGES\0\0\0", &pages)?;
        w.section(b"LPNS\0\0\0\0", &lpns)?;
        w.section(b"FRAMEMAP", &frame_map)?;
        w.frames(frames, self.header.stack.device.ftl.slot_bytes as usize)?;
        let mut trims = Vec::new();
        trims.extend_from_slice(&(self.device.trim_log.len() as u32).to_le_bytes());
        for (page, l) in &self.device.trim_log {
            trims.extend_from_slice(&page.to_le_bytes());
            trims.extend_from_slice(&(l.len() as u32).to_le_bytes());
            l.iter()
                .for_each(|x| trims.extend_from_slice(&x.to_le_bytes()));
        }
        w.section(b"TRIMLOG\0", &trims)?;
        w.section(b"BINDLOG\0", &encode_binds(&self.device.bind_log))?;
        w.section(b"MAPPING\0", &u32s(&self.mapping))?;
        w.section(b"VALID\0\0\0", &u32s(&self.valid))?;
        w.section(b"END\0\0\0\0\0", &[])?;
        Ok(w.bytes)
    }

    /// Reads a phone file, checking every section.
    pub fn load(path: &Path) -> Result<PhoneImage, PhoneError> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| PhoneError::Io {
            path: name.clone(),
            source,
        })?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        let mut r = SectionReader {
            input: BufReader::with_capacity(4 << 20, file),
            path: name,
            left: len,
        };
        read_image(&mut r)
    }
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Forgets the bytes of slots the mapping does not point at (stale copies), and frames
/// no slot needs any more.
fn drop_dead_frames(nand: &mut NandParts, mapping: &[u32]) {
    let Some(frames) = nand.frames.as_mut() else {
        return;
    };
    let mut live = vec![false; frames.slot_frame.len()];
    for &slot in mapping {
        if slot != UNMAPPED {
            live[slot as usize] = true;
        }
    }
    let frame_bytes = frames
        .chunks
        .first()
        .map_or(0, |c| c.len() / FRAMES_PER_CHUNK);
    let mut renumber = vec![NO_FRAME; frames.frame_count as usize];
    let mut kept: Vec<u32> = Vec::new();
    for (slot, f) in frames.slot_frame.iter_mut().enumerate() {
        if *f == NO_FRAME {
            continue;
        }
        if !live[slot] {
            *f = NO_FRAME;
            continue;
        }
        if renumber[*f as usize] == NO_FRAME {
            renumber[*f as usize] = kept.len() as u32;
            kept.push(*f);
        }
        *f = renumber[*f as usize];
    }
    let old = std::mem::take(&mut frames.chunks);
    let chunks = kept
        .chunks(FRAMES_PER_CHUNK)
        .map(|group| {
            let mut chunk = vec![0u8; FRAMES_PER_CHUNK * frame_bytes].into_boxed_slice();
            for (i, &f) in group.iter().enumerate() {
                let (c, o) = (f as usize / FRAMES_PER_CHUNK, f as usize % FRAMES_PER_CHUNK);
                chunk[i * frame_bytes..(i + 1) * frame_bytes]
                    .copy_from_slice(&old[c][o * frame_bytes..(o + 1) * frame_bytes]);
            }
            chunk
        })
        .collect();
    frames.chunks = chunks;
    frames.frame_count = kept.len() as u32;
}

fn check_rebuilt(ftl: &Ftl, mapping: &[u32], valid: &[u32]) -> Result<(), PhoneError> {
    let rebuilt = ftl.mapping();
    if rebuilt.len() != mapping.len() {
        return Err(PhoneError::Device(format!(
            "the saved mapping has {} logical pages, the device {}",
            mapping.len(),
            rebuilt.len()
        )));
    }
    if let Some(lpn) = (0..mapping.len()).find(|&i| mapping[i] != rebuilt.at(i)) {
        return Err(PhoneError::Device(format!(
            "logical page {lpn}: the saved mapping says slot {:#x}, the spare areas say {:#x}",
            mapping[lpn],
            rebuilt.at(lpn)
        )));
    }
    let counts = ftl.valid_slots_per_block();
    if let Some(b) = (0..valid.len().min(counts.len())).find(|&b| valid[b] != counts[b]) {
        return Err(PhoneError::Device(format!(
            "block {b}: {} valid slots saved, {} rebuilt",
            valid[b], counts[b]
        )));
    }
    Ok(())
}

/// A 64-bit checksum of a byte stream, fed in pieces.
struct Checksum {
    h: u64,
    tail: Vec<u8>,
    len: u64,
}

impl Checksum {
    fn new() -> Checksum {
        Checksum {
            h: 0x6A09_E667_F3BC_C909,
            tail: Vec::with_capacity(8),
            len: 0,
        }
    }
    fn word(&mut self, w: u64) {
        self.h = (self.h ^ w)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(27);
    }
    fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        while !self.tail.is_empty() && !data.is_empty() {
            self.tail.push(data[0]);
            data = &data[1..];
            if self.tail.len() == 8 {
                let w = u64::from_le_bytes(self.tail[..].try_into().expect("8"));
                self.word(w);
                self.tail.clear();
            }
        }
        let mut words = data.chunks_exact(8);
        for c in &mut words {
            self.word(u64::from_le_bytes(c.try_into().expect("8")));
        }
        self.tail.extend_from_slice(words.remainder());
    }
    fn finish(mut self) -> u64 {
        let mut last = [0u8; 8];
        last[..self.tail.len()].copy_from_slice(&self.tail);
        self.word(u64::from_le_bytes(last));
        self.word(self.len);
        self.h
    }
}

struct SectionWriter<'a, W: Write> {
    out: &'a mut W,
    bytes: u64,
}

impl<W: Write> SectionWriter<'_, W> {
    fn raw(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.out.write_all(data)?;
        self.bytes += data.len() as u64;
        Ok(())
    }
    fn section(&mut self, tag: &[u8; 8], payload: &[u8]) -> std::io::Result<()> {
        self.raw(tag)?;
        self.raw(&(payload.len() as u64).to_le_bytes())?;
        self.raw(payload)?;
        let mut sum = Checksum::new();
        sum.update(payload);
        self.raw(&sum.finish().to_le_bytes())
    }
    /// The distinct frames: their count, then their bytes, streamed from the chunks.
    fn frames(&mut self, f: &StoredFrames, frame_bytes: usize) -> std::io::Result<()> {
        let len = 4 + f.frame_count as u64 * frame_bytes as u64;
        self.raw(b"FRAMES\0\0")?;
        self.raw(&len.to_le_bytes())?;
        let mut sum = Checksum::new();
        let count = f.frame_count.to_le_bytes();
        sum.update(&count);
        self.raw(&count)?;
        let mut left = f.frame_count as usize * frame_bytes;
        for chunk in &f.chunks {
            let n = left.min(chunk.len());
            sum.update(&chunk[..n]);
            self.raw(&chunk[..n])?;
            left -= n;
        }
        self.raw(&sum.finish().to_le_bytes())
    }
}

struct SectionReader<R: Read> {
    input: R,
    path: String,
    left: u64,
}

impl<R: Read> SectionReader<R> {
    fn bad(&self, what: impl Into<String>) -> PhoneError {
        PhoneError::Format {
            path: self.path.clone(),
            what: what.into(),
        }
    }
    fn exact(&mut self, buf: &mut [u8], what: &str) -> Result<(), PhoneError> {
        if buf.len() as u64 > self.left {
            return Err(self.bad(format!("truncated: the file ends inside {what}")));
        }
        self.input.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                self.bad(format!("truncated: the file ends inside {what}"))
            }
            _ => self.bad(format!("reading {what}: {e}")),
        })?;
        self.left -= buf.len() as u64;
        Ok(())
    }
    fn u64(&mut self, what: &str) -> Result<u64, PhoneError> {
        let mut b = [0u8; 8];
        self.exact(&mut b, what)?;
        Ok(u64::from_le_bytes(b))
    }
    /// The next section, which must be `tag`; its payload checked against its checksum.
    fn section(&mut self, tag: &[u8; 8]) -> Result<Vec<u8>, PhoneError> {
        let name = tag_name(tag);
        let len = self.open(tag)?;
        let mut payload = vec![0u8; len as usize];
        self.exact(&mut payload, &format!("section {name}"))?;
        let mut sum = Checksum::new();
        sum.update(&payload);
        self.close(tag, sum)?;
        Ok(payload)
    }
    fn open(&mut self, tag: &[u8; 8]) -> Result<u64, PhoneError> {
        let name = tag_name(tag);
        let mut got = [0u8; 8];
        self.exact(&mut got, &format!("the tag of section {name}"))?;
        if &got != tag {
            return Err(self.bad(format!(
                "expected section {name}, found '{}' (damaged or not a phone file)",
                tag_name(&got)
            )));
        }
        let len = self.u64(&format!("the length of section {name}"))?;
        if len > self.left {
            return Err(self.bad(format!(
                "section {name} claims {len} bytes, more than the {} left in the file \
                 (truncated or damaged)",
                self.left
            )));
        }
        Ok(len)
    }
    fn close(&mut self, tag: &[u8; 8], sum: Checksum) -> Result<(), PhoneError> {
        let name = tag_name(tag);
        let stored = self.u64(&format!("the checksum of section {name}"))?;
        if stored != sum.finish() {
            return Err(self.bad(format!(
                "section {name}: checksum mismatch (the file is damaged)"
            )));
        }
        Ok(())
    }
    fn frames(&mut self, frame_bytes: usize) -> Result<(u32, FrameChunks), PhoneError> {
        let tag = b"FRAMES\0\0";
        let len = self.open(tag)?;
        let mut sum = Checksum::new();
        let mut count = [0u8; 4];
        self.exact(&mut count, "section FRAMES")?;
        sum.update(&count);
        let count = u32::from_le_bytes(count);
        if len != 4 + count as u64 * frame_bytes as u64 {
            return Err(self.bad(format!(
                "section FRAMES: {len} bytes cannot hold {count} frames of {frame_bytes} bytes"
            )));
        }
        let mut chunks = Vec::new();
        let mut left = count as usize;
        while left > 0 {
            let n = left.min(FRAMES_PER_CHUNK);
            let mut chunk = vec![0u8; FRAMES_PER_CHUNK * frame_bytes].into_boxed_slice();
            self.exact(&mut chunk[..n * frame_bytes], "section FRAMES")?;
            sum.update(&chunk[..n * frame_bytes]);
            chunks.push(chunk);
            left -= n;
        }
        self.close(tag, sum)?;
        Ok((count, chunks))
    }
}

fn tag_name(tag: &[u8; 8]) -> String {
    tag.iter()
        .take_while(|&&b| b != 0)
        .map(|&b| if b.is_ascii_graphic() { b as char } else { '?' })
        .collect()
}

/// Little-endian fields of a section, with the section named in every error.
struct Fields<'a> {
    data: &'a [u8],
    at: usize,
    section: &'static str,
}

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let end = self.at + N;
        let bytes = self.data.get(self.at..end).ok_or_else(|| {
            format!(
                "section {}: ends at byte {} inside a field",
                self.section,
                self.data.len()
            )
        })?;
        self.at = end;
        Ok(bytes.try_into().expect("N bytes"))
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take()?))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    fn end(&self) -> Result<(), String> {
        if self.at != self.data.len() {
            return Err(format!(
                "section {}: {} bytes left over (does not match the header's device)",
                self.section,
                self.data.len() - self.at
            ));
        }
        Ok(())
    }
}

fn fields<'a>(data: &'a [u8], section: &'static str) -> Fields<'a> {
    Fields {
        data,
        at: 0,
        section,
    }
}

fn read_image<R: Read>(r: &mut SectionReader<R>) -> Result<PhoneImage, PhoneError> {
    let mut magic = [0u8; 16];
    r.exact(&mut magic, "the magic number")
        .map_err(|_| r.bad("not a phone file (too short for its magic number)"))?;
    if &magic != MAGIC {
        return Err(r.bad("not a phone file (wrong magic number)"));
    }
    let mut version = [0u8; 4];
    r.exact(&mut version, "the format version")?;
    let version = u32::from_le_bytes(version);
    if version != FORMAT_VERSION && version != FORMAT_VERSION_NO_BINDS {
        return Err(r.bad(format!(
            "format version {version}; this build reads versions {FORMAT_VERSION_NO_BINDS} \
             and {FORMAT_VERSION} (make the phone again with `flashstack phone age`)"
        )));
    }
    let header = r.section(b"HEADER\0\0")?;
    let header: PhoneHeader =
        serde_json::from_slice(&header).map_err(|e| r.bad(format!("section HEADER: {e}")))?;
    header
        .stack
        .device
        .validate()
        .map_err(|e| r.bad(format!("section HEADER: device: {e}")))?;
    let g = header.stack.device.nand.geometry.clone();
    let slot_bytes = header.stack.device.ftl.slot_bytes;
    if slot_bytes == 0 || !g.page_size_bytes.is_multiple_of(slot_bytes) {
        return Err(r.bad("section HEADER: slot size does not divide the page size"));
    }
    let spp = (g.page_size_bytes / slot_bytes) as usize;
    let (nblocks, ppb) = (g.blocks() as usize, g.pages_per_block as usize);
    let pages = nblocks * ppb;
    let blocks = r.section(b"BLOCKS\0\0")?;
    let mut nand = NandParts {
        erase_count: Vec::with_capacity(nblocks),
        write_ptr: Vec::with_capacity(nblocks),
        bad: Vec::with_capacity(nblocks),
        failing: Vec::with_capacity(nblocks),
        page_flags: vec![0; pages],
        page_seq: vec![0; pages],
        slot_lpn: vec![u32::MAX; pages * spp],
        frames: None,
        dedup: true,
    };
    decode_blocks(&blocks, nblocks, ppb, &mut nand).map_err(|e| r.bad(e))?;
    drop(blocks);
    let programmed: Vec<usize> = (0..nblocks)
        .flat_map(|b| (b * ppb)..(b * ppb + nand.write_ptr[b] as usize))
        .collect();
    let data = r.section(b"PAGES\0\0\0")?;
    let mut f = fields(&data, "PAGES");
    for &p in &programmed {
        nand.page_flags[p] = f.u8().map_err(|e| r.bad(e))?;
        nand.page_seq[p] = f.u64().map_err(|e| r.bad(e))?;
    }
    f.end().map_err(|e| r.bad(e))?;
    let data = r.section(b"LPNS\0\0\0\0")?;
    let mut f = fields(&data, "LPNS");
    for &p in &programmed {
        for s in p * spp..(p + 1) * spp {
            nand.slot_lpn[s] = f.u32().map_err(|e| r.bad(e))?;
        }
    }
    f.end().map_err(|e| r.bad(e))?;
    {
        let data = r.section(b"FRAMEMAP")?;
        let mut slot_frame = vec![NO_FRAME; pages * spp];
        let mut f = fields(&data, "FRAMEMAP");
        for &p in &programmed {
            for frame in &mut slot_frame[p * spp..(p + 1) * spp] {
                *frame = f.u32().map_err(|e| r.bad(e))?;
            }
        }
        f.end().map_err(|e| r.bad(e))?;
        drop(data);
        let (frame_count, chunks) = r.frames(slot_bytes as usize)?;
        nand.frames = Some(StoredFrames {
            slot_frame,
            frame_count,
            chunks,
        });
    }
    let data = r.section(b"TRIMLOG\0")?;
    let trim_log = decode_trims(&data).map_err(|e| r.bad(e))?;
    let bind_log = match version {
        FORMAT_VERSION_NO_BINDS => Vec::new(),
        _ => decode_binds(&r.section(b"BINDLOG\0")?).map_err(|e| r.bad(e))?,
    };
    let mapping = decode_u32s(&r.section(b"MAPPING\0")?, "MAPPING").map_err(|e| r.bad(e))?;
    let valid = decode_u32s(&r.section(b"VALID\0\0\0")?, "VALID").map_err(|e| r.bad(e))?;
    if valid.len() != nblocks {
        return Err(r.bad(format!(
            "section VALID: {} blocks where the device has {nblocks}",
            valid.len()
        )));
    }
    r.section(b"END\0\0\0\0\0")?;
    if r.left != 0 {
        return Err(r.bad(format!("{} bytes after the END section", r.left)));
    }
    Ok(PhoneImage {
        header,
        device: DeviceParts {
            nand,
            trim_log,
            bind_log,
        },
        mapping,
        valid,
    })
}

fn decode_blocks(
    data: &[u8],
    nblocks: usize,
    ppb: usize,
    nand: &mut NandParts,
) -> Result<(), String> {
    let mut f = fields(data, "BLOCKS");
    for b in 0..nblocks {
        nand.erase_count.push(f.u32()?);
        let written = f.u16()?;
        if written as usize > ppb {
            return Err(format!(
                "section BLOCKS: block {b} has {written} pages programmed, more than {ppb}"
            ));
        }
        nand.write_ptr.push(written);
        nand.bad.push(f.u8()? != 0);
        nand.failing.push(f.u8()? != 0);
    }
    f.end()
}

fn decode_trims(data: &[u8]) -> Result<Vec<(u32, Vec<u32>)>, String> {
    let mut f = fields(data, "TRIMLOG");
    let n = f.u32()?;
    let mut log = Vec::new();
    for _ in 0..n {
        let page = f.u32()?;
        let count = f.u32()? as usize;
        if count > data.len() / 4 {
            return Err(format!(
                "section TRIMLOG: page {page} claims {count} entries"
            ));
        }
        let mut lpns = Vec::with_capacity(count);
        for _ in 0..count {
            lpns.push(f.u32()?);
        }
        log.push((page, lpns));
    }
    f.end()?;
    Ok(log)
}

/// Remap record pages: per page its index and its (logical page, slot) binds.
type BindLog = Vec<(u32, Vec<(u32, u32)>)>;

/// `BINDLOG`: the number of record pages, then per page its index, its number of binds
/// and each bind's logical page and slot.
fn encode_binds(log: &BindLog) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(log.len() as u32).to_le_bytes());
    for (page, binds) in log {
        out.extend_from_slice(&page.to_le_bytes());
        out.extend_from_slice(&(binds.len() as u32).to_le_bytes());
        for (lpn, slot) in binds {
            out.extend_from_slice(&lpn.to_le_bytes());
            out.extend_from_slice(&slot.to_le_bytes());
        }
    }
    out
}

fn decode_binds(data: &[u8]) -> Result<BindLog, String> {
    let mut f = fields(data, "BINDLOG");
    let n = f.u32()?;
    let mut log = Vec::new();
    for _ in 0..n {
        let page = f.u32()?;
        let count = f.u32()? as usize;
        if count > data.len() / 8 {
            return Err(format!("section BINDLOG: page {page} claims {count} binds"));
        }
        let mut binds = Vec::with_capacity(count);
        for _ in 0..count {
            binds.push((f.u32()?, f.u32()?));
        }
        log.push((page, binds));
    }
    f.end()?;
    Ok(log)
}

fn decode_u32s(data: &[u8], section: &'static str) -> Result<Vec<u32>, String> {
    if !data.len().is_multiple_of(4) {
        return Err(format!(
            "section {section}: {} bytes is not a whole number of entries",
            data.len()
        ));
    }
    Ok(data
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4")))
        .collect())
}
