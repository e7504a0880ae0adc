//! Images left by the stack, after a workload and after crash recoveries, judged by the
//! real `fsck.f2fs -f` (skipped with a notice if f2fs-tools is missing; a failure under
//! CI=true, as in crates/f2fs/tests).

use std::path::PathBuf;
use std::process::Command;

use flashstack_sqlvfs::{FileApi, OpenFlags};
use flashstack_stack::{Stack, StackConfig};

fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        let msg = format!("{name} not found: install the f2fs-tools package");
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg} (CI=true makes this a failure)");
        }
        eprintln!("notice: {msg}; skipping this test");
    }
    found
}

fn assert_fsck_clean(stack: &mut Stack, what: &str) {
    let Some(fsck) = tool("fsck.f2fs") else {
        return;
    };
    let image = std::env::temp_dir().join(format!(
        "flashstack-stack-{}-{}.img",
        std::process::id(),
        what
    ));
    stack.write_image(&image).unwrap();
    let out = Command::new(fsck).arg("-f").arg(&image).output().unwrap();
    let _ = std::fs::remove_file(&image);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{what}: fsck.f2fs failed:\n{text}");
    assert!(
        !text.contains("[FAIL]"),
        "{what}: fsck.f2fs found problems:\n{text}"
    );
}

fn workload(s: &mut Stack, files: u32, sync_every: u32) {
    let create = OpenFlags {
        create: true,
        ..OpenFlags::default()
    };
    let mut t = s.now_ns();
    let _ = s.mkdir(t, "/data");
    for i in 0..files {
        let path = format!("/data/f{}", i % 7);
        let Ok((f, t1)) = s.open(t, &path, create) else {
            return;
        };
        let Ok(t2) = s.write_at(t1, f, (i as u64 * 3001) % 40_000, &[i as u8; 9000]) else {
            return;
        };
        let t3 = if i % sync_every == 0 {
            s.sync(t2, f, false)
        } else {
            Ok(t2)
        };
        let Ok(t3) = t3 else { return };
        let Ok(t4) = s.close(t3, f) else { return };
        t = t4;
        if i % 11 == 10 {
            let _ = s.delete(t, &path, false);
        }
    }
}

#[test]
fn images_pass_fsck_after_workload_and_after_crashes() {
    let mut s = Stack::new(StackConfig::preset("default").unwrap()).unwrap();
    workload(&mut s, 60, 3);
    s.unmount(s.now_ns()).unwrap();
    assert_fsck_clean(&mut s, "after-workload");
    for cut in [3u64, 29, 111] {
        s.arm_power_cut(cut).unwrap();
        workload(&mut s, 40, 2);
        s.power_cut();
        s.recover().unwrap();
        assert_fsck_clean(&mut s, &format!("after-cut-{cut}"));
    }
}
