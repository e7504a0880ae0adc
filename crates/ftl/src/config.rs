//! Configuration of the FTL and the host interface, and of a whole device (NAND + FTL + host).

use flashstack_nand::{ConfigError, NandConfig};
use serde::{Deserialize, Serialize};

/// How writes are split into separate write frontiers (open blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StreamMode {
    /// One frontier for all host data.
    Single,
    /// Hot, warm and cold frontiers from the temperature hint (no hint = warm).
    Temperature,
    /// One frontier per host stream id (modulo `streams_max`), no hint = stream 0.
    StreamId,
}

/// How host pages are placed on the planes of a die (`stream.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Allocation {
    /// Page by page: one cursor over the units shared by every host stream, each page
    /// programmed as soon as its buffer is full (MQSim's allocator; the default).
    #[default]
    Page,
    /// Super-pages: each host stream has its own cursor, so its frontiers on the planes of
    /// a die advance in lockstep (same page offset), and its full pages wait until it has
    /// one for every plane of the die (or a flush or FUA forces them out, padded), then
    /// go to the NAND together, where the die rules may run them as one multi-plane
    /// program (phone controllers' super-blocks).
    SuperPage,
}

impl Allocation {
    pub fn is_default(&self) -> bool {
        *self == Allocation::Page
    }
}

/// Victim selection policy for garbage collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VictimPolicyKind {
    /// Fewest valid pages.
    Greedy,
    /// Highest (1 − u) / 2u × age, Rosenblum and Ousterhout's LFS cleaner.
    CostBenefit,
    /// LDC's caGC: lowest valid data × the block's compression ratio (Eq. 4).
    CompressionAware,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcConfig {
    pub policy: VictimPolicyKind,
    /// Foreground GC runs on a die whose free blocks fall to this count.
    pub foreground_free_blocks: u32,
    /// Background GC, in idle time, tops each die up to this many free blocks.
    pub background_free_blocks: u32,
    /// Idle time after which background GC may start.
    pub idle_threshold_ns: u64,
    /// Blocks the policy examines per decision, fewest-valid first (F2FS bounds its victim
    /// search the same way). Greedy needs only the first.
    pub candidates_max: u32,
    /// What a GC cycle collects under `ftl.allocation = "super-page"`: one plane's block
    /// (`plane`, the default when absent) or a block of every plane of the die together
    /// (`super-block`, `ufs31`'s). Page allocation always collects one plane's block.
    #[serde(default, skip_serializing_if = "GcCollect::is_default")]
    pub collect: GcCollect,
    /// Idle-time GC takes only victims with at least this share of their slots invalid,
    /// in thousandths (0, the default and absent from a config: any victim that frees a
    /// page, as foreground GC; `ufs31` assumes 125). Idle GC towards a free-block target a
    /// full plane cannot reach otherwise packs nearly valid blocks until the next request
    /// arrives.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub background_min_invalid_permille: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// What one GC cycle collects with super-page allocation (`gc.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcCollect {
    /// One plane's victim at a time, its moves spread over the die's planes (the only
    /// kind page allocation knows; absent from a config at this value, so every config
    /// written before the field reads as it did).
    #[default]
    Plane,
    /// A victim on every plane of the die, each plane's own choice under the victim
    /// policy, moved through the die's relocation stream together and erased together:
    /// each plane gets back the block it gave (controllers' super-block GC).
    SuperBlock,
}

