//! Named device presets. Every number carries its source.
//!
//! Energy: unless a source gives per-operation energy, it is current × voltage × time with
//! the NAND currents SimpleSSD ships from a Micron MT29F64 datasheet (read, program and
//! erase 25 mA; bus 10 mA; standby 10 µA) at 3.3 V. These are planar-NAND figures: treat
//! absolute energies as order-of-magnitude and compare configurations, not devices.

use flashstack_nand::{
    ChannelModel, DieRules, Endurance, Energy, Faults, Geometry, NandConfig, PageTypeTiming, Timing,
};

use crate::compression::{CompressionPolicyKind, ControllerTiming};
use crate::config::*;

/// (name, one-line description) of every preset.
pub const PRESETS: [(&str, &str); 14] = [
    (
        "ldc-emmc",
        "LDC seed Table 3: 16 GiB eMMC, 4 KiB pages, 64 pages/block, 1% OP, one request at a time",
    ),
    (
        "ufs31",
        "128 GiB UFS 3.1 phone storage on 512 Gbit 3D TLC dies, 16 KiB pages, QD 32",
    ),
    (
        "ufs31-dftl",
        "ufs31 with 1 MiB of controller SRAM for mapping entries (DFTL-style cached mapping table)",
    ),
    (
        "mqsim-default",
        "MQSim's shipped ssdconfig.xml (commit 7ec40e3): 512 GiB MLC, 8 channels, 8 KiB pages",
    ),
    (
        "ldc-emmc-pm",
        "ldc-emmc with 512 B slots and no compression (the LDC paper's PM)",
    ),
    (
        "ldc-emmc-zftl",
        "ldc-emmc compressing all but incompressible pages (zFTL)",
    ),
    (
        "ldc-emmc-sc",
        "ldc-emmc with latency-aware selective compression (SC)",
    ),
    (
        "ldc-emmc-ldc",
        "ldc-emmc with SC plus compression-aware GC (LDC)",
    ),
    (
        "ldc-emmc-opt",
        "ldc-emmc compressing everything at zero cost (OPT, the bound)",
    ),
    (
        "csd3000",
        "ScaleFlux CSD 3000-class compressing NVMe SSD on 32 GiB of TLC flash, exporting twice \
         what the flash holds uncompressed, hardware zlib on the data path",
    ),
    (
        "csd3000-hinted",
        "csd3000 compressing only writes whose status bit asks for it (COCO's FACS)",
    ),
    (
        "ufs31-hpb",
        "ufs31-dftl with UFS HPB 2.0: 2 MiB of host memory caching mapping entries (1 GiB covered)",
    ),
    (
        "mqsim-wb",
        "mqsim-default with MQSim's 256 MiB DRAM write cache: writes acknowledged once buffered",
    ),
    (
        "mqsim-page",
        "mqsim-default mapping whole 8 KiB flash pages as MQSim's PAGE_LEVEL does: a 4 KiB \
         write reads the page's other half and programs both",
    ),
];

/// The one-line description [`PRESETS`] gives `name` (empty for a name it lacks).
fn description_of(name: &str) -> String {
    PRESETS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(String::new(), |(_, d)| d.to_string())
}

/// Looks a preset up by name.
pub fn preset(name: &str) -> Option<DeviceConfig> {
    match name {
        "ldc-emmc" => Some(ldc_emmc()),
        "ufs31" => Some(ufs31()),
        "ufs31-dftl" => Some(ufs31_dftl()),
        "mqsim-default" => Some(mqsim_default()),
        "ldc-emmc-pm" => Some(ldc_emmc_with(CompressionPolicyKind::Pm)),
        "ldc-emmc-zftl" => Some(ldc_emmc_with(CompressionPolicyKind::Zftl)),
        "ldc-emmc-sc" => Some(ldc_emmc_with(CompressionPolicyKind::Sc)),
        "ldc-emmc-ldc" => Some(ldc_emmc_with(CompressionPolicyKind::Ldc)),
        "ldc-emmc-opt" => Some(ldc_emmc_with(CompressionPolicyKind::Opt)),
        "csd3000" => Some(csd3000()),
        "csd3000-hinted" => Some(csd3000_with(CompressionPolicyKind::Hinted, 32)),
        "ufs31-hpb" => Some(ufs31_hpb()),
        "mqsim-wb" => Some(mqsim_wb()),
        "mqsim-page" => Some(mqsim_page()),
        _ => None,
    }
}

