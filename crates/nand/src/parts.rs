//! The array's durable state in portable form, to save a device and build it again: wear,
//! bad blocks, every page's spare area and the stored bytes. Timing state (the planes'
//! and channels' queues) and counters are not part of it: a rebuilt array starts idle,
//! as after [`Nand::power_on`].

use crate::config::ConfigError;
use crate::store::{FrameStore, StoredFrames};
use crate::{oob_flags, Nand, NandConfig, NandCounters, PowerState, NO_LPN};

/// Everything that survives power loss in a [`Nand`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NandParts {
    pub erase_count: Vec<u32>,
    /// Pages programmed per block since its last erase.
    pub write_ptr: Vec<u16>,
    pub bad: Vec<bool>,
    pub failing: Vec<bool>,
    pub page_flags: Vec<u8>,
    pub page_seq: Vec<u64>,
    pub slot_lpn: Vec<u32>,
    /// Stored bytes, when the array keeps contents.
    pub frames: Option<StoredFrames>,
    /// Whether identical frames are stored once ([`Nand::enable_frame_dedup`]).
    pub dedup: bool,
}

fn invalid(field: &str, reason: String) -> ConfigError {
    ConfigError::new(format!("state.{field}"), reason)
}

impl Nand {
    /// The durable state, leaving the array as it was.
    pub fn to_parts(&self) -> NandParts {
        NandParts {
            erase_count: self.erase_count.clone(),
            write_ptr: self.write_ptr.clone(),
            bad: self.bad.clone(),
            failing: self.failing.clone(),
            page_flags: self.page_flags.clone(),
            page_seq: self.page_seqs(),
            slot_lpn: self.canonical_slot_lpns(),
            frames: self.store.as_ref().map(FrameStore::export),
            dedup: self.store.as_ref().is_some_and(FrameStore::dedup_enabled),
        }
    }

    /// Every slot's logical page, `NO_LPN` throughout unprogrammed pages (whose entries
    /// the live table leaves unspecified).
    fn canonical_slot_lpns(&self) -> Vec<u32> {
        let mut lpns = self.slot_lpn.clone();
        let spp = self.slots_per_page as usize;
        for (page, &flags) in self.page_flags.iter().enumerate() {
            if flags & oob_flags::PROGRAMMED == 0 {
                lpns[page * spp..(page + 1) * spp].fill(NO_LPN);
            }
        }
        lpns
    }

    /// An array of `config` holding `parts`, idle and powered, every structure checked
    /// against the geometry and against each other; an inconsistency is an error naming
    /// the structure and the block or page.
    pub fn from_parts(
        config: NandConfig,
        slot_bytes: u32,
        seed: u64,
        parts: NandParts,
    ) -> Result<Nand, ConfigError> {
        Nand::assemble(config, slot_bytes, seed, parts, None)
    }

    /// An array of `config` holding `parts`, a state this program laid out itself (a
    /// constructed steady state), whose fully programmed blocks carry consecutive sequence
    /// numbers from `first_seq[block]` (0: the numbers are those in `parts.page_seq`,
    /// which are zero in the other blocks). The numbers are not written out, and the
    /// per-page consistency check of [`Nand::from_parts`] runs only in debug builds (its
    /// callers' tests rebuild the same state through [`Nand::from_parts`]): states read
    /// from outside must go through [`Nand::from_parts`].
    pub fn from_consecutive_parts(
        config: NandConfig,
        slot_bytes: u32,
        seed: u64,
        parts: NandParts,
        first_seq: Vec<u64>,
    ) -> Result<Nand, ConfigError> {
        Nand::assemble(config, slot_bytes, seed, parts, Some(first_seq))
    }

    fn assemble(
        config: NandConfig,
        slot_bytes: u32,
        seed: u64,
        parts: NandParts,
        first_seq: Option<Vec<u64>>,
    ) -> Result<Nand, ConfigError> {
        let store_contents = parts.frames.is_some();
        // Builds the address arithmetic and resources; the tables are replaced below.
        let mut nand = Nand::with_slot_bytes(config, slot_bytes, false, seed)?;
        check_lengths(&nand, &parts)?;
        if let Some(first_seq) = first_seq {
            check_first_seq(&nand, &parts, &first_seq)?;
            if cfg!(debug_assertions) {
                check_pages(&nand, &parts)?;
            }
            nand.first_seq = first_seq;
        } else {
            check_pages(&nand, &parts)?;
        }
        let NandParts {
            erase_count,
            write_ptr,
            bad,
            failing,
            page_flags,
            page_seq,
            slot_lpn,
            frames,
            dedup,
        } = parts;
        nand.erase_count = erase_count;
        nand.write_ptr = write_ptr;
        nand.bad = bad;
        nand.failing = failing;
        nand.page_flags = page_flags;
        nand.page_seq = page_seq;
        nand.slot_lpn = slot_lpn;
        if let Some(frames) = frames {
            let store = FrameStore::import(frames, slot_bytes, dedup)
                .map_err(|reason| invalid("frames", reason))?;
            check_frames(&nand, &store)?;
            nand.store = Some(store);
        }
        debug_assert_eq!(nand.store.is_some(), store_contents);
        nand.power = PowerState::default();
        nand.counters = NandCounters::default();
        nand.timing.reset();
        nand.idle_at_ns = 0;
        Ok(nand)
    }