impl GcCollect {
    pub fn is_default(&self) -> bool {
        *self == GcCollect::Plane
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WearConfig {
    /// Dynamic wear levelling: new blocks are taken least-worn first (else FIFO).
    pub dynamic: bool,
    /// Static wear levelling: when a die's erase-count spread exceeds this, the coldest
    /// block's data is moved so the block rejoins the pool. `None` turns it off.
    pub static_threshold: Option<u32>,
    /// Erases on a die between two static wear-levelling checks.
    pub check_interval_erases: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtlConfig {
    /// Spare capacity over user capacity: physical = user × (1 + ratio).
    pub overprovisioning_ratio: f64,
    pub streams: StreamMode,
    /// Upper bound on host frontiers (StreamId mode).
    pub streams_max: u32,
    pub gc: GcConfig,
    pub wear: WearConfig,
    /// The physical mapping unit in bytes: 4096 (one logical page per slot), or 512–2048
    /// so that logical pages stored in fewer bytes (compressed) share flash pages.
    #[serde(default = "default_slot_bytes")]
    pub slot_bytes: u32,
    /// The logical mapping unit in bytes: 4096 (one mapping entry per 4 KiB logical page,
    /// the default), or the flash page size (`nand.geometry.page_size_bytes`), as MQSim's
    /// PAGE_LEVEL mapping and many controllers map: one entry per page, and a host write
    /// to part of a unit reads the rest of it from flash and programs the whole unit
    /// (`unit.rs`).
    #[serde(
        default = "default_mapping_unit_bytes",
        skip_serializing_if = "is_default_mapping_unit"
    )]
    pub mapping_unit_bytes: u32,
    /// Logical capacity exported per byte of physical budget (1.0 = an ordinary device).
    /// Above 1 the device exports more than its flash and needs compression (a CSD);
    /// writes beyond the flash fail with no-space (`csd.rs`).
    #[serde(
        default = "default_exported_capacity_factor",
        skip_serializing_if = "is_one"
    )]
    pub exported_capacity_factor: f64,
    /// Demand-based mapping-table cache (DFTL): only part of the L2P table in SRAM,
    /// translation pages on flash (`cmt.rs`). Off (the whole table in SRAM) by default.
    #[serde(default, skip_serializing_if = "MappingCacheConfig::is_off")]
    pub mapping_cache: MappingCacheConfig,
    /// Controller write buffer (`wbuf.rs`): host writes acknowledged once in DRAM/SRAM,
    /// destaged to flash later. Off (every write waits for its page) by default.
    #[serde(default, skip_serializing_if = "WriteBufferConfig::is_off")]
    pub write_buffer: WriteBufferConfig,
    /// In-device compression (LDC and its baselines); absent = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<CompressionConfig>,
    /// Host page placement: `page` (default) or `super-page` (`stream.rs`).
    #[serde(default, skip_serializing_if = "Allocation::is_default")]
    pub allocation: Allocation,
}

/// Compression inside the FTL: which policy decides, which codec compresses, and what the
/// controller costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompressionConfig {
    pub policy: crate::compression::CompressionPolicyKind,
    /// The page codec (`lzo1x-1`, `lz4`, `zstd:L`, `zlib:L`; default `lzo1x-1`, the codec
    /// the LDC paper measured and the predictor table is fitted to).
    #[serde(default)]
    pub codec: flashstack_codec::CodecKind,
    #[serde(default)]
    pub controller: crate::compression::ControllerTiming,
    /// Which compressed fragments caGC may write across page boundaries (LDC only).
    #[serde(default)]
    pub gc_straddle: crate::compression::GcStraddle,
    /// Which policies' GC may straddle: `ca-gc` (default: LDC's only) or `every-policy`.
    #[serde(
        default,
        skip_serializing_if = "crate::compression::GcStraddleScope::is_default"
    )]
    pub gc_straddle_scope: crate::compression::GcStraddleScope,
    /// Which host log raw pages join: `by-ratio` (default: SC and LDC keep ten, one per 0.1
    /// of predicted ratio, §5.3) or `one` (a single raw log for every policy).
    #[serde(
        default,
        skip_serializing_if = "crate::compression::RawStreams::is_default"
    )]
    pub raw_streams: crate::compression::RawStreams,
    /// Which 10% of a page the predictor samples: `fixed` offsets (default) or `per-page`
    /// offsets drawn for each LPN (`docs/predictor.md`).
    #[serde(default)]
    pub predictor_sample: crate::predictor::PredictorSample,
}