fn energy_nj(current_ma: u64, millivolts: u64, time_ns: u64) -> u64 {
    // mA × mV = µW; µW × ns = fJ; ÷ 10^6 = nJ.
    current_ma * millivolts * time_ns / 1_000_000
}

fn micron_energy(timing: &Timing) -> Energy {
    let read_ns = match &timing.page_types {
        Some(t) => t.read_ns.iter().sum::<u64>() / 3,
        None => timing.read_ns,
    };
    let program_ns = match &timing.page_types {
        Some(t) => t.program_ns.iter().sum::<u64>() / 3,
        None => timing.program_ns,
    };
    Energy {
        read_nj: energy_nj(25, 3300, read_ns),
        program_nj: energy_nj(25, 3300, program_ns),
        erase_nj: energy_nj(25, 3300, timing.erase_ns),
        transfer_nj_per_page: energy_nj(10, 3300, timing.transfer_ns_per_page),
        idle_uw: 33, // 10 µA × 3.3 V
    }
}

/// On-demand GC threshold of the LDC presets (an assumption; see [`ldc_emmc_with`]).
pub const LDC_FOREGROUND_FREE_BLOCKS: u32 = 8;
/// Idle-time GC target of the LDC policy presets (an assumption; see [`ldc_emmc_with`]).
pub const LDC_BACKGROUND_FREE_BLOCKS: u32 = 64;
/// Idle time after which the LDC presets' background GC starts (an assumption: the idle
/// threshold of every flashstack preset).
pub const LDC_IDLE_THRESHOLD_NS: u64 = 100_000_000;

/// The LDC paper's simulated eMMC (Table 3 and §6.1): 16 GiB user capacity, 4 KiB pages,
/// 64 pages per block, 1% over-provisioning, erase 1.5 ms, read 25 µs, program 200 µs, page
/// transfer 100 µs, so t_w = 300 µs and t_r = 125 µs as the paper's pipeline model uses.
/// The paper's DiskSim/MSR model serves one request at a time with no stream separation and
/// greedy cleaning; it gives no channel count, so one channel and one die reproduce its
/// serial t_w/t_r timing. Endurance is not in the paper: 3,000 cycles (MLC class).
///
/// GC runs on demand only (background target = foreground threshold): this base preset is
/// also the default device of `run`, `mount` and the stack presets, whose figures are
/// pinned; the paper's policies ([`ldc_emmc_with`]) add idle-time GC.
pub fn ldc_emmc() -> DeviceConfig {
    let timing = Timing {
        read_ns: 25_000,
        program_ns: 200_000,
        erase_ns: 1_500_000,
        transfer_ns_per_page: 100_000,
        page_types: None,
        channel_model: Default::default(),
    };
    DeviceConfig {
        name: "ldc-emmc".into(),
        description: description_of("ldc-emmc"),
        nand: NandConfig {
            geometry: Geometry {
                channels: 1,
                dies_per_channel: 1,
                planes_per_die: 1,
                // 16 GiB user × 1.01 = 66,191.4 blocks of 256 KiB, rounded up.
                blocks_per_plane: 66_192,
                pages_per_block: 64,
                page_size_bytes: 4096,
                oob_size_bytes: 128,
            },
            energy: micron_energy(&timing),
            timing,
            endurance: Endurance {
                pe_cycles_max: 3_000,
                retire_at_limit: true,
            },
            faults: Faults::default(),
            die_rules: Default::default(),
            multi_plane: true,
        },
        ftl: FtlConfig {
            overprovisioning_ratio: 0.01,
            streams: StreamMode::Single,
            streams_max: 1,
            gc: GcConfig {
                policy: VictimPolicyKind::Greedy,
                foreground_free_blocks: LDC_FOREGROUND_FREE_BLOCKS,
                background_free_blocks: LDC_FOREGROUND_FREE_BLOCKS,
                idle_threshold_ns: LDC_IDLE_THRESHOLD_NS,
                candidates_max: 256,
                collect: Default::default(),
                background_min_invalid_permille: 0,
            },
            slot_bytes: 4096,
            mapping_unit_bytes: 4096,
            exported_capacity_factor: 1.0,
            compression: None,
            mapping_cache: MappingCacheConfig::default(),
            write_buffer: WriteBufferConfig::default(),
            allocation: Allocation::Page,
            wear: WearConfig {
                dynamic: true,
                static_threshold: None,
                check_interval_erases: 1_000,
            },
        },
        host: HostConfig {
            queue_depth: 1,
            controller_overhead_ns: 0,
            link_ns_per_4k: 0,
        },
    }
}

