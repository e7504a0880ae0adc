//! Fragmentation on a small `ufs31` (the preset's timing, channels, dies and planes; fewer
//! and shorter blocks so a test is quick): a file fragmented by interleaved writes reads
//! slower than the same file contiguous, for the three reasons the read model gives; the
//! copy baseline copies every page and leaves the file contiguous; janusdP copies only
//! the file whose pages collide on one plane; fsck.f2fs is clean after each.

use std::path::Path;
use std::process::{Command, Stdio};

use flashstack_block::{BlockDevice, LBA_SIZE};
use flashstack_f2fs::{F2fs, MemDevice};
use flashstack_ftl::Ftl;
use flashstack_janusd::{
    defragment, measure, Action, DefragMode, DefragOptions, JanusdError, JanusdPolicy, Mechanisms,
    ReadModel, RemapDefrag,
};

mod common;

use common::*;

fn read_a(fs: &mut F2fs<Ftl>) -> (f64, u64, u64, f64) {
    let r = measure(fs, "/data/a.db", &ReadModel::default()).unwrap();
    let f = &r.files[0];
    let p = f.physical.as_ref().unwrap();
    (f.dof, f.block_ios, f.read_ns.unwrap(), p.collision_ratio)
}

fn check_contents(fs: &mut F2fs<Ftl>) {
    let ino = fs.lookup("/data/a.db").unwrap();
    for i in 0..PAGES {
        let got = fs.read(ino, i as u64 * LBA_SIZE as u64, LBA_SIZE).unwrap();
        assert_eq!(got, page(1, i), "page {i} of /data/a.db");
    }
}

fn options(mode: DefragMode) -> DefragOptions {
    DefragOptions {
        mode,
        policy: JanusdPolicy::default(),
        model: ReadModel::default(),
        path: "/".into(),
    }
}

/// fsck.f2fs on the file system's image (every mapped LBA copied out of the FTL).
fn fsck_clean(fs: F2fs<Ftl>, what: &str) {
    let Some(tool) = flashstack_testkit::fsck_f2fs() else {
        return;
    };
    let mut ftl = fs.unmount().unwrap();
    let cap = ftl.capacity_lbas();
    let mut mem = MemDevice::new(cap * LBA_SIZE as u64);
    let mut buf = vec![0u8; LBA_SIZE];
    let now = ftl.busy_until_ns();
    for lba in 0..cap {
        if ftl.is_mapped(lba) {
            ftl.read(now, lba, 1, Some(&mut buf)).unwrap();
            mem.write(
                0,
                lba,
                flashstack_block::Payload::Bytes(&buf),
                Default::default(),
            )
            .unwrap();
        }
    }
    let dir = std::env::temp_dir().join(format!("janusd-{}-{}", std::process::id(), what));
    std::fs::create_dir_all(&dir).unwrap();
    let image = dir.join("img");
    mem.export(&image).unwrap();
    let out = run_fsck(&tool, &image);
    std::fs::remove_dir_all(&dir).unwrap();
    let failing: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("[Fail]") || l.contains("[ASSERT]") || l.contains("[FIX]"))
        .collect();
    assert!(
        failing.is_empty() && out.contains("[FSCK] other corrupted bugs"),
        "fsck.f2fs after {what}: {failing:?}\n{out}"
    );
}

fn run_fsck(tool: &Path, image: &Path) -> String {
    let out = Command::new(tool)
        .arg("-f")
        .arg(image)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "fsck.f2fs exit status");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_fragmented_file_reads_slower_and_the_copy_baseline_fixes_it_by_copying() {
    let mut clean = fresh_fs();
    contiguous(&mut clean);
    let (dof_c, ios_c, read_c, _) = read_a(&mut clean);
    assert_eq!(
        (dof_c, ios_c),
        (1.0, 4),
        "written alone, 2 MiB is one extent, 4 requests"
    );

    let mut fs = fresh_fs();
    interleaved(&mut fs, 1, 1);
    let (dof_f, ios_f, read_f, ratio_f) = read_a(&mut fs);
    println!("contiguous: {read_c} ns; fragmented: DoF {dof_f}, {ios_f} requests, {read_f} ns, collision ratio {ratio_f}");
    assert_eq!(dof_f, PAGES as f64, "every page its own extent");
    assert_eq!(ios_f, PAGES as u64);
    assert!(
        read_f > 2 * read_c,
        "fragmented {read_f} ns vs contiguous {read_c} ns"
    );

    let r = defragment(&mut fs, &options(DefragMode::Copy), Mechanisms::default()).unwrap();
    println!("{r:?}");
    assert_eq!(r.files_copied, 1);
    let bytes = PAGES as u64 * LBA_SIZE as u64;
    assert_eq!((r.cost.bytes_read, r.cost.bytes_written), (bytes, bytes));
    let programs = r.cost.nand_page_programs.unwrap();
    assert!(
        programs >= PAGES as u64 / 4,
        "the copy programs the data again: {programs} pages"
    );
    let (dof_after, _, read_after, _) = read_a(&mut fs);
    assert_eq!(dof_after, 1.0);
    assert!(
        read_after < read_f / 2,
        "after the copy {read_after} ns vs {read_f} ns"
    );
    check_contents(&mut fs);
    fsck_clean(fs, "copy");
}

