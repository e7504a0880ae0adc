//! Pages kept by reference: a device whose host data all comes from a generator (the
//! content model) can keep each slot as (LBA, version, form) and regenerate its bytes when
//! read, instead of storing them (`docs/ldc-reproduction.md`, "Pages by reference"). The
//! FTL still handles real bytes everywhere; only what the NAND store keeps changes.

use std::cell::RefCell;

use flashstack_block::{BlockDevice, BlockError, Completion, Hints, Payload};
use flashstack_codec::CodecKind;
use flashstack_nand::{ContentRef, SlotOracle};
use flashstack_sim::Nanos;

use crate::compress::Compressor;
use crate::compression::ControllerTiming;
use crate::Ftl;
use flashstack_nand::ConfigError;

/// The generator of the host's pages: `fill` must be a pure function of its arguments
/// and give the bytes the host wrote as that version of that LBA.
pub trait PageSource: Send {
    fn fill(&self, lba: u64, version: u32, out: &mut [u8]);
}

/// Versions of the host write being served ([`Ftl::write_versioned`]).
#[derive(Debug, Default)]
pub(crate) struct ContentTags {
    first_lba: u64,
    versions: Vec<u32>,
}

/// Regenerates a slot: the page from the source, encoded as the FTL stores a compressed
/// fragment when the form says so. Keeps the last fragment: a fragment's slots are read
/// one after another.
struct FragmentOracle {
    pages: Box<dyn PageSource>,
    state: RefCell<OracleState>,
}

struct OracleState {
    compressor: Compressor,
    page: Vec<u8>,
    fragment: Vec<u8>,
    cached: Option<ContentRef>,
}

impl SlotOracle for FragmentOracle {
    fn regenerate(&self, content: ContentRef, part: u32, out: &mut [u8]) {
        let state = &mut *self.state.borrow_mut();
        let sb = out.len();
        if state.cached != Some(content) {
            self.pages
                .fill(content.lba as u64, content.version, &mut state.page);
            if content.compressed {
                state
                    .compressor
                    .encode(&state.page, &mut state.fragment, sb);
            } else {
                state.fragment.clone_from(&state.page);
            }
            state.cached = Some(content);
        }
        let at = part as usize * sb;
        match state.fragment.get(at..at + sb) {
            Some(bytes) => out.copy_from_slice(bytes),
            // Beyond the fragment: not these bytes (the fingerprint check names it).
            None => out.fill(0),
        }
    }
}

impl Ftl {
    /// Keeps host pages by reference from now on: slots the host path writes with pages
    /// whose versions it was told ([`Ftl::write_versioned`]) are stored as references that
    /// `pages` regenerates. `verify`: compare every referenced slot's bytes when programmed
    /// (slow; tests). Needs a device storing contents.
    pub fn set_page_source(
        &mut self,
        pages: Box<dyn PageSource>,
        verify: bool,
    ) -> Result<(), ConfigError> {
        // A buffered page is programmed after its write returns, when its version is no
        // longer known here: it would be stored by reference under a later version.
        if !self.config.ftl.write_buffer.is_off() {
            return Err(ConfigError::new(
                "ftl.write_buffer",
                "pages by reference do not follow versions through the controller write \
                 buffer: turn one of them off",
            ));
        }
        if self.super_page {
            return Err(ConfigError::new(
                "ftl.allocation",
                "pages by reference do not follow versions through pages held for a \
                 super-page: use allocation = \"page\"",
            ));
        }
        if self.maps_units() {
            return Err(ConfigError::new(
                "ftl.mapping_unit_bytes",
                "pages by reference follow host versions 4 KiB at a time; a page-sized \
                 mapping unit copies the rest of a unit on every partial update: use 4096",
            ));
        }
        let codec = self
            .config
            .ftl
            .compression
            .as_ref()
            .map_or(CodecKind::default(), |c| c.codec);
        let compressor = Compressor::new(None, codec, ControllerTiming::default())
            .map_err(|e| ConfigError::new("ftl.compression.codec", e.to_string()))?;
        let oracle = FragmentOracle {
            pages,
            state: RefCell::new(OracleState {
                compressor,
                page: vec![0; flashstack_block::LBA_SIZE],
                fragment: Vec::new(),
                cached: None,
            }),
        };
        match self.nand.keep_by_reference(Box::new(oracle), verify) {
            true => Ok(()),
            false => Err(ConfigError::new(
                "store_contents",
                "pages by reference need a device storing contents",
            )),
        }
    }

    /// `write` of `bytes` whose LBAs hold `versions` of the page source's pages (one per
    /// LBA): the same device behaviour, with the slots kept by reference.
    pub fn write_versioned(
        &mut self,
        now_ns: Nanos,
        lba: u64,
        bytes: &[u8],
        versions: &[u32],
        hints: Hints,
    ) -> Result<Completion, BlockError> {
        self.content_tags.first_lba = lba;
        self.content_tags.versions.clear();
        self.content_tags.versions.extend_from_slice(versions);
        let done = self.write(now_ns, lba, Payload::Bytes(bytes), hints);
        self.content_tags.versions.clear();
        done
    }

    /// Slots kept by reference now, compressed fragments ever programmed as references,
    /// and announced references whose bytes did not match (verification on).
    pub fn pages_by_reference(&self) -> (u64, u64, u64) {
        self.nand.reference_counts()
    }

    /// The host path put `lpn`'s page at `len` slots from `slot`: raw when `len` is a whole
    /// page, else as a compressed fragment. Announces its reference if its version is known.
    pub(crate) fn announce_host_content(&mut self, lpn: u32, slot: u32, len: u32) {
        let tags = &self.content_tags;
        let Some(i) = (lpn as u64).checked_sub(tags.first_lba) else {
            return;
        };
        let Some(&version) = tags.versions.get(i as usize) else {
            return;
        };
        let content = ContentRef {
            lba: lpn,
            version,
            compressed: len < self.slots_per_lpn,
        };
        self.nand.expect_content(slot, len, content);
    }

    /// caGC compressed the raw page at `old` into `len` slots from `slot`.
    pub(crate) fn announce_compressed_copy(&mut self, old: u32, slot: u32, len: u32) {
        if let Some(content) = self.nand.content_of_page_at(old) {
            if !content.compressed {
                let content = ContentRef {
                    compressed: true,
                    ..content
                };
                self.nand.expect_content(slot, len, content);
            }
        }
    }
}
