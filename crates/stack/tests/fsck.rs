//! Images left by the stack, after a workload and after crash recoveries, judged by the
//! real `fsck.f2fs -f` (skipped with a notice if f2fs-tools is missing; a failure under
//! CI=true, as in crates/f2fs/tests).

mod common;
use common::assert_fsck_clean;

use flashstack_sqlvfs::{FileApi, OpenFlags};
use flashstack_stack::{Stack, StackConfig};

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