impl CompressionConfig {
    /// `policy` with every other field at its default (the LZO1X-1 codec, the default
    /// controller timing, straddling and raw logs as the LDC paper has them).
    pub fn with_policy(policy: crate::compression::CompressionPolicyKind) -> Self {
        Self {
            policy,
            codec: Default::default(),
            controller: Default::default(),
            gc_straddle: Default::default(),
            gc_straddle_scope: Default::default(),
            raw_streams: Default::default(),
            predictor_sample: Default::default(),
        }
    }
}

/// Which buffered writes go to flash next (`wbuf.rs`, `destage_group`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DestagePolicyKind {
    /// Oldest first, a whole flash page at a time: the oldest buffered LBA and the next
    /// oldest of its stream, up to one page.
    #[default]
    Fifo,
}

/// The controller write buffer: DRAM (or SRAM) holding host writes until they are
/// programmed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteBufferConfig {
    /// Bytes of buffer (MQSim's `Data_Cache_Capacity`); 0 = off. At least one flash page.
    #[serde(default)]
    pub capacity_bytes: u64,
    #[serde(default)]
    pub destage: DestagePolicyKind,
    /// Time to copy 4 KiB into the buffer once it has crossed the host link (one DRAM
    /// channel, requests in turn); 0 = free.
    #[serde(default)]
    pub dram_ns_per_4k: u64,
    /// Capacitor-backed (enterprise drives): a power cut destages the buffer during the
    /// hold-up time and loses nothing. Otherwise a cut loses what is buffered.
    #[serde(default)]
    pub power_loss_protected: bool,
}

impl WriteBufferConfig {
    pub fn is_off(&self) -> bool {
        self.capacity_bytes == 0
    }
}

/// Which cached mapping entry leaves SRAM first (`cmt.rs`, `choose_victim`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CmtPolicyKind {
    /// Least recently used.
    Lru,
    /// Segmented LRU as DFTL uses it: a hit promotes an entry to a protected segment
    /// (half the cache); eviction takes the probationary segment's LRU first.
    #[default]
    SegmentedLru,
}

/// How the mapping entries of data moved without a host request (GC, wear levelling,
/// trims) reach the table when they are not cached (`cmt.rs`, [`crate::cmt::relocation_update`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RelocationUpdates {
    /// DFTL's batch update: each translation page holding such entries is read and
    /// programmed once per relocated batch (a victim block, a trim).
    #[default]
    WriteThrough,
    /// MQSim's: the entries enter the cached mapping table as dirty (evicting others as a
    /// host miss would) and reach flash when they are evicted in turn.
    Cached,
}

/// The mapping-table cache: how much controller SRAM holds mapping entries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MappingCacheConfig {
    /// SRAM for cached mapping entries; 0 = off (the whole table is resident).
    #[serde(default)]
    pub sram_bytes: u64,
    #[serde(default)]
    pub policy: CmtPolicyKind,
    /// SRAM bytes one cached entry takes (logical and physical page numbers: 8, as
    /// DFTL's and MQSim's cached mapping table count it).
    #[serde(default = "default_cmt_entry_bytes")]
    pub entry_bytes: u32,
    /// Where updates of uncached entries from GC, wear levelling and trims go:
    /// `write-through` (default) or `cached`.
    #[serde(default, skip_serializing_if = "RelocationUpdates::is_default")]
    pub relocation_updates: RelocationUpdates,
    /// UFS Host Performance Booster (`hpb.rs`): the host caches entries and sends them
    /// with reads. Off by default.
    #[serde(default, skip_serializing_if = "HpbConfig::is_off")]
    pub hpb: HpbConfig,
}