/// The LDC paper's device running one of its five policies. All use 512-byte slots so that
/// compressed pages pack into flash pages at sector granularity (PM too, so that every
/// policy runs on the same mapping), a 200 MHz controller (t_c 136 µs, t_d 33 µs), and
/// LDC uses compression-aware victim selection (Eq. 4); the others keep greedy.
///
/// GC runs in two places, as LDC's design has it (§5.3: caGC "performs data compression
/// during background garbage collection"; §6.2.4: MA "occasionally triggered on-demand
/// garbage collection"), for every policy alike so that only the policy differs. The paper
/// gives no thresholds for either, and DiskSim's MSR SSD extension (Agrawal et al., USENIX
/// ATC 2008), which it ran on, makes background cleaning an option with no value the
/// paper states, so these are documented assumptions (`docs/ldc-reproduction.md`):
/// - on demand when the die is down to 8 free blocks (2 MiB; the write waits for it);
/// - in idle time, after [`LDC_IDLE_THRESHOLD_NS`] without a request, up to 64 free blocks
///   (16 MiB, room for a burst of writes without on-demand GC); at most 256 cycles run in
///   one idle gap, and a cycle started in the gap finishes even if a request arrives.
///
/// caGC compresses what it migrates in both paths; the counters tell them apart
/// (`pages_compressed_gc_background`).
pub fn ldc_emmc_with(policy: CompressionPolicyKind) -> DeviceConfig {
    let mut config = ldc_emmc();
    config.ftl.gc.background_free_blocks = LDC_BACKGROUND_FREE_BLOCKS;
    config.name = format!("ldc-emmc-{}", policy.name().to_lowercase());
    config.description = description_of(&config.name);
    config.ftl.slot_bytes = 512;
    config.ftl.compression = Some(CompressionConfig::with_policy(policy));
    if policy == CompressionPolicyKind::Ldc {
        config.ftl.gc.policy = VictimPolicyKind::CompressionAware;
    }
    config
}