#[test]
fn janusd_p_copies_only_the_file_whose_pages_collide() {
    let mut fs = fresh_fs();
    // Runs of 4 pages (one 16 KiB flash page) then 28 filler pages: the FTL rotates host
    // pages over the 8 planes, so every run of /data/a.db lands on the same plane.
    interleaved(&mut fs, 4, 28);
    let ino = fs.create("/data/b.db").unwrap();
    for i in 0..PAGES {
        fs.write(ino, i as u64 * LBA_SIZE as u64, &page(3, i))
            .unwrap();
    }
    fs.sync().unwrap();
    let (dof, _, read_before, ratio) = read_a(&mut fs);
    println!("colliding: DoF {dof}, collision ratio {ratio}, {read_before} ns");
    assert!(ratio >= 3.0, "the runs collide: ratio {ratio}");

    let r = defragment(
        &mut fs,
        &options(DefragMode::Physical),
        Mechanisms::default(),
    )
    .unwrap();
    println!("{r:?}");
    let copied: Vec<&str> = r
        .files
        .iter()
        .filter(|f| f.action == Action::Copy)
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(copied, vec!["/data/a.db"], "b.db is spread already");
    let after = r.files[0].collision_ratio_after.unwrap();
    assert!(after < ratio, "collisions {ratio} -> {after}");
    assert!(r.files[0].read_ns_after.unwrap() < read_before);
    check_contents(&mut fs);
    fsck_clean(fs, "janusdP");
}

/// janusdL: the same fragmented file made one extent by REMAP: no user data read or
/// written again, only metadata programmed (the remap record, nodes, the checkpoint),
/// fewer read requests after; the contents and fsck.f2fs as after the copy.
#[test]
fn janusd_l_makes_the_file_contiguous_without_copying_it() {
    let mut fs = fresh_fs();
    interleaved(&mut fs, 1, 1);
    let (dof_f, ios_f, read_f, _) = read_a(&mut fs);
    let waiting = ReadModel {
        in_flight_max: 1,
        ..ReadModel::default()
    };
    let read_waiting = |fs: &mut F2fs<Ftl>| {
        let r = measure(fs, "/data/a.db", &waiting).unwrap();
        r.files[0].read_ns.unwrap()
    };
    let waiting_f = read_waiting(&mut fs);
    let mut remap = RemapDefrag;
    let mech = Mechanisms {
        logical: Some(&mut remap),
    };
    let r = defragment(&mut fs, &options(DefragMode::Logical), mech).unwrap();
    println!("{r:?}");
    assert_eq!((r.files_remapped, r.files_copied), (1, 0));
    assert_eq!(r.cost.blocks_remapped, PAGES as u64);
    assert_eq!((r.cost.bytes_read, r.cost.bytes_written), (0, 0));
    let programs = r.cost.nand_page_programs.unwrap();
    assert!(
        programs < PAGES as u64 / 16,
        "a remap programs metadata only: {programs} pages for {PAGES} remapped"
    );
    let (dof_after, ios_after, read_after, _) = read_a(&mut fs);
    assert_eq!(dof_after, 1.0, "was {dof_f}");
    assert!(ios_after < ios_f / 16, "{ios_after} requests (was {ios_f})");
    // A reader that waits for each request gains: 512 requests became 4. With 32 in
    // flight (readahead) the requests overlap and the pages still sit where they were
    // written, so the time barely moves: logical defragmentation alone.
    let waiting_after = read_waiting(&mut fs);
    println!(
        "janusdL: waiting reader {waiting_f} -> {waiting_after} ns; readahead {read_f} -> \
         {read_after} ns"
    );
    assert!(
        waiting_after < waiting_f / 2,
        "waiting reader after {waiting_after} ns vs {waiting_f} ns"
    );
    check_contents(&mut fs);
    fsck_clean(fs, "janusdL");
}

#[test]
fn remapping_modes_are_refused_without_remap_and_change_nothing() {
    let mut fs = fresh_fs();
    interleaved(&mut fs, 1, 1);
    let programs = fs.device().counters().page_programs;
    for mode in [DefragMode::Logical, DefragMode::Janusd] {
        let e = defragment(&mut fs, &options(mode), Mechanisms::default()).unwrap_err();
        assert!(matches!(e, JanusdError::MissingCapability { .. }), "{e}");
        assert!(e.to_string().contains("REMAP"), "{e}");
    }
    assert_eq!(fs.device().counters().page_programs, programs);
}