/// UFS HPB (JEDEC JESD220-3 / -3A): the host's memory for map entries and the map's
/// region and subregion sizes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HpbConfig {
    /// Host DRAM for HPB entries (8 bytes per 4 KiB); 0 = off. The Linux driver's
    /// memory pool defaulted to 2 MiB ("a cache size of 2MB can cache ppn in the 1GB
    /// range").
    #[serde(default)]
    pub host_map_bytes: u64,
    /// Region and subregion sizes (powers of two, `512 B × 2^n` in the geometry
    /// descriptor's bHPBRegionSize / bHPBSubRegionSize).
    #[serde(default = "default_hpb_region_bytes")]
    pub region_bytes: u64,
    #[serde(default = "default_hpb_subregion_bytes")]
    pub subregion_bytes: u64,
    /// 1: HPB 1.0, an HPB READ carries one 4 KiB block; 2: HPB 2.0, up to 255 blocks.
    #[serde(default = "default_hpb_version")]
    pub version: u8,
    /// Misses on a region after which the device recommends the subregion read.
    #[serde(default = "default_hpb_activation_reads")]
    pub activation_reads: u32,
}

impl Default for HpbConfig {
    fn default() -> Self {
        HpbConfig {
            host_map_bytes: 0,
            region_bytes: default_hpb_region_bytes(),
            subregion_bytes: default_hpb_subregion_bytes(),
            version: default_hpb_version(),
            activation_reads: default_hpb_activation_reads(),
        }
    }
}