/// A 128 GiB UFS 3.1 device of current phones.
/// - Two 512 Gbit 3D TLC dies (Micron's 176-layer parts are 512 Gbit TLC dies; Samsung's
///   512 GB eUFS 3.0 stacks eight 512 Gbit V-NAND dies, so 128 GB takes two).
/// - Two NAND channels: a 2,100 MB/s sequential read (Samsung eUFS 3.1, March 2020) needs two
///   1.4 GT/s channels (inferred).
/// - Four planes per die (176-layer generation), 16 KiB pages; 1,152 pages per block
///   (96 word lines × 4 strings × 3 bits, the `nand_256gb_g3` model of py_ssd_sim;
///   inferred for this part); 910 blocks per plane make 64 GiB per die.
/// - tR 50 µs average (Samsung 5th-gen V-NAND announcement), split per page type 35/48/66 µs
///   in FEMU's LSB/CSB/MSB proportions (inferred); tPROG 500 µs per page (Samsung, same
///   announcement; one-shot programming gives all three page types the same time);
///   tBERS 3.5 ms (FEMU TLC 3 ms, MQSim 3.8 ms); 16 KiB over a 1.4 GT/s Toggle DDR 4.0
///   bus = 11.7 µs.
/// - 3,000 P/E cycles (HP, "SSD technology differences between SLC, MLC and TLC NAND":
///   TLC is rated 1K–3K).
/// - Host link: HS-Gear4 × 2 lanes, 11.66 Gb/s per lane with 8b/10b coding ≈ 2,332 MB/s,
///   1.76 µs per 4 KiB; 32 command slots (UFSHCI: at most 32 transfer request slots).
/// - 7% over-provisioning (128 GiB raw for 128 GB sold; MQSim and NVMeVirt both use 0.07).
/// - Streams follow temperature hints: devices that honour F2FS's write hints.
/// - Not modelled: the WriteBooster SLC cache, so sequential writes run at TLC speed
///   (about 260 MB/s from 8 planes, well below the 1,200 MB/s the SLC cache gives).
/// - A die runs one command at a time; programs of a die's planes at one page offset join
///   as one multi-plane command (ONFI multi-plane operations; MQSim's rule), and channel
///   transfers take the earliest idle gap (`nand.die_rules`, `nand.timing.channel_model`).
/// - Super-page allocation: a stream's frontiers on a die's four planes advance in
///   lockstep and a super-page (one page per plane, 64 KiB) is programmed as one
///   multi-plane command, as controllers that allocate super-blocks do
///   (`ftl.allocation`; docs/ftl.md).
/// - GC collects a super-block (a victim on every plane of a die at once), and idle-time
///   GC takes only victims with at least 1/8 of their slots invalid. No controller
///   publishes such a share: it is an **assumption**. Override it with
///   `--set ftl.gc.background_min_invalid_permille=N` (0 = off) and the collection with
///   `--set ftl.gc.collect=plane`.
pub fn ufs31() -> DeviceConfig {
    let timing = Timing {
        read_ns: 50_000,
        program_ns: 500_000,
        erase_ns: 3_500_000,
        transfer_ns_per_page: 11_700,
        page_types: Some(PageTypeTiming {
            read_ns: [35_000, 48_000, 66_000],
            program_ns: [500_000, 500_000, 500_000],
        }),
        channel_model: ChannelModel::Intervals,
    };
    DeviceConfig {
        name: "ufs31".into(),
        description: description_of("ufs31"),
        nand: NandConfig {
            geometry: Geometry {
                channels: 2,
                dies_per_channel: 1,
                planes_per_die: 4,
                blocks_per_plane: 910,
                pages_per_block: 1_152,
                page_size_bytes: 16_384,
                oob_size_bytes: 1_952,
            },
            energy: micron_energy(&timing),
            timing,
            endurance: Endurance {
                pe_cycles_max: 3_000,
                retire_at_limit: true,
            },
            faults: Faults::default(),
            die_rules: DieRules::OneCommandPerDie,
            multi_plane: true,
        },
        ftl: FtlConfig {
            overprovisioning_ratio: 0.07,
            streams: StreamMode::Temperature,
            streams_max: 3,
            gc: GcConfig {
                policy: VictimPolicyKind::Greedy,
                foreground_free_blocks: 4,
                background_free_blocks: 12,
                idle_threshold_ns: 100_000_000,
                candidates_max: 64,
                // GC collects a super-block: a victim on every plane of the die at once.
                collect: GcCollect::SuperBlock,
                // Idle GC takes only victims at least 1/8 invalid: towards a free-block
                // target a small or full device cannot reach it would otherwise pack
                // nearly valid blocks. An assumption (no controller publishes such a
                // share); 1/4 starves idle GC on a hot/cold run (docs/ftl.md).
                background_min_invalid_permille: 125,
            },
            slot_bytes: 4096,
            mapping_unit_bytes: 4096,
            exported_capacity_factor: 1.0,
            compression: None,
            mapping_cache: MappingCacheConfig::default(),
            write_buffer: WriteBufferConfig::default(),
            allocation: Allocation::SuperPage,
            wear: WearConfig {
                dynamic: true,
                static_threshold: Some(200),
                check_interval_erases: 256,
            },
        },
        host: HostConfig {
            queue_depth: 32,
            controller_overhead_ns: 2_000,
            link_ns_per_4k: 1_760,
        },
    }
}

/// `ufs31` holding only part of its L2P table in controller SRAM (`cmt.rs`).
/// - Phone controllers cannot hold a 128 GiB device's table (32 Mi entries, 128 MiB at
///   4 bytes): "mobile storage devices typically have RAM with constrained size, thus lack
///   in memory to keep the whole mapping table" (Jeong et al., Samsung, "Improving Flash
///   Storage Performance by Caching Address Mapping Table in Host Memory", HotStorage
///   2017, the paper behind UFS HPB); UFS on-device memory "does not increase due to H/W
///   and cost constraints" (Kim et al., JOK 2023).
/// - 1 MiB of SRAM for mapping entries (131,072 entries of 8 bytes, 512 MiB of data
///   covered) is an assumption: no vendor publishes the figure; it is the upper end of the
///   512 KiB–1 MiB range commonly quoted for UFS controllers. Override it with
///   `--set ftl.mapping_cache.sram_bytes=N`.
/// - Segmented LRU, as DFTL.
pub fn ufs31_dftl() -> DeviceConfig {
    let mut d = ufs31();
    d.name = "ufs31-dftl".into();
    d.description = description_of("ufs31-dftl");
    d.ftl.mapping_cache = MappingCacheConfig {
        sram_bytes: 1 << 20,
        policy: CmtPolicyKind::SegmentedLru,
        entry_bytes: 8,
        relocation_updates: Default::default(),
        hpb: Default::default(),
    };
    d
}