    /// Stores frames with identical bytes once (a content-addressed store): memory then
    /// follows the distinct bytes held, not the slots. Results never change.
    pub fn enable_frame_dedup(&mut self) {
        if let Some(store) = self.store.as_mut() {
            store.enable_dedup();
        }
    }
}

fn check_lengths(nand: &Nand, parts: &NandParts) -> Result<(), ConfigError> {
    let g = &nand.config.geometry;
    let (blocks, pages) = (g.blocks() as usize, g.pages() as usize);
    let slots = pages * nand.slots_per_page as usize;
    let lengths = [
        ("erase_count", parts.erase_count.len(), blocks),
        ("write_ptr", parts.write_ptr.len(), blocks),
        ("bad", parts.bad.len(), blocks),
        ("failing", parts.failing.len(), blocks),
        ("page_flags", parts.page_flags.len(), pages),
        ("page_seq", parts.page_seq.len(), pages),
        ("slot_lpn", parts.slot_lpn.len(), slots),
    ];
    for (field, got, want) in lengths {
        if got != want {
            return Err(invalid(
                field,
                format!("{got} entries where the geometry has {want}"),
            ));
        }
    }
    if let Some(frames) = &parts.frames {
        if frames.slot_frame.len() != slots {
            return Err(invalid(
                "frames",
                format!(
                    "{} slots where the geometry has {slots}",
                    frames.slot_frame.len()
                ),
            ));
        }
    }
    Ok(())
}

/// Implicit sequence numbers only in fully programmed blocks, whose stored ones are zero
/// (checked per block: the stored ones only in debug builds).
fn check_first_seq(nand: &Nand, parts: &NandParts, first_seq: &[u64]) -> Result<(), ConfigError> {
    let ppb = nand.pages_per_block as usize;
    if first_seq.len() != parts.write_ptr.len() {
        return Err(invalid(
            "first_seq",
            format!(
                "{} entries where the geometry has {}",
                first_seq.len(),
                parts.write_ptr.len()
            ),
        ));
    }
    for (block, (&first, &written)) in first_seq.iter().zip(&parts.write_ptr).enumerate() {
        if first == 0 {
            continue;
        }
        let stored = &parts.page_seq[block * ppb..(block + 1) * ppb];
        if written as usize != ppb || (cfg!(debug_assertions) && stored.iter().any(|&s| s != 0)) {
            return Err(invalid(
                "first_seq",
                format!(
                    "block {block} has implicit sequence numbers but is not full or stores its own"
                ),
            ));
        }
    }
    Ok(())
}

/// Pages below each block's write pointer are programmed, the rest erased.
fn check_pages(nand: &Nand, parts: &NandParts) -> Result<(), ConfigError> {
    let ppb = nand.pages_per_block;
    let spp = nand.slots_per_page as usize;
    for (block, &written) in parts.write_ptr.iter().enumerate() {
        if written as u32 > ppb {
            return Err(invalid(
                "write_ptr",
                format!("block {block}: {written} pages programmed of {ppb}"),
            ));
        }
        let first = block * ppb as usize;
        for i in 0..ppb as usize {
            let page = first + i;
            let programmed = parts.page_flags[page] & oob_flags::PROGRAMMED != 0;
            if programmed != (i < written as usize) {
                return Err(invalid(
                    "page_flags",
                    format!(
                        "page {page} (block {block}, page {i}) is {} but the block has \
                         {written} pages programmed",
                        if programmed { "programmed" } else { "erased" }
                    ),
                ));
            }
            let erased_lpns = parts.slot_lpn[page * spp..(page + 1) * spp]
                .iter()
                .all(|&l| l == NO_LPN);
            if !programmed && (!erased_lpns || parts.page_seq[page] != 0) {
                return Err(invalid(
                    "slot_lpn",
                    format!("erased page {page} carries a spare area"),
                ));
            }
        }
    }
    Ok(())
}

/// Bytes are stored only in programmed, uncorrupted pages.
fn check_frames(nand: &Nand, store: &FrameStore) -> Result<(), ConfigError> {
    let spp = nand.slots_per_page as u64;
    for slot in 0..store.slots() as u64 {
        if !store.has_frame(slot) {
            continue;
        }
        let page = (slot / spp) as usize;
        let flags = nand.page_flags[page];
        if flags & oob_flags::PROGRAMMED == 0 || flags & oob_flags::CORRUPT != 0 {
            return Err(invalid(
                "frames",
                format!("slot {slot} holds bytes but its page {page} is not readable data"),
            ));
        }
    }
    Ok(())
}
