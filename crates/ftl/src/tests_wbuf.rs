//! The controller write buffer (`wbuf.rs`) against the reference model: power cuts lose
//! only buffered, unflushed, non-FUA writes (none when the buffer is protected); a full
//! buffer makes writes wait; impossible configurations are refused.

use std::cell::RefCell;

use super::*;
use crate::config::{DestagePolicyKind, WriteBufferConfig};

fn buffered(mut config: DeviceConfig, pages: u64, protected: bool) -> DeviceConfig {
    config.ftl.write_buffer = WriteBufferConfig {
        capacity_bytes: pages * config.nand.geometry.page_size_bytes as u64,
        destage: DestagePolicyKind::Fifo,
        dram_ns_per_4k: 300,
        power_loss_protected: protected,
    };
    config
}

/// The harness's ops plus FUA writes (a strategy of its own: the other tests' sequences
/// stay as they were).
fn wbuf_op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => op_strategy(),
        1 => (0u64..10_000, 1u32..6, any::<bool>())
            .prop_map(|(lba, count, hot)| Op::WriteFua { lba, count, hot }),
    ]
}

/// Writes, reads, FUA writes and cuts only between requests: what a protected buffer
/// must keep whole (trims are left out: a trim not yet logged is volatile whatever the
/// buffer).
fn protected_op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        40 => (0u64..10_000, 1u32..6, any::<bool>())
            .prop_map(|(lba, count, hot)| Op::Write { lba, count, hot }),
        15 => (0u64..10_000, 1u32..6).prop_map(|(lba, count)| Op::Read { lba, count }),
        5 => (0u64..10_000, 1u32..6, any::<bool>())
            .prop_map(|(lba, count, hot)| Op::WriteFua { lba, count, hot }),
        5 => Just(Op::Flush),
        3 => Just(Op::Idle),
        3 => Just(Op::CutNow),
    ]
}

/// Random sequences with power cuts (armed ones that tear a destage or GC program, and
/// cuts between requests) on buffers of 1–16 pages, sometimes over a mapping cache: after
/// every recovery each LBA holds its flushed or FUA-written value or a later one it was
/// given (`Model::possible`), never anything else; reads while powered see the newest.
#[test]
fn write_buffer_keeps_everything_flushed_or_fua_through_power_cuts() {
    let totals = RefCell::new([0u64; 6]);
    proptest!(
        ProptestConfig { cases: 400, ..ProptestConfig::default() },
        |(
            page in prop_oneof![Just(4096u32), Just(8192), Just(16384)],
            streams in prop_oneof![Just(StreamMode::Single), Just(StreamMode::Temperature)],
            pages in prop_oneof![Just(1u64), Just(2), Just(4), Just(16)],
            cached in prop::bool::weighted(0.25),
            ops in prop::collection::vec(wbuf_op_strategy(), 1..400),
            seed in any::<u64>(),
        )| {
            let mut config = buffered(
                tiny_config(page, streams, VictimPolicyKind::Greedy), pages, false);
            if cached {
                config.ftl.mapping_cache.sram_bytes = 8 * 8;
            }
            let h = run(config, &ops, seed, false);
            let c = h.ftl.counters();
            let mut t = totals.borrow_mut();
            for (total, n) in t.iter_mut().zip([
                c.write_buffer_full_waits,
                c.write_buffer_lost_lbas,
                c.buffer_read_hits,
                c.write_buffer_fua_writes,
                c.write_buffer_destaged_lbas,
                c.power_cycles,
            ]) {
                *total += n;
            }
        }
    );
    let [waits, lost, hits, fua, destaged, cycles] = totals.into_inner();
    assert!(
        waits > 100 && lost > 100 && hits > 100 && fua > 100 && destaged > 10_000 && cycles > 400,
        "the buffer must fill, lose data at cuts, serve reads, take FUA writes and destage: \
         {waits} full waits, {lost} LBAs lost, {hits} read hits, {fua} FUA writes, \
         {destaged} LBAs destaged, {cycles} power cycles"
    );
}

