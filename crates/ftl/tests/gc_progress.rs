//! GC must make progress: a victim whose only invalid slots are padding (less than a page)
//! frees no page when its data moves, since the moved data is padded to a page again. Idle
//! GC chasing an unreachable free-block target once took such a block, moved it into a
//! fresh block that came out with the same padding, erased it, and did the same again up
//! to its step limit in every idle gap (a small aged phone erased one block 57 times in
//! two days). Golden counters of a one-plane device with 16 KiB pages (4 slots).

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_ftl::{presets, DeviceConfig, Ftl, StreamMode};

const SECOND_NS: u64 = 1_000_000_000;

/// One plane of 10 blocks of 8 pages of 16 KiB (32 slots a block), one host stream, and an
/// idle-GC target (all 10 blocks free) it can never reach once anything is stored.
fn device() -> DeviceConfig {
    let mut d = presets::ufs31();
    let g = &mut d.nand.geometry;
    (g.channels, g.dies_per_channel, g.planes_per_die) = (1, 1, 1);
    (g.blocks_per_plane, g.pages_per_block) = (10, 8);
    d.ftl.streams = StreamMode::Single;
    d.ftl.gc.foreground_free_blocks = 2;
    d.ftl.gc.background_free_blocks = 10;
    d.ftl.wear.static_threshold = None;
    d
}

#[derive(Debug, PartialEq, Eq)]
struct Golden {
    page_programs: u64,
    block_erases: u64,
    gc_cycles_background: u64,
    gc_slots: u64,
    padding_slots: u64,
}

fn golden(ftl: &Ftl) -> Golden {
    let c = ftl.counters();
    Golden {
        page_programs: c.page_programs,
        block_erases: ftl.nand().counters().block_erases,
        gc_cycles_background: c.gc_cycles_background,
        gc_slots: c.program_slots_gc,
        padding_slots: c.program_slots_padding,
    }
}

fn write(ftl: &mut Ftl, now: u64, lba: u64, lba_count: u32) {
    ftl.write(now, lba, Payload::Unstored { lba_count }, Hints::default())
        .unwrap();
}

#[test]
fn idle_gc_leaves_a_block_whose_only_invalid_slots_are_padding() {
    let mut ftl = Ftl::new(device(), false, 1).unwrap();
    // 29 slots and a flush: 7 pages and one slot, padded to the eighth page, seal the first
    // block with 29 valid slots and 3 of padding.
    write(&mut ftl, 0, 0, 29);
    ftl.flush(0).unwrap();
    // Idle seconds: GC is free to run, but moving that block would only seal another one
    // just like it.
    ftl.flush(10 * SECOND_NS).unwrap();
    ftl.flush(20 * SECOND_NS).unwrap();
    ftl.check_invariants().unwrap();
    assert_eq!(
        golden(&ftl),
        Golden {
            page_programs: 8,
            block_erases: 0,
            gc_cycles_background: 0,
            gc_slots: 0,
            padding_slots: 3,
        }
    );
}

#[test]
fn idle_gc_still_takes_a_block_with_a_page_of_invalid_slots() {
    let mut ftl = Ftl::new(device(), false, 1).unwrap();
    write(&mut ftl, 0, 0, 32);
    // Four slots of the sealed block superseded (a page's worth, though not one page):
    // moving its 28 valid slots takes 7 pages, so reclaiming it gains one.
    write(&mut ftl, SECOND_NS / 1000, 0, 1);
    write(&mut ftl, SECOND_NS / 1000, 9, 1);
    write(&mut ftl, SECOND_NS / 1000, 18, 1);
    write(&mut ftl, SECOND_NS / 1000, 27, 1);
    ftl.flush(SECOND_NS / 1000).unwrap();
    ftl.flush(10 * SECOND_NS).unwrap();
    ftl.flush(20 * SECOND_NS).unwrap();
    ftl.check_invariants().unwrap();
    // 8 + 1 host pages; GC moves the 28 valid slots into 7 pages and erases the block,
    // once: the host and GC blocks left are open, not candidates.
    assert_eq!(
        golden(&ftl),
        Golden {
            page_programs: 8 + 1 + 7,
            block_erases: 1,
            gc_cycles_background: 1,
            gc_slots: 28,
            padding_slots: 0,
        }
    );
}
