//! Golden figures of the controller write buffer (`[ftl.write_buffer]`) on MQSim's
//! configuration: the acknowledgement latency with MQSim's 256 MiB DRAM write cache
//! (`mqsim-wb`) against `mqsim-default` (every write waits for its page), and the wait
//! for room once the host writes faster than the dies program. A change here changes
//! published figures: update the numbers only with a reason in the commit message.

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_ftl::{presets, DeviceConfig, Ftl};
use flashstack_sim::Rng;

#[derive(Debug, PartialEq, Eq)]
struct Golden {
    write_ns_mean: u64,
    write_ns_p99: u64,
    write_ns_max: u64,
    page_programs: u64,
    /// Host slots programmed: an overwrite the buffer absorbed is never programmed.
    host_slots: u64,
    destaged_lbas: u64,
    full_waits: u64,
    wait_ns_max: u64,
    buffered_at_end: u64,
}

/// 20,000 random 4 KiB writes over the first 12 GiB of a fresh device, one every
/// `spacing_ns`, then a flush.
fn run(device: DeviceConfig, spacing_ns: u64) -> Golden {
    let mut ftl = Ftl::new(device, false, 42).unwrap();
    let span = (12u64 << 30) / 4096;
    let mut rng = Rng::new(7);
    let mut now = 0;
    for _ in 0..20_000 {
        now += spacing_ns;
        let lba = rng.below(span);
        ftl.write(
            now,
            lba,
            Payload::Unstored { lba_count: 1 },
            Hints::default(),
        )
        .unwrap();
    }
    let buffered_at_end = ftl.write_buffer_lbas().unwrap_or(0);
    let w = ftl.latencies().write.summary();
    ftl.flush(now + 1).unwrap();
    assert_eq!(
        ftl.write_buffer_lbas().unwrap_or(0),
        0,
        "a flush empties it"
    );
    ftl.check_invariants().unwrap();
    let c = ftl.counters();
    Golden {
        write_ns_mean: w.latency_ns_mean,
        write_ns_p99: w.latency_ns_p99,
        write_ns_max: w.latency_ns_max,
        page_programs: c.page_programs,
        host_slots: c.program_slots_host,
        destaged_lbas: c.write_buffer_destaged_lbas,
        full_waits: c.write_buffer_full_waits,
        wait_ns_max: c.write_buffer_wait_ns_max,
        buffered_at_end,
    }
}

#[test]
fn mqsim_write_cache_acknowledges_from_dram() {
    // Paced at 50 µs: the dies keep up, nothing waits for room.
    let off = run(presets::mqsim_default(), 50_000);
    let on = run(presets::preset("mqsim-wb").unwrap(), 50_000);
    println!("mqsim-default: {off:?}\nmqsim-wb:      {on:?}");
    // Link 1 µs + MQSim's DRAM copy 20.5 µs, against a page program (775 µs with its
    // transfer) for every write that fills a page, and under one command per die (the
    // presets' die rules) the wait for the die's other plane when consecutive pages land on
    // the two planes of one die: 388,300 ns mean with independent planes.
    assert!(on.write_ns_mean < 25_000 && off.write_ns_mean > 300_000);
    assert_eq!(
        off,
        Golden {
            write_ns_mean: 556_950,
            write_ns_p99: 1_451_007,
            write_ns_max: 1_451_007,
            page_programs: 10_000,
            host_slots: 20_000,
            destaged_lbas: 0,
            full_waits: 0,
            wait_ns_max: 0,
            buffered_at_end: 0,
        }
    );
    assert_eq!(
        on,
        Golden {
            write_ns_mean: 21_506,
            write_ns_p99: 21_519,
            write_ns_max: 21_519,
            page_programs: 10_000,
            host_slots: 20_000,
            destaged_lbas: 20_000,
            full_waits: 0,
            wait_ns_max: 0,
            buffered_at_end: 14,
        }
    );
}

#[test]
fn a_full_write_cache_makes_the_host_wait() {
    // 1 MiB of buffer with a free DRAM copy, a write every 1 µs: 128 planes programming
    // two 4 KiB per 775 µs drain at most ~0.33 LBA per µs (less one command per die at a
    // time), so the buffer fills and writes wait.
    let mut device = presets::preset("mqsim-wb").unwrap();
    device.ftl.write_buffer.capacity_bytes = 1 << 20;
    device.ftl.write_buffer.dram_ns_per_4k = 0;
    let fast = run(device, 1_000);
    println!("{fast:?}");
    assert!(fast.full_waits > 10_000 && fast.wait_ns_max > 775_000);
    // Offered 1 M writes/s against ~0.33 M/s of programs: the queue (depth 1,024) fills
    // with writes waiting for room, so latency grows to tens of milliseconds.
    assert_eq!(
        fast,
        Golden {
            write_ns_mean: 21_743_874,
            write_ns_p99: 42_631_167,
            write_ns_max: 43_122_687,
            page_programs: 10_000,
            host_slots: 20_000,
            destaged_lbas: 20_000,
            full_waits: 19_744,
            wait_ns_max: 3_442_400,
            buffered_at_end: 256,
        }
    );
}