/// A capacitor-backed buffer: every cut (between requests) is followed by the hold-up
/// destage, and every LBA then reads exactly its newest acknowledged value.
#[test]
fn protected_write_buffer_loses_nothing_at_a_cut() {
    let held = RefCell::new(0u64);
    proptest!(
        ProptestConfig { cases: 200, ..ProptestConfig::default() },
        |(
            page in prop_oneof![Just(4096u32), Just(8192), Just(16384)],
            streams in prop_oneof![Just(StreamMode::Single), Just(StreamMode::Temperature)],
            pages in prop_oneof![Just(1u64), Just(4), Just(16)],
            ops in prop::collection::vec(protected_op_strategy(), 1..300),
            seed in any::<u64>(),
        )| {
            let config = buffered(
                tiny_config(page, streams, VictimPolicyKind::Greedy), pages, true);
            let mut h = Harness::new(config, seed);
            h.strict_cuts = true;
            let h = run_harness(h, &ops);
            assert_eq!(h.ftl.counters().write_buffer_lost_lbas, 0);
            *held.borrow_mut() += h.ftl.counters().write_buffer_hold_up_lbas;
        }
    );
    assert!(held.into_inner() > 100, "cuts must find data in the buffer");
}

/// The same cuts on an unprotected buffer do lose acknowledged writes: the strict check
/// of the test above is not vacuous.
#[test]
fn unprotected_write_buffer_loses_what_it_held() {
    let config = buffered(
        tiny_config(8192, StreamMode::Single, VictimPolicyKind::Greedy),
        16,
        false,
    );
    let mut ftl = Ftl::new(config, true, 1).unwrap();
    let page = |tag: u8| vec![tag; LBA_SIZE];
    ftl.write(0, 0, Payload::Bytes(&page(1)), Hints::default())
        .unwrap();
    ftl.flush(10_000).unwrap();
    // Three LBAs: the first two fill an 8 KiB page, destaged in the background at the
    // next request (the dies are idle); the third waits for a page-mate.
    for (i, lba) in [0u64, 1, 2].into_iter().enumerate() {
        ftl.write(
            20_000 + i as u64,
            lba,
            Payload::Bytes(&page(2)),
            Hints::default(),
        )
        .unwrap();
    }
    let fua = Hints {
        fua: true,
        ..Hints::default()
    };
    ftl.write(30_000, 3, Payload::Bytes(&page(3)), fua).unwrap();
    assert_eq!(
        ftl.write_buffer_lbas(),
        Some(1),
        "lba 3 went straight to flash"
    );
    assert_eq!(
        ftl.counters().write_buffer_destaged_lbas,
        4,
        "the flush, a page, FUA"
    );
    let mut out = vec![0u8; LBA_SIZE];
    ftl.read(40_000, 2, 1, Some(&mut out)).unwrap();
    assert_eq!(out, page(2));
    assert_eq!(ftl.counters().buffer_read_hits, 1);
    ftl.nand_mut().cut_power();
    ftl.power_cycle(50_000_000).unwrap();
    assert_eq!(ftl.counters().write_buffer_lost_lbas, 1);
    for (lba, tag) in [(0, 2u8), (1, 2), (2, 0), (3, 3)] {
        ftl.read(60_000_000, lba, 1, Some(&mut out)).unwrap();
        assert_eq!(out, page(tag), "lba {lba}: the flash copy stands");
    }
}

/// Acknowledgement costs controller overhead, link and DRAM time while there is room;
/// a host writing faster than the dies program fills the buffer and then waits.
#[test]
fn a_host_outrunning_the_dies_waits_for_room() {
    let config = buffered(
        tiny_config(8192, StreamMode::Single, VictimPolicyKind::Greedy),
        4,
        false,
    );
    let mut ftl = Ftl::new(config, false, 1).unwrap();
    let write = |ftl: &mut Ftl, now: u64, lba: u64| {
        ftl.write(
            now,
            lba,
            Payload::Unstored { lba_count: 1 },
            Hints::default(),
        )
        .unwrap()
    };
    // Paced well below the dies' rate (a program takes 200 µs + transfer): no waits.
    let mut now = 0;
    for lba in 0..64 {
        let done = write(&mut ftl, now, lba);
        assert_eq!(
            done.complete_ns - now,
            1_000 + 500 + 300,
            "overhead + link + DRAM"
        );
        now += 1_000_000;
    }
    assert_eq!(ftl.counters().write_buffer_full_waits, 0);
    // 200 back-to-back writes: 8 LBAs of buffer drain at 4 dies' pace.
    for lba in 0..200 {
        now += 2_000;
        write(&mut ftl, now, 100 + lba);
    }
    let c = ftl.counters().clone();
    assert!(c.write_buffer_full_waits > 150, "{c:?}");
    assert!(c.write_buffer_wait_ns_max > 100_000, "{c:?}");
    assert!(ftl.latencies().write.summary().latency_ns_max > 100_000);
    ftl.check_invariants().unwrap();
}

