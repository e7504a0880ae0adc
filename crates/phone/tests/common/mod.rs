//! What the phone tests share: a small stack, fsck.f2fs, the personas' databases.

#![allow(dead_code)]

use flashstack_sqlvfs::{FileApi, SimDb, SimVfs, SqliteConfig};
use flashstack_stack::{SharedStack, Stack, StackConfig};

/// The default stack on a 1 GiB device (the default's eMMC with fewer blocks).
pub fn small_stack() -> StackConfig {
    let mut config = StackConfig::preset("default").unwrap();
    config.device.nand.geometry.blocks_per_plane = 4200;
    config.name = "default-1gib".into();
    config
}

/// `fsck.f2fs -f` on the stack's image (after a checkpoint).
pub fn assert_fsck_clean(stack: &mut Stack, what: &str) {
    let now = stack.now_ns();
    stack.sync_all(now).unwrap();
    let name = format!("{}.img", what.replace([':', ' ', '/'], "-"));
    let image = flashstack_testkit::scratch_dir("flashstack-phone").join(name);
    stack.write_image(&image).unwrap();
    flashstack_testkit::assert_fsck_clean(&image, what);
    let _ = std::fs::remove_file(&image);
}

/// Every database of the personas' apps on the stack passes `PRAGMA integrity_check`;
/// returns how many were checked.
pub fn check_persona_databases(shared: &SharedStack) -> usize {
    let vfs = SimVfs::register(Box::new(shared.clone()), 3, 1_000).unwrap();
    let mut checked = 0;
    for persona in flashstack_phone::persona_apps() {
        let app = persona.app;
        for i in 0..app.dbs.len() {
            let path = app.db_path(i);
            let now = shared.lock().now_ns();
            let (exists, _) = shared.clone().exists(now, &path).unwrap();
            assert!(exists, "{path} missing");
            let config: SqliteConfig = app.dbs[i].journal.unwrap_or(app.journal).config();
            let db = SimDb::open(&vfs, &path, &config).unwrap_or_else(|e| panic!("{path}: {e}"));
            let check: String = db
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(check, "ok", "{path}");
            db.close().unwrap();
            checked += 1;
        }
    }
    checked
}
