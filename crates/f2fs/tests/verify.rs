//! Corrupt images: what the checks at mount, on access and in the full verification
//! catch (issue 12, "Corruption accepted silently"). A read-write mount must refuse an
//! inconsistent image with an error naming the structure; a read-only mount must read
//! only bytes it can vouch for: the original ones, or an error.

mod common;

use common::surgery::{pattern, Surgery};
use common::*;
use flashstack_f2fs::nat::NatEntry;
use flashstack_f2fs::{
    mkfs, Corruption, F2fs, F2fsError, FsError, MemDevice, MkfsOptions, MountOptions, Verify,
};

/// The base image: 64 MiB, then a few files copied in one `fs put` each (a
/// mount, the file written, an unmount), one of 2 MiB.
fn base_image(opts: &MkfsOptions) -> (MemDevice, Vec<(&'static str, Vec<u8>)>) {
    let mut dev = MemDevice::new(64 * MIB);
    mkfs(&mut dev, opts).unwrap();
    let files = vec![
        ("/small.txt", b"hello\n".to_vec()),
        ("/d/mid.bin", pattern(100_000, 3)),
        ("/two.bin", pattern(2 << 20, 7)),
    ];
    for (path, data) in &files {
        dev = put(dev, path, data).expect("base image");
    }
    (dev, files)
}

fn full(read_only: bool) -> MountOptions {
    MountOptions {
        verify: Verify::Full,
        read_only,
        ..MountOptions::default()
    }
}

/// `flashstack fs put`: a read-write mount with the full verification, the file
/// written, an unmount. The image is only replaced if all of it succeeded.
fn put(dev: MemDevice, path: &str, data: &[u8]) -> Result<MemDevice, FsError> {
    let mut fs = F2fs::mount_opts(dev, full(false))?;
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let mut dir = String::new();
    for d in &parts[..parts.len() - 1] {
        dir = format!("{dir}/{d}");
        match fs.mkdir(&dir) {
            Ok(_) | Err(FsError::Exists(_)) => {}
            Err(e) => return Err(e),
        }
    }
    let ino = match fs.create(path) {
        Ok(ino) => ino,
        Err(FsError::Exists(_)) => fs.lookup(path)?,
        Err(e) => return Err(e),
    };
    fs.truncate(ino, 0)?;
    fs.write(ino, 0, data)?;
    fs.unmount()
}

/// `flashstack fs cat`'s mount: read-write with the full verification on a private
/// copy (so roll-forward recovery runs), or read-only if the image is inconsistent.
fn open_for_reading(dev: &MemDevice) -> Result<F2fs<MemDevice>, FsError> {
    match F2fs::mount_opts(dev.clone(), full(false)) {
        Err(FsError::Device(F2fsError::Corrupt(_))) => F2fs::mount_opts(dev.clone(), full(true)),
        other => other,
    }
}

fn cat(fs: &mut F2fs<MemDevice>, path: &str) -> Result<Vec<u8>, FsError> {
    let ino = fs.lookup(path)?;
    let size = fs.stat_ino(ino)?.size_bytes;
    fs.read(ino, 0, size as usize)
}

fn corruption(e: &FsError) -> &Corruption {
    match e {
        FsError::Device(F2fsError::Corrupt(c)) => c,
        other => panic!("expected a corruption error, got {other:?}"),
    }
}

/// The segment and offset of a main-area block.
fn seg_of(s: &Surgery, addr: u32) -> (u32, u32) {
    let rel = addr - s.sb.main_blkaddr;
    (rel / 512, rel % 512)
}

/// Block addresses of a file held in its inode.
fn inode_addrs(s: &Surgery, dev: &MemDevice, path: &str) -> (u32, Vec<u32>) {
    let mut fs = F2fs::mount_opts(dev.clone(), full(true)).unwrap();
    let ino = fs.lookup(path).unwrap();
    let inode = s.inode(ino);
    let flexible =
        s.sb.feature
            .contains(flashstack_f2fs::consts::FEATURE_FLEXIBLE_INLINE_XATTR);
    (
        ino,
        inode
            .data_addrs(flexible)
            .iter()
            .copied()
            .filter(|&a| a != 0)
            .collect(),
    )
}

/// Asserts what `fs put` and `fs cat` do on a corrupt image: the put is refused with
/// `expect` (and the image untouched), reads give exact bytes or an error, and the
/// files listed in `readable` read back exactly.
fn assert_refused_and_safe(
    dev: &MemDevice,
    files: &[(&str, Vec<u8>)],
    readable: &[&str],
    what: &str,
    expect: impl Fn(&Corruption) -> bool,
) {
    let Err(err) = put(dev.clone(), "/three.bin", &pattern(3_000_000, 9)) else {
        panic!("{what}: fs put succeeded on an inconsistent image");
    };
    let c = corruption(&err);
    assert!(expect(c), "{what}: refused with an unexpected error: {c}");
    println!("{what}: fs put refused: {err}");
    let mut fs = open_for_reading(dev).expect("a read-only mount");
    assert!(
        fs.is_read_only(),
        "{what}: the read-write mount must have been refused"
    );
    for (path, want) in files {
        match cat(&mut fs, path) {
            Ok(got) => assert!(&got == want, "{what}: {path} read back wrong bytes"),
            Err(e) => assert!(!readable.contains(path), "{what}: {path}: {e}"),
        }
    }
}

/// fsck.f2fs's verdict on an image (None without f2fs-tools outside CI).
fn fsck_flags(dev: &MemDevice, what: &str) -> Option<bool> {
    let bin = tool("fsck.f2fs")?;
    let dir = TempDir::new(&format!("verify-{what}"));
    let image = dir.file("image");
    dev.export(&image).unwrap();
    Some(!is_clean(&fsck(&bin, &image)))
}

/// Item 1: a SIT entry with bitmap bytes zeroed and its count lowered to match. The
/// blocks of /two.bin there look free; before, `fs put` of a 3 MB file wrote over them.
#[test]
fn zeroed_sit_bits_under_live_data_are_refused() {
    for lower_cp_count in [false, true] {
        let (dev, files) = base_image(&MkfsOptions::default());
        let mut s = Surgery::new(dev.clone());
        let (_, addrs) = inode_addrs(&s, &dev, "/two.bin");
        let (segno, off) = seg_of(&s, addrs[256]);
        let bits = s.zero_sit_bits(segno, off);
        if lower_cp_count {
            s.edit_checkpoint(|cp| cp.valid_block_count -= bits as u64);
        }
        let dev = s.into_dev();
        let what = format!("zeroed SIT bits (checkpoint count lowered: {lower_cp_count})");
        if let Some(flagged) = fsck_flags(&dev, "sit-zeroed") {
            assert!(flagged, "{what}: fsck.f2fs must flag it too");
        }
        assert_refused_and_safe(&dev, &files, &["/small.txt", "/d/mid.bin"], &what, |c| {
            matches!(c, Corruption::DataAddress { .. })
        });
    }
}

/// Item 2: a SIT count that disagrees with its bitmap (500 vs 512) is refused at mount
/// (even with the cheap checks), and every file still reads read-only.
#[test]
fn sit_count_disagreeing_with_its_bitmap_is_refused() {
    let (dev, files) = base_image(&MkfsOptions::default());
    let mut s = Surgery::new(dev.clone());
    let (_, addrs) = inode_addrs(&s, &dev, "/two.bin");
    let segno = (0..s.sb.segment_count_main)
        .find(|&seg| s.sit_entry(seg).valid_blocks() == 512)
        .unwrap_or_else(|| seg_of(&s, addrs[100]).0);
    s.edit_sit(segno, |e| e.vblocks = (e.vblocks & !0x3ff) | 500);
    let dev = s.into_dev();
    let expect = |c: &Corruption| matches!(c, Corruption::Sit { segno: s, field: "valid_blocks", value: 500, .. } if *s == segno);
    let Err(err) = F2fs::mount(dev.clone()).map(|_| ()) else {
        panic!("the cheap checks at mount must refuse it");
    };
    assert!(expect(corruption(&err)), "{err}");
    assert!(
        err.to_string().contains(&format!("segment {segno}")),
        "{err}"
    );
    if let Some(flagged) = fsck_flags(&dev, "sit-count") {
        assert!(flagged, "fsck.f2fs flags it too");
    }
    let readable: Vec<&str> = files.iter().map(|f| f.0).collect();
    assert_refused_and_safe(&dev, &files, &readable, "SIT count 500 vs 512", expect);
    let fs = open_for_reading(&dev).unwrap();
    assert!(
        fs.warnings().iter().any(|w| expect(&w.corruption)),
        "{:?}",
        fs.warnings()
    );
}

/// Item 3: NAT entries no tree reaches (fsck.f2fs: "unreachable"). Before, `fs put`
/// carried them into the next checkpoint.
#[test]
fn unreachable_nat_entries_are_refused() {
    let (dev, files) = base_image(&MkfsOptions::default());
    let probe = Surgery::new(dev.clone());
    let (small, _) = inode_addrs(&probe, &dev, "/small.txt");
    let small_addr = probe.node_addr(small) as u32;
    let (_, two) = inode_addrs(&probe, &dev, "/two.bin");
    let free_nid = (4..400)
        .find(|&n| probe.nat_entry(n).block_addr == 0)
        .unwrap();
    let (node_seg, _) = seg_of(&probe, small_addr);
    let free_node_block = (0..512)
        .map(|o| probe.sb.main_blkaddr + node_seg * 512 + o)
        .find(|&a| {
            let (seg, off) = seg_of(&probe, a);
            let e = probe.sit_entry(seg);
            !e.is_valid(off)
        })
        .unwrap();
    let variants = [
        ("a live node block of another node", small_addr),
        ("a free block of a node segment", free_node_block),
        ("a data block", two[0]),
    ];
    for (what, addr) in variants {
        let mut s = Surgery::new(dev.clone());
        s.set_nat(
            free_nid,
            NatEntry {
                version: 0,
                ino: free_nid,
                block_addr: addr,
            },
        );
        let dev = s.into_dev();
        if let Some(flagged) = fsck_flags(&dev, "nat-unreachable") {
            assert!(flagged, "{what}: fsck.f2fs flags it too");
        }
        let readable: Vec<&str> = files.iter().map(|f| f.0).collect();
        assert_refused_and_safe(
            &dev,
            &files,
            &readable,
            what,
            |c| matches!(c, Corruption::Nat { nid, .. } if *nid == free_nid),
        );
    }
}

/// Item 4: an inline file whose `i_size` says 40 GiB (the kernel's mount streamed 29 GB
/// of it): refused on access, the other files read.
#[test]
fn inline_file_larger_than_its_inode_is_refused() {
    let (dev, files) = base_image(&MkfsOptions::default());
    let mut s = Surgery::new(dev.clone());
    let (small, _) = inode_addrs(&s, &dev, "/small.txt");
    s.edit_inode(small, |i| i.size = 40 << 30);
    let dev = s.into_dev();
    let expect = |c: &Corruption| matches!(c, Corruption::Inode { ino, field: "i_size", .. } if *ino == small);
    let mut fs = F2fs::mount(dev.clone()).expect("the cheap checks do not read every inode");
    let err = cat(&mut fs, "/small.txt").expect_err("checked when the inode is read");
    assert!(expect(corruption(&err)), "{err}");
    assert!(err.to_string().contains("inline"), "{err}");
    if let Some(flagged) = fsck_flags(&dev, "inline-size") {
        assert!(flagged, "fsck.f2fs flags it too");
    }
    assert_refused_and_safe(
        &dev,
        &files,
        &["/d/mid.bin", "/two.bin"],
        "inline i_size",
        expect,
    );
}

/// The blocks flips may hit: metadata before the main area (with `nodes_only`, none of
/// it) and the blocks of node segments (data blocks have no checksum in F2FS: a flip
/// there is a write).
fn metadata_lbas(dev: &MemDevice, nodes_only: bool) -> Vec<u64> {
    let s = Surgery::new(dev.clone());
    let main = s.sb.main_blkaddr as u64;
    dev.stored_lbas()
        .filter(|&l| {
            if l < main {
                return !nodes_only;
            }
            s.sit_entry(((l - main) / 512) as u32).seg_type() >= 3
        })
        .collect()
}

/// Item 5, as a property over many seeds: `n` random bytes of metadata and node blocks
/// overwritten. Reading every file never panics and returns its exact bytes or an
/// error. The exception is what F2FS has no checksum for without `inode_checksum`: a
/// file's own `i_size` and inline data bytes (flips there change the file as a write
/// would; `Surgery::unprotected_bytes`).
fn flips_never_read_wrong_bytes(
    opts: &MkfsOptions,
    label: &str,
    seeds: u64,
    flips: std::ops::RangeInclusive<usize>,
    nodes_only: bool,
) {
    let (dev, files) = base_image(opts);
    let (mut refused, mut exempt, mut exact, mut errors) = (0, 0, 0, 0);
    let plain = Surgery::new(dev.clone());
    let owned: Vec<(u64, Vec<std::ops::Range<usize>>)> = files
        .iter()
        .map(|(path, _)| plain.unprotected_bytes(inode_addrs(&plain, &dev, path).0))
        .collect();
    let lbas = metadata_lbas(&dev, nodes_only);
    for seed in 0..seeds {
        let mut dev = dev.clone();
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut hit: Vec<(u64, usize)> = Vec::new();
        let n = flips.start() + (seed as usize % (flips.end() - flips.start() + 1));
        for _ in 0..n {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let lba = lbas[(rng % lbas.len() as u64) as usize];
            let offset = ((rng >> 20) % 4096) as usize;
            let value = (rng >> 40) as u8;
            let mut block = dev.block(lba).unwrap().to_vec();
            block[offset] = value;
            use flashstack_block::{BlockDevice, Hints, Payload};
            dev.write(0, lba, Payload::Bytes(&block), Hints::default())
                .unwrap();
            hit.push((lba, offset));
        }
        let Ok(mut fs) = open_for_reading(&dev) else {
            refused += 1;
            continue;
        };
        for ((path, want), (lba, ranges)) in files.iter().zip(&owned) {
            match cat(&mut fs, path) {
                Err(_) => errors += 1,
                Ok(got) if &got == want => exact += 1,
                Ok(_)
                    if hit
                        .iter()
                        .any(|(l, o)| l == lba && ranges.iter().any(|r| r.contains(o))) =>
                {
                    exempt += 1
                }
                Ok(got) => panic!(
                    "{label} seed {seed}: {path} read back {} bytes with success, first wrong \
                     at {:?} (flips at {hit:?}; main area from {})",
                    got.len(),
                    got.iter().zip(want).position(|(a, b)| a != b),
                    plain.sb.main_blkaddr
                ),
            }
        }
        let _ = fs.unmount();
    }
    println!(
        "{label}: {seeds} seeds × {flips:?} flips: {refused} images refused, {exact} exact reads, \
         {errors} read errors, {exempt} reads of a file whose own size or inline bytes were hit"
    );
}

/// The experiment: 100 flips in node blocks, here 200 seeds (it saw wrong bytes
/// with exit status 0 for 8 of 50).
#[test]
fn flips_in_node_blocks_never_read_wrong_bytes() {
    flips_never_read_wrong_bytes(&MkfsOptions::default(), "default", 200, 100..=100, true);
    flips_never_read_wrong_bytes(&android_like(), "android-like", 200, 100..=100, true);
}

/// A few flips anywhere in the metadata (superblock, checkpoint packs and their
/// journals, SIT, NAT, SSA) and node blocks.
#[test]
fn flips_in_metadata_never_read_wrong_bytes() {
    flips_never_read_wrong_bytes(&MkfsOptions::default(), "default", 400, 1..=8, false);
    flips_never_read_wrong_bytes(&android_like(), "android-like", 400, 1..=8, false);
}

/// Where fsck.f2fs flags an image, the read-write mount refuses it too: random flips in
/// metadata and node blocks, judged by both.
#[test]
fn read_write_mount_refuses_what_fsck_flags() {
    let Some(bin) = tool("fsck.f2fs") else {
        return;
    };
    for (label, opts) in [
        ("default", MkfsOptions::default()),
        ("android-like", android_like()),
    ] {
        let (dev, _) = base_image(&opts);
        let lbas = metadata_lbas(&dev, false);
        let dir = TempDir::new(&format!("verify-fsck-{label}"));
        let image = dir.file("image");
        let mut table = [[0u32; 2]; 2];
        let mut crashed = 0;
        for seed in 0..400u64 {
            let mut dev = dev.clone();
            let mut rng = seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
            for _ in 0..1 + seed % 4 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let lba = lbas[(rng % lbas.len() as u64) as usize];
                let mut block = dev.block(lba).unwrap().to_vec();
                block[((rng >> 20) % 4096) as usize] = (rng >> 40) as u8;
                use flashstack_block::{BlockDevice, Hints, Payload};
                dev.write(0, lba, Payload::Bytes(&block), Hints::default())
                    .unwrap();
            }
            dev.export(&image).unwrap();
            let report = fsck(&bin, &image);
            let ours = F2fs::mount_opts(dev.clone(), full(false));
            let refused = ours.is_err();
            if report.status.is_none() || !report.output.contains("[FSCK] other corrupted bugs") {
                // fsck.f2fs crashed (e.g. "buffer overflow detected" on a flipped
                // superblock field): no verdict to compare with.
                println!("{label} seed {seed}: fsck.f2fs crashed; ours refused: {refused}");
                crashed += 1;
                continue;
            }
            let flagged = !is_clean(&report);
            table[flagged as usize][refused as usize] += 1;
            assert!(
                !flagged || refused,
                "{label} seed {seed}: fsck.f2fs flags the image, our read-write mount took it:\n{}",
                report.output
            );
        }
        println!(
            "{label}: fsck clean & ours clean {}, fsck clean & ours refused {}, \
             fsck flagged & ours refused {}, fsck crashed {crashed}",
            table[0][0], table[0][1], table[1][1]
        );
    }
}

