//! `flashstack fs frag` and `fs defrag` on image files: a database fragmented by
//! interleaved writes is measured as such, the copy baseline leaves it contiguous with
//! its bytes intact and fsck.f2fs clean, janusdL (the image loaded into a device with
//! REMAP) does the same without copying a byte, P on an image (no device placement) is
//! refused naming what is missing, and a damaged or non-F2FS image is refused; every
//! refusal leaves the file as it was. On a small used phone: janusdP and janusdL.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use flashstack_f2fs::{mkfs, F2fs, MemDevice, MkfsOptions};

const PAGES: u32 = 256;
const DB: &str = "/data/data/com.a/databases/a.db";

fn flashstack(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = flashstack_testkit::scratch_dir("flashstack-frag").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn page(tag: u8, i: u32) -> Vec<u8> {
    let mut p = vec![tag; 4096];
    p[..4].copy_from_slice(&i.to_le_bytes());
    p
}

/// A 128 MiB image whose database was written one page at a time, interleaved with
/// another database's pages (since deleted): 256 extents.
fn fragmented_image(path: &Path) {
    let mut dev = MemDevice::new(128 << 20);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_at(dev, 0).unwrap();
    for d in [
        "/data",
        "/data/data",
        "/data/data/com.a",
        "/data/data/com.a/databases",
    ] {
        fs.mkdir(d).unwrap();
    }
    let a = fs.create(DB).unwrap();
    let b = fs.create("/data/data/com.a/databases/b.db").unwrap();
    for i in 0..PAGES {
        fs.write(a, i as u64 * 4096, &page(1, i)).unwrap();
        fs.write(b, i as u64 * 4096, &page(2, i)).unwrap();
    }
    fs.unlink("/data/data/com.a/databases/b.db").unwrap();
    fs.unmount().unwrap().export(path).unwrap();
}

fn database_dof(image: &Path) -> (f64, u64) {
    let out = flashstack(&["fs", "frag", image.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let db = &v["by_class"]["database"];
    (
        db["dof_mean"].as_f64().unwrap(),
        db["block_ios"].as_u64().unwrap(),
    )
}

fn fsck_clean(image: &Path) {
    let Some(tool) = flashstack_testkit::fsck_f2fs() else {
        return;
    };
    let copy = image.with_extension("fsck");
    std::fs::copy(image, &copy).unwrap();
    let out = Command::new(tool)
        .arg("-f")
        .arg(&copy)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(
        !report.contains("[Fail]") && !report.contains("[FIX]") && !report.contains("[ASSERT]"),
        "{report}"
    );
    assert!(report.contains("[FSCK] other corrupted bugs"), "{report}");
}

fn refused(args: &[&str], image: &Path, needle: &str) {
    let before = std::fs::read(image).unwrap();
    let out = flashstack(args);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        std::fs::read(image).unwrap() == before,
        "{args:?} changed the file"
    );
}

#[test]
fn copy_defrag_of_an_image_and_its_refusals() {
    let dir = scratch("copy");
    let image = dir.join("img");
    fragmented_image(&image);
    let img = image.to_str().unwrap();
    assert_eq!(database_dof(&image), (PAGES as f64, PAGES as u64));
    let table = flashstack(&["fs", "frag", img]);
    assert!(
        text(&table.stdout).contains("database"),
        "{}",
        text(&table.stdout)
    );

    refused(&["fs", "defrag", img, "--mode", "P"], &image, "--phone");

    let out = flashstack(&["fs", "defrag", img, "--mode", "copy"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("1 copied") && said.contains("1.00 MiB read, 1.00 MiB written"),
        "{said}"
    );
    assert_eq!(database_dof(&image), (1.0, 2));
    fsck_clean(&image);
    let cat = flashstack(&["fs", "cat", img, DB]);
    let want: Vec<u8> = (0..PAGES).flat_map(|i| page(1, i)).collect();
    assert!(cat.stdout == want, "the database's bytes after the copy");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// janusdL on an image: loaded into a fresh `ldc-emmc` (REMAP is the FTL's), the database
/// remapped into one extent, no byte read or written again, the image written back
/// fsck-clean with the same bytes; a device too small for the image is refused naming
/// both sizes, the file unchanged.
#[test]
fn janusd_l_on_an_image_remaps_without_copying() {
    let dir = scratch("remap");
    let image = dir.join("img");
    fragmented_image(&image);
    let img = image.to_str().unwrap();
    refused(
        &[
            "fs",
            "defrag",
            img,
            "--mode",
            "L",
            "--device",
            "ldc-emmc+nand.geometry.blocks_per_plane=30",
        ],
        &image,
        "larger device",
    );
    let out = flashstack(&["fs", "defrag", img, "--mode", "L", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["files_remapped"], 1, "{r}");
    assert_eq!(r["files_copied"], 0, "{r}");
    assert_eq!(r["cost"]["blocks_remapped"], PAGES, "{r}");
    assert_eq!(r["cost"]["bytes_written"], 0, "{r}");
    assert_eq!(database_dof(&image), (1.0, 2));
    fsck_clean(&image);
    let cat = flashstack(&["fs", "cat", img, DB]);
    let want: Vec<u8> = (0..PAGES).flat_map(|i| page(1, i)).collect();
    assert!(cat.stdout == want, "the database's bytes after the remap");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_and_foreign_images_are_refused_unchanged() {
    let dir = scratch("bad");
    let image = dir.join("img");
    fragmented_image(&image);
    let mut bytes = std::fs::read(&image).unwrap();
    // Both superblock copies' magic.
    for at in [1024usize, 4096 + 1024] {
        bytes[at] ^= 0xFF;
    }
    std::fs::write(&image, &bytes).unwrap();
    refused(
        &["fs", "defrag", image.to_str().unwrap(), "--mode", "copy"],
        &image,
        "superblock",
    );
    let zeros = dir.join("zeros");
    std::fs::write(&zeros, vec![0u8; 4 << 20]).unwrap();
    refused(
        &["fs", "defrag", zeros.to_str().unwrap(), "--mode", "copy"],
        &zeros,
        "superblock",
    );
    refused(
        &["fs", "frag", zeros.to_str().unwrap()],
        &zeros,
        "superblock",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A small used phone: ufs31's array with 24 blocks per plane (3.4 GiB raw), 60 % full
/// after two days (a few seconds to build).
fn small_phone(dir: &Path) -> PathBuf {
    let phone = dir.join("small.phone");
    let out = flashstack(&[
        "phone",
        "age",
        "--stack",
        "ufs31+nand.geometry.blocks_per_plane=24",
        "--fill",
        "0.6",
        "--days",
        "2",
        "-q",
        "-o",
        phone.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    phone
}

fn frag_json(args: &[&str]) -> serde_json::Value {
    let out = flashstack(args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn janusd_p_on_a_small_used_phone() {
    let dir = scratch("phone");
    let phone = small_phone(&dir);
    let p = phone.to_str().unwrap();
    let before = frag_json(&["fs", "frag", "--phone", p, "--json"]);
    assert_eq!(
        (before["units"].as_u64(), before["dies"].as_u64()),
        (Some(8), Some(2))
    );
    assert!(before["by_class"]["database"]["dof_mean"].as_f64().unwrap() > 1.0);
    let again = flashstack(&["fs", "frag", "--phone", p, "--json"]);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&again.stdout).unwrap(),
        before
    );

    let input = std::fs::read(&phone).unwrap();
    // janusdL on the phone's own worn device: files remapped, nothing copied.
    let l = flashstack(&["fs", "defrag", "--phone", p, "--mode", "L", "--json"]);
    assert!(l.status.success(), "{}", text(&l.stderr));
    let l: serde_json::Value = serde_json::from_slice(&l.stdout).unwrap();
    assert!(l["files_remapped"].as_u64().unwrap() > 0, "{l}");
    assert_eq!(l["cost"]["bytes_written"], 0, "{l}");
    assert!(
        l["after"]["dof_mean"].as_f64().unwrap() < l["before"]["dof_mean"].as_f64().unwrap(),
        "{l}"
    );
    let (out_phone, image) = (dir.join("out.phone"), dir.join("out.img"));
    let run = flashstack(&[
        "fs",
        "defrag",
        "--phone",
        p,
        "--mode",
        "P",
        "-o",
        out_phone.to_str().unwrap(),
        "--image-out",
        image.to_str().unwrap(),
        "--json",
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(
        std::fs::read(&phone).unwrap() == input,
        "the input phone changed"
    );
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert!(report["files_copied"].as_u64().unwrap() > 0, "{report}");
    assert!(report["cost"]["nand_page_programs"].as_u64().unwrap() > 0);
    fsck_clean(&image);
    let after = frag_json(&[
        "fs",
        "frag",
        "--phone",
        out_phone.to_str().unwrap(),
        "--json",
    ]);
    let ratio = |v: &serde_json::Value| v["all"]["collision_ratio_mean"].as_f64().unwrap();
    assert!(
        ratio(&after) < ratio(&before),
        "{} -> {}",
        ratio(&before),
        ratio(&after)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