#[test]
fn impossible_write_buffers_are_refused_naming_the_field() {
    let base = tiny_config(16384, StreamMode::Single, VictimPolicyKind::Greedy);
    let with = |capacity_bytes: u64| {
        let mut c = base.clone();
        c.ftl.write_buffer.capacity_bytes = capacity_bytes;
        c
    };
    let err = with(8192).validate().unwrap_err();
    assert_eq!(err.field, "ftl.write_buffer.capacity_bytes");
    assert!(err.reason.contains("less than one flash page"), "{err}");
    let err = with(16384 + 100).validate().unwrap_err();
    assert_eq!(err.field, "ftl.write_buffer.capacity_bytes");
    assert!(err.reason.contains("multiple of 4096"), "{err}");
    let mut compressing = with(65536);
    compressing.ftl.slot_bytes = 512;
    compressing.ftl.compression = Some(CompressionConfig::with_policy(CompressionPolicyKind::Zftl));
    let err = compressing.validate().unwrap_err();
    assert_eq!(err.field, "ftl.write_buffer", "{err}");
    assert!(with(16384).validate().is_ok());
    assert!(with(0).validate().is_ok(), "0 turns it off");
    // The TOML form names the section, and unknown keys are refused.
    let mut text = with(16384).to_toml();
    assert!(text.contains("[ftl.write_buffer]"), "{text}");
    text = text.replace("capacity_bytes = 16384", "capacity_bytes = 4096");
    let err = DeviceConfig::from_toml(&text).unwrap_err();
    assert_eq!(err.field, "ftl.write_buffer.capacity_bytes", "{err}");
    let bad = with(16384)
        .to_toml()
        .replace("destage = \"fifo\"", "destage = \"lifo\"");
    let err = DeviceConfig::from_toml(&bad).unwrap_err();
    assert_eq!(err.field, "ftl.write_buffer.destage", "{err}");
}

/// A destaged LBA's bytes stay in DRAM until its page program ends, and a read in that
/// window is served from there instead of waiting for the die; after it, from flash. A
/// remap changing such an LBA drops its DRAM copy (a read then sees the remapped data).
#[test]
fn a_read_during_the_destage_program_is_served_from_dram() {
    let config = buffered(
        tiny_config(8192, StreamMode::Single, VictimPolicyKind::Greedy),
        4,
        false,
    );
    let mut ftl = Ftl::new(config, true, 1).unwrap();
    let write = |ftl: &mut Ftl, now: u64, lba: u64, tag: u64| {
        ftl.write(now, lba, Payload::Bytes(&page_of(tag)), Hints::default())
            .unwrap();
    };
    write(&mut ftl, 0, 0, 10);
    write(&mut ftl, 1_000, 1, 11);
    let mut out = vec![0u8; LBA_SIZE];
    // The read's arrival destages LBAs 0 and 1 (a page); their program takes 200 µs.
    let done = ftl.read(20_000, 0, 1, Some(&mut out)).unwrap();
    assert!(out == page_of(10), "LBA 0 reads its bytes");
    let c = ftl.counters().clone();
    assert_eq!(c.write_buffer_destaged_lbas, 2, "destaged before the read");
    let reads = |ftl: &Ftl| ftl.nand().counters().page_reads;
    assert_eq!(
        (c.buffer_read_hits, reads(&ftl)),
        (1, 0),
        "served from DRAM"
    );
    assert!(
        done.complete_ns - 20_000 < 10_000,
        "no wait for the program"
    );
    // Once the program has ended the read goes to flash.
    ftl.read(10_000_000, 1, 1, Some(&mut out)).unwrap();
    assert!(out == page_of(11), "LBA 1 reads its bytes");
    assert_eq!(reads(&ftl), 1);
    // LBAs 2 and 3 destaged by the remap's arrival; the remap points 2 at LBA 0's data
    // while 2's program may still run: a read of 2 must see LBA 0's bytes.
    write(&mut ftl, 20_000_000, 2, 12);
    write(&mut ftl, 20_001_000, 3, 13);
    ftl.remap(20_020_000, 0, 2, 1).unwrap();
    ftl.read(20_021_000, 2, 1, Some(&mut out)).unwrap();
    assert!(
        out == page_of(10),
        "LBA 2: the remapped data, not the DRAM copy"
    );
    ftl.read(20_021_000, 3, 1, Some(&mut out)).unwrap();
    assert!(out == page_of(13), "LBA 3 reads its bytes");
    ftl.check_invariants().unwrap();
}