/// `ufs31-dftl` with UFS Host Performance Booster 2.0 (`hpb.rs`).
/// - 2 MiB of host DRAM for entries (8 bytes per 4 KiB block: 1 GiB of data covered): the
///   Linux driver's memory-pool default (`ufshpb_host_map_kbytes = 2048`, "a cache size
///   of 2MB can cache ppn in the 1GB range"; drivers/scsi/ufs/ufshpb.c, Linux 5.15).
/// - Regions of 32 MiB cut into 4 MiB subregions: an assumption (devices report both in
///   the geometry descriptor as `512 B × 2^n`; no vendor value is published).
/// - HPB 2.0 (an HPB READ carries up to 255 blocks; JESD220-3A), device control mode with
///   activation after 8 misses on a region (the Linux driver's host-mode activation
///   threshold is 8 reads).
pub fn ufs31_hpb() -> DeviceConfig {
    let mut d = ufs31_dftl();
    d.name = "ufs31-hpb".into();
    d.description = description_of("ufs31-hpb");
    d.ftl.mapping_cache.hpb = HpbConfig {
        host_map_bytes: 2 << 20,
        ..HpbConfig::default()
    };
    d
}

/// MQSim's shipped `ssdconfig.xml` (CMU-SAFARI/MQSim, commit 7ec40e3): MLC, 8 channels × 4
/// chips × 2 dies × 2 planes × 2,048 blocks × 256 pages × 8 KiB (448 B metadata); read
/// 75 µs, program 750 µs, erase 3.8 ms for every page type; 333 MT/s 8-bit channel
/// (8 KiB in 24.6 µs); 10,000 P/E cycles; over-provisioning 0.07 of total capacity, i.e.
/// 0.07 / 0.93 = 0.0753 of user capacity in flashstack's convention; GC at 5% free blocks
/// (102 of 2,048 per plane). MQSim's default victim policy is RGA (randomised greedy);
/// flashstack uses greedy. Channels book intervals and dies run one command at a time,
/// multi-plane when eligible, as MQSim's transaction scheduler does
/// (`nand.timing.channel_model`, `nand.die_rules`). Queue depth 1,024 (MQSim's code default; the XML's 65,535 exceeds
/// flashstack's bound). PCIe 1.0 GB/s × 4 lanes: about 1 µs per 4 KiB.
pub fn mqsim_default() -> DeviceConfig {
    let timing = Timing {
        read_ns: 75_000,
        program_ns: 750_000,
        erase_ns: 3_800_000,
        transfer_ns_per_page: 24_600,
        page_types: None,
        // The channel's gaps are used as a controller's scheduler would (MQSim's).
        channel_model: ChannelModel::Intervals,
    };
    DeviceConfig {
        name: "mqsim-default".into(),
        description: description_of("mqsim-default"),
        nand: NandConfig {
            geometry: Geometry {
                channels: 8,
                dies_per_channel: 8,
                planes_per_die: 2,
                blocks_per_plane: 2_048,
                pages_per_block: 256,
                page_size_bytes: 8_192,
                oob_size_bytes: 448,
            },
            energy: micron_energy(&timing),
            timing,
            endurance: Endurance {
                pe_cycles_max: 10_000,
                retire_at_limit: true,
            },
            faults: Faults::default(),
            // MQSim's TSU: one command per die, multi-plane when eligible.
            die_rules: DieRules::OneCommandPerDie,
            multi_plane: true,
        },
        ftl: FtlConfig {
            overprovisioning_ratio: 0.07 / 0.93,
            streams: StreamMode::Single,
            streams_max: 1,
            gc: GcConfig {
                policy: VictimPolicyKind::Greedy,
                foreground_free_blocks: 102,
                background_free_blocks: 102,
                idle_threshold_ns: 100_000_000,
                candidates_max: 64,
                collect: Default::default(),
                background_min_invalid_permille: 0,
            },
            slot_bytes: 4096,
            mapping_unit_bytes: 4096,
            exported_capacity_factor: 1.0,
            compression: None,
            mapping_cache: MappingCacheConfig::default(),
            write_buffer: WriteBufferConfig::default(),
            allocation: Allocation::Page,
            wear: WearConfig {
                dynamic: true,
                static_threshold: Some(100),
                check_interval_erases: 1_000,
            },
        },
        host: HostConfig {
            queue_depth: 1_024,
            controller_overhead_ns: 0,
            link_ns_per_4k: 1_000,
        },
    }
}