impl HpbConfig {
    pub fn is_off(&self) -> bool {
        self.host_map_bytes == 0
    }
    /// Subregions the host memory holds.
    pub fn subregions_max(&self) -> u64 {
        self.host_map_bytes / (self.subregion_bytes / 4096 * crate::HPB_ENTRY_BYTES)
    }
    /// Blocks one HPB READ may carry.
    pub fn max_blocks(&self) -> u32 {
        match self.version {
            1 => 1,
            _ => 255,
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let field = |f: &str| format!("ftl.mapping_cache.hpb.{f}");
        let pow2 = |b: u64| b >= 4096 && b.is_power_of_two();
        if !pow2(self.subregion_bytes) {
            return Err(ConfigError::new(
                field("subregion_bytes"),
                "must be a power of two of at least 4096",
            ));
        }
        if !pow2(self.region_bytes) || self.region_bytes < self.subregion_bytes {
            return Err(ConfigError::new(
                field("region_bytes"),
                "must be a power of two and at least subregion_bytes",
            ));
        }
        if self.subregions_max() == 0 {
            return Err(ConfigError::new(
                field("host_map_bytes"),
                "must hold at least one subregion's entries (8 bytes per 4 KiB)",
            ));
        }
        if !(1..=2).contains(&self.version) {
            return Err(ConfigError::new(field("version"), "must be 1 or 2"));
        }
        if self.activation_reads == 0 {
            return Err(ConfigError::new(
                field("activation_reads"),
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

fn default_hpb_region_bytes() -> u64 {
    32 << 20
}

fn default_hpb_subregion_bytes() -> u64 {
    4 << 20
}

fn default_hpb_version() -> u8 {
    2
}

fn default_hpb_activation_reads() -> u32 {
    8
}

impl Default for MappingCacheConfig {
    fn default() -> Self {
        MappingCacheConfig {
            sram_bytes: 0,
            policy: CmtPolicyKind::default(),
            entry_bytes: default_cmt_entry_bytes(),
            relocation_updates: RelocationUpdates::default(),
            hpb: HpbConfig::default(),
        }
    }
}

impl RelocationUpdates {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl MappingCacheConfig {
    pub fn is_off(&self) -> bool {
        self.sram_bytes == 0
    }
    /// Entries the cache holds.
    pub fn entries(&self) -> u64 {
        self.sram_bytes / self.entry_bytes.max(1) as u64
    }
}

fn default_cmt_entry_bytes() -> u32 {
    8
}

fn default_exported_capacity_factor() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

fn default_slot_bytes() -> u32 {
    4096
}

fn default_mapping_unit_bytes() -> u32 {
    4096
}

fn is_default_mapping_unit(bytes: &u32) -> bool {
    *bytes == default_mapping_unit_bytes()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Requests the device accepts at once: 1 for eMMC, up to 32 for UFS.
    pub queue_depth: u32,
    /// Firmware time per request on the controller CPU.
    pub controller_overhead_ns: u64,
    /// Host-link time to move one 4 KiB block (0 = not modelled).
    pub link_ns_per_4k: u64,
}

/// A whole device: what a preset or a `--device FILE.toml` defines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub nand: NandConfig,
    pub ftl: FtlConfig,
    pub host: HostConfig,
}

impl DeviceConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.nand.validate()?;
        let f = &self.ftl;
        if !(f.overprovisioning_ratio.is_finite() && f.overprovisioning_ratio >= 0.0) {
            return Err(ConfigError::new(
                "ftl.overprovisioning_ratio",
                "must be a non-negative number",
            ));
        }
        if f.streams_max == 0 || f.streams_max > 64 {
            return Err(ConfigError::new(
                "ftl.streams_max",
                "must be between 1 and 64",
            ));
        }
        if f.gc.foreground_free_blocks < 2 {
            return Err(ConfigError::new(
                "ftl.gc.foreground_free_blocks",
                "at least 2: GC needs a block to move valid data into",
            ));
        }
        if f.gc.background_free_blocks < f.gc.foreground_free_blocks {
            return Err(ConfigError::new(
                "ftl.gc.background_free_blocks",
                "must be at least ftl.gc.foreground_free_blocks",
            ));
        }
        if !(512..=4096).contains(&f.slot_bytes) || !f.slot_bytes.is_power_of_two() {
            return Err(ConfigError::new(
                "ftl.slot_bytes",
                "must be 512, 1024, 2048 or 4096",
            ));
        }
        self.validate_mapping_unit()?;
        if let Some(c) = &f.compression {
            if f.slot_bytes >= 4096 && c.policy != crate::compression::CompressionPolicyKind::Pm {
                return Err(ConfigError::new(
                    "ftl.slot_bytes",
                    "compression needs slots smaller than 4096 bytes (512 is typical)",
                ));
            }
            if c.controller.clock_mhz == 0 {
                return Err(ConfigError::new(
                    "ftl.compression.controller.clock_mhz",
                    "must be > 0",
                ));
            }
        }
        let factor = f.exported_capacity_factor;
        if !(factor.is_finite()
            && (1.0..=crate::csd::EXPORTED_CAPACITY_FACTOR_MAX).contains(&factor))
        {
            return Err(ConfigError::new(
                "ftl.exported_capacity_factor",
                format!(
                    "must be between 1 and {}",
                    crate::csd::EXPORTED_CAPACITY_FACTOR_MAX
                ),
            ));
        }
        let compresses = f
            .compression
            .as_ref()
            .is_some_and(|c| c.policy != crate::compression::CompressionPolicyKind::Pm);
        if factor > 1.0 && !compresses {
            return Err(ConfigError::new(
                "ftl.exported_capacity_factor",
                "a device exports more than its flash only if it compresses (ftl.compression)",
            ));
        }
        let cache = &f.mapping_cache;
        if !cache.hpb.is_off() {
            if cache.is_off() {
                return Err(ConfigError::new(
                    "ftl.mapping_cache.hpb",
                    "HPB needs a device that caches its mapping table \
                     (ftl.mapping_cache.sram_bytes > 0)",
                ));
            }
            cache.hpb.validate()?;
        }
        if !cache.is_off() {
            if !(4..=16).contains(&cache.entry_bytes) {
                return Err(ConfigError::new(
                    "ftl.mapping_cache.entry_bytes",
                    "must be between 4 and 16",
                ));
            }
            if cache.entries() < 2 {
                return Err(ConfigError::new(
                    "ftl.mapping_cache.sram_bytes",
                    "must hold at least two entries (0 turns the cache off)",
                ));
            }
            if f.compression.is_some() || f.slot_bytes != 4096 {
                return Err(ConfigError::new(
                    "ftl.mapping_cache",
                    "the mapping cache is implemented for plain 4 KiB page mapping only \
                     (no compression, ftl.slot_bytes = 4096)",
                ));
            }
        }
        let wb = &f.write_buffer;
        if !wb.is_off() {
            let page = self.nand.geometry.page_size_bytes as u64;
            if wb.capacity_bytes < page {
                return Err(ConfigError::new(
                    "ftl.write_buffer.capacity_bytes",
                    format!(
                        "{} bytes is less than one flash page ({page} bytes): the buffer \
                         destages whole pages (0 turns it off)",
                        wb.capacity_bytes
                    ),
                ));
            }
            if !wb
                .capacity_bytes
                .is_multiple_of(flashstack_block::LBA_SIZE as u64)
            {
                return Err(ConfigError::new(
                    "ftl.write_buffer.capacity_bytes",
                    "must be a multiple of 4096 (the buffer holds 4 KiB logical pages)",
                ));
            }
            if f.compression.is_some() {
                return Err(ConfigError::new(
                    "ftl.write_buffer",
                    "the write buffer is implemented for uncompressed devices only \
                     (no ftl.compression)",
                ));
            }
        }
        self.validate_allocation()?;
        if f.gc.candidates_max == 0 {
            return Err(ConfigError::new(
                "ftl.gc.candidates_max",
                "must be at least 1",
            ));
        }
        if f.gc.background_min_invalid_permille > 1000 {
            return Err(ConfigError::new(
                "ftl.gc.background_min_invalid_permille",
                "is a share of a block in thousandths: at most 1000",
            ));
        }
        if f.wear.check_interval_erases == 0 {
            return Err(ConfigError::new(
                "ftl.wear.check_interval_erases",
                "must be at least 1",
            ));
        }
        if self.host.queue_depth == 0 || self.host.queue_depth > 1024 {
            return Err(ConfigError::new(
                "host.queue_depth",
                "must be between 1 and 1024",
            ));
        }
        Ok(())
    }

    /// `ftl.allocation = "super-page"` holds full pages of plain 4 KiB slots: what it
    /// cannot be combined with.
    fn validate_allocation(&self) -> Result<(), ConfigError> {
        let f = &self.ftl;
        if f.allocation != Allocation::SuperPage {
            return Ok(());
        }
        let refuse = |what: &str| {
            Err(ConfigError::new(
                "ftl.allocation",
                format!(
                    "super-page allocation is implemented for {what}; \
                     set ftl.allocation = \"page\" to combine it"
                ),
            ))
        };
        if f.compression.is_some() || f.slot_bytes != 4096 {
            return refuse(
                "uncompressed 4 KiB slots only (no ftl.compression, ftl.slot_bytes = 4096)",
            );
        }
        if !f.write_buffer.is_off() {
            return refuse("devices without a controller write buffer only (ftl.write_buffer)");
        }
        if f.mapping_unit_bytes != 4096 {
            return refuse("4 KiB mapping only (ftl.mapping_unit_bytes = 4096)");
        }
        Ok(())
    }

    /// `ftl.mapping_unit_bytes`: 4 KiB or the flash page, and what a page-sized unit
    /// cannot be combined with.
    fn validate_mapping_unit(&self) -> Result<(), ConfigError> {
        let f = &self.ftl;
        let unit = f.mapping_unit_bytes;
        let page = self.nand.geometry.page_size_bytes;
        let field = "ftl.mapping_unit_bytes";
        if unit != 4096 && unit != page {
            return Err(ConfigError::new(
                field,
                format!(
                    "{unit} bytes: must be 4096 (4 KiB mapping) or the flash page size \
                     ({page} bytes, nand.geometry.page_size_bytes)"
                ),
            ));
        }
        if unit == 4096 {
            return Ok(());
        }
        if f.compression.is_some() || f.slot_bytes != 4096 {
            return Err(ConfigError::new(
                field,
                format!(
                    "a {unit}-byte mapping unit maps whole 4 KiB slots: not with \
                     ftl.compression or ftl.slot_bytes below 4096 (compressed fragments \
                     need 4 KiB mapping)"
                ),
            ));
        }
        if !f.mapping_cache.hpb.is_off() {
            return Err(ConfigError::new(
                field,
                format!(
                    "HPB entries cover 4 KiB each: ftl.mapping_cache.hpb needs \
                     ftl.mapping_unit_bytes = 4096, not {unit}"
                ),
            ));
        }
        Ok(())
    }

    /// Parses a device TOML file's text; errors name the field or line.
    pub fn from_toml(text: &str) -> Result<DeviceConfig, ConfigError> {
        let config: DeviceConfig = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
        config.validate()?;
        Ok(config)
    }

    /// Whether the device compresses pages (any compression policy but PM), which needs
    /// the pages' contents stored.
    pub fn compresses(&self) -> bool {
        self.ftl
            .compression
            .as_ref()
            .is_some_and(|c| c.policy != crate::compression::CompressionPolicyKind::Pm)
    }

    /// User capacity in bytes: what the host can address on this device.
    pub fn user_capacity_bytes(&self) -> Result<u64, ConfigError> {
        self.validate()?;
        let budget = crate::user_capacity_lbas(self, crate::host_streams(self))?;
        Ok(
            crate::csd::exported_lbas(budget, self.ftl.exported_capacity_factor)
                * flashstack_block::LBA_SIZE as u64,
        )
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("device configs always serialise")
    }
}

/// A TOML error as a [`ConfigError`] naming the dotted field (`ftl.gc.policy`) and the line
/// where it sits, with the parser's message alone (its own rendering quotes the line
/// over several lines).
fn toml_error(text: &str, error: &toml::de::Error) -> ConfigError {
    let Some(span) = error.span() else {
        return ConfigError::new("(file)", error.message());
    };
    let before = &text[..span.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let reason = format!("line {line}: {}", error.message());
    match field_at(before) {
        Some(field) => ConfigError::new(field, reason),
        None => ConfigError::new(format!("(line {line})"), reason),
    }
}

/// The dotted path of the key on the last line of `before`: the innermost `[table]`
/// header above it joined with the key left of `=`.
fn field_at(before: &str) -> Option<String> {
    let mut lines = before.rsplit('\n');
    let current = lines.next()?;
    // An unknown key is reported at the key itself: then only the table is known here
    // (the message names the key).
    let key = match current.split_once('=') {
        Some((key, _)) => key.trim().trim_matches('"'),
        None => "",
    };
    let table = lines
        .map(str::trim)
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(['[', ']']).trim());
    match (table, key) {
        (Some(table), "") => Some(table.to_string()),
        (Some(table), key) => Some(format!("{table}.{key}")),
        (None, "") => None,
        (None, key) => Some(key.to_string()),
    }
}

#[cfg(test)]
mod toml_error_tests {
    use super::*;

    #[test]
    fn toml_errors_name_the_field_and_line() {
        let mut text = crate::presets::preset("ldc-emmc").unwrap().to_toml();
        text = text.replace("policy = \"greedy\"", "policy = \"banana\"");
        let err = DeviceConfig::from_toml(&text).unwrap_err();
        assert_eq!(err.field, "ftl.gc.policy", "{err}");
        assert!(err.reason.starts_with("line "), "{err}");
        assert!(
            err.reason
                .contains("`greedy`, `cost-benefit`, `compression-aware`"),
            "{err}"
        );
        assert!(!err.to_string().contains('\n'), "one line: {err}");
    }
}