/// The checkpoint's `valid_block_count` counts fallocate's reservations (`NEW_ADDR`),
/// which the SIT does not: an image with fallocated files is not a count mismatch. It
/// mounts read-write with the full verification, fsck.f2fs agrees, and the count is held
/// exactly: one more or fewer than SIT plus reservations is refused, naming the count.
#[test]
fn fallocate_reservations_are_counted_not_refused() {
    let (dev, files) = base_image(&MkfsOptions::default());
    let mut fs = F2fs::mount_opts(dev, full(false)).unwrap();
    let f = fs.create("/reserved.db").unwrap();
    fs.write(f, 0, &pattern(10_000, 5)).unwrap();
    let keep = flashstack_f2fs::FallocMode::Allocate { keep_size: true };
    fs.fallocate(f, keep, 1 << 20, 300 * 4096).unwrap();
    let grow = flashstack_f2fs::FallocMode::Allocate { keep_size: false };
    let g = fs.create("/grown.bin").unwrap();
    fs.fallocate(g, grow, 0, 40 * 4096).unwrap();
    let dev = fs.unmount().unwrap();
    let s = Surgery::new(dev.clone());
    let sit: u64 = (0..s.sb.segment_count_main)
        .map(|seg| s.sit_entry(seg).valid_blocks() as u64)
        .sum();
    let cp_count = s.cp.valid_block_count;
    assert_eq!(
        cp_count,
        sit + 340,
        "the checkpoint counts the 340 reserved blocks"
    );
    check_image(&dev, "fallocated image");
    let mut fs = F2fs::mount_opts(dev.clone(), full(false)).expect("a fallocated image mounts");
    assert!(!fs.is_read_only() && fs.warnings().is_empty());
    for (path, want) in &files {
        assert_eq!(&cat(&mut fs, path).unwrap(), want, "{path}");
    }
    assert_eq!(cat(&mut fs, "/grown.bin").unwrap(), vec![0; 40 * 4096]);
    fs.write(f, 1 << 20, b"into the reservation").unwrap();
    check_image(&fs.unmount().unwrap(), "fallocated image written again");

    for delta in [1i64, -1, -341] {
        let mut s = Surgery::new(dev.clone());
        s.edit_checkpoint(|cp| cp.valid_block_count = (cp_count as i64 + delta) as u64);
        let bad = s.into_dev();
        let what = format!("valid_block_count {delta:+} off");
        if let Some(flagged) = fsck_flags(&bad, "falloc-count") {
            assert!(flagged, "{what}: fsck.f2fs flags it too");
        }
        let err = F2fs::mount_opts(bad.clone(), full(false))
            .map(|_| ())
            .expect_err(&what);
        let c = corruption(&err);
        assert!(
            matches!(
                c,
                Corruption::Count {
                    what: "valid blocks",
                    ..
                }
            ),
            "{what}: {c}"
        );
        println!("{what}: refused: {err}");
        // Read-only, every file still reads.
        let mut fs = open_for_reading(&bad).unwrap();
        for (path, want) in &files {
            assert_eq!(&cat(&mut fs, path).unwrap(), want, "{what}: {path}");
        }
    }
}