/// `mqsim-default` with the write cache MQSim's shipped `ssdconfig.xml` turns on
/// (`Caching_Mechanism` ADVANCED, write cache): `Data_Cache_Capacity` 268,435,456 bytes, and
/// the DRAM time MQSim charges to copy 4 KiB in (its `estimate_dram_access_time`: tRCD +
/// tCL + bytes ÷ burst size ÷ 2 × the DDR burst time, with tRCD = tCL = 13 ns, 1-byte
/// bursts at 100 MT/s: 13 + 13 + 2,048 × 10 = 20,506 ns, on one DRAM channel). Destaging
/// is oldest first in whole pages; MQSim's buffer is not capacitor-backed.
pub fn mqsim_wb() -> DeviceConfig {
    let mut d = mqsim_default();
    d.name = "mqsim-wb".into();
    d.description = description_of("mqsim-wb");
    d.ftl.write_buffer = WriteBufferConfig {
        capacity_bytes: 268_435_456,
        destage: DestagePolicyKind::Fifo,
        dram_ns_per_4k: 20_506,
        power_loss_protected: false,
    };
    d
}

/// `mqsim-default` with MQSim's mapping unit: its `Address_Mapping` PAGE_LEVEL keeps one
/// entry per 8 KiB flash page, so a 4 KiB write reads the page's other half (if it holds
/// data) and programs a whole page (`unit.rs`). A preset of its own rather than a change to
/// `mqsim-default`, whose figures (the 4 KiB-mapped comparison in `docs/validation.md`,
/// the write-buffer and construction goldens, `docs/performance.md`) stay as measured; add
/// MQSim's write cache with `--device mqsim-wb --set ftl.mapping_unit_bytes=8192`.
pub fn mqsim_page() -> DeviceConfig {
    let mut d = mqsim_default();
    d.name = "mqsim-page".into();
    d.description = description_of("mqsim-page");
    d.ftl.mapping_unit_bytes = d.nand.geometry.page_size_bytes;
    d
}

/// Gibibytes of flash in the `csd3000` preset: a slice of the 3.84 TB drive large enough
/// for COCO's experiments at flashstack's scale (the seed used a 200 GB partition).
pub const CSD3000_FLASH_GIB: u32 = 32;

/// A ScaleFlux CSD 3000-class computational SSD (the drive COCO ran on; the seed's
/// reference list names it). Sources:
/// - StorageReview, "ScaleFlux CSD 3000 SSD review" (2022): PCIe Gen4 x4, 3.2–7.68 TB,
///   data-path compression and decompression engines in the SFX 3000 processor, <20 W
///   typical and <5 W idle. PCIe Gen4 x4 is 7.88 GB/s: 0.52 µs per 4 KiB on the link.
/// - The engine is zlib-class (the seed: "hardware zlib compression"). Its cost per 4 KiB
///   is **assumed**: ScaleFlux claims compression costs no throughput, so the engine is
///   taken to keep up with the link — 4 GB/s, 1.0 µs to compress and 0.7 µs to
///   decompress 4 KiB, pipelined with the flash. No published per-page latency was found.
/// - Flash: 3D TLC with the `ufs31` preset's cited timings (tR 50 µs, tPROG 500 µs,
///   tBERS 3.5 ms, 16 KiB pages at 1.4 GT/s = 11.7 µs); 4 channels × 2 dies and 2 MiB
///   blocks are **assumed** (enough parallelism for the scaled slice, 1% held back).
///   One plane per die, so the die rule is moot; channels book intervals (`intervals`),
///   as `ufs31`'s do (docs/ftl.md "Channel timing and die rules").
/// - Exported capacity 2× the flash: CSD 3000 drives ship formatted at 1× and can be
///   reformatted larger (StorageReview: "capacity multiplier"); 2× fits the seed's
///   workloads (compression ratios 1–4). 7% over-provisioning as in `ufs31`.
/// - 512-byte slots pack compressed pages at sector granularity, as in LDC.
pub fn csd3000() -> DeviceConfig {
    csd3000_with(CompressionPolicyKind::Inline, CSD3000_FLASH_GIB)
}

/// `csd3000` with another compression policy (`Inline`, `Hinted`, or `Pm` for the drive
/// with compression off, which then exports only its flash) and `flash_gib` of flash.
pub fn csd3000_with(policy: CompressionPolicyKind, flash_gib: u32) -> DeviceConfig {
    let timing = Timing {
        read_ns: 50_000,
        program_ns: 500_000,
        erase_ns: 3_500_000,
        transfer_ns_per_page: 11_700,
        page_types: None,
        // Two dies share each channel: a transfer books the channel's idle gaps as a real
        // bus arbiter does, instead of queueing behind the channel's latest booking.
        channel_model: ChannelModel::Intervals,
    };
    let block_bytes = 128u64 * 16_384;
    let units = 4 * 2;
    let blocks_per_plane = ((flash_gib as u64) << 30).div_ceil(block_bytes * units) as u32;
    let name = match policy {
        CompressionPolicyKind::Hinted => "csd3000-hinted",
        _ => "csd3000",
    };
    DeviceConfig {
        name: name.into(),
        description: description_of(name),
        nand: NandConfig {
            geometry: Geometry {
                channels: 4,
                dies_per_channel: 2,
                planes_per_die: 1,
                blocks_per_plane,
                pages_per_block: 128,
                page_size_bytes: 16_384,
                oob_size_bytes: 1_952,
            },
            energy: micron_energy(&timing),
            timing,
            endurance: Endurance {
                pe_cycles_max: 3_000,
                retire_at_limit: true,
            },
            faults: Faults::default(),
            die_rules: Default::default(),
            multi_plane: true,
        },
        ftl: FtlConfig {
            overprovisioning_ratio: 0.07,
            streams: StreamMode::Single,
            streams_max: 1,
            gc: GcConfig {
                policy: VictimPolicyKind::Greedy,
                foreground_free_blocks: 4,
                background_free_blocks: 8,
                idle_threshold_ns: 10_000_000,
                candidates_max: 64,
                collect: Default::default(),
                background_min_invalid_permille: 0,
            },
            slot_bytes: 512,
            mapping_unit_bytes: 4096,
            exported_capacity_factor: if policy == CompressionPolicyKind::Pm {
                1.0
            } else {
                2.0
            },
            mapping_cache: MappingCacheConfig::default(),
            write_buffer: WriteBufferConfig::default(),
            allocation: Allocation::Page,
            compression: Some(CompressionConfig {
                codec: flashstack_codec::CodecKind::Zlib {
                    level: flashstack_codec::CodecKind::ZLIB_DEFAULT_LEVEL,
                },
                controller: ControllerTiming {
                    clock_mhz: 200,
                    compress_ns_at_200mhz: 1_000,
                    decompress_ns_at_200mhz: 700,
                    predict_ns_at_200mhz: 0,
                },
                ..CompressionConfig::with_policy(policy)
            }),
            wear: WearConfig {
                dynamic: true,
                static_threshold: None,
                check_interval_erases: 1_000,
            },
        },
        host: HostConfig {
            queue_depth: 64,
            controller_overhead_ns: 2_000,
            link_ns_per_4k: 520,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid_and_round_trips_through_toml() {
        for (name, description) in PRESETS {
            let config = preset(name).unwrap();
            config.validate().unwrap();
            assert_eq!(config.name, name);
            assert_eq!(config.description, description, "{name}'s description");
            let text = config.to_toml();
            let back = DeviceConfig::from_toml(&text).unwrap();
            assert_eq!(back, config, "{name}");
        }
    }

    #[test]
    fn ldc_timing_matches_the_paper() {
        let t = ldc_emmc().nand.timing;
        assert_eq!(t.program_ns + t.transfer_ns_per_page, 300_000); // t_w
        assert_eq!(t.read_ns + t.transfer_ns_per_page, 125_000); // t_r
    }

    #[test]
    fn bad_toml_names_the_field() {
        let mut text = ldc_emmc().to_toml();
        text = text.replace("pages_per_block = 64", "pages_per_block = 0");
        let err = DeviceConfig::from_toml(&text).unwrap_err();
        assert_eq!(err.field, "geometry.pages_per_block");
        let err = DeviceConfig::from_toml("name = 3").unwrap_err();
        assert_eq!(err.field, "name", "{err}");
        assert!(err.reason.starts_with("line 1: "), "{err}");
    }
}
