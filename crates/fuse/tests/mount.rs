//! The file-system FUSE adapter under real programs: the sqlite3 shell, fio with
//! verification, and the coreutils, on [`MemTree`] mounted through [`TreeFs`]. Needs root,
//! /dev/fuse, sqlite3 and fio: under CI=true a missing piece is a failure; elsewhere the
//! test says what is missing and passes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use flashstack_fuse::{InodeFs, MemTree, TreeFs};

fn missing_prerequisite() -> Option<String> {
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if !root {
        return Some("not root".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse missing".into());
    }
    for tool in ["sqlite3", "fio"] {
        if !Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(format!("{tool} missing"));
        }
    }
    None
}

fn sh(command: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", command])
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "`{command}` failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir = flashstack_testkit::scratch_dir("flashstack-fuse").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mount(core: Arc<Mutex<MemTree>>, at: &Path) -> fuser::BackgroundSession {
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName("flashstack-test".into()),
        fuser::MountOption::DefaultPermissions,
    ];
    fuser::spawn_mount(TreeFs::new(core), at, &config).expect("mounts")
}

#[test]
fn real_programs_run_on_the_mounted_tree() {
    if let Some(why) = missing_prerequisite() {
        flashstack_testkit::skip("mount the FUSE adapter", &why);
        return;
    }
    let dir = scratch("tree");
    let core = Arc::new(Mutex::new(MemTree::new()));
    let session = mount(Arc::clone(&core), &dir);
    let d = dir.display();
    // SQLite: 10,000 rows in 100 transactions, then its own consistency check.
    let mut script = String::from(
        "PRAGMA journal_mode=DELETE; CREATE TABLE m(id INTEGER PRIMARY KEY, body TEXT);\n",
    );
    for t in 0..100 {
        script.push_str("BEGIN;\n");
        for r in 0..100 {
            script.push_str(&format!(
                "INSERT INTO m(body) VALUES ('message {t}-{r} {}');\n",
                "x".repeat(r % 40)
            ));
        }
        script.push_str("COMMIT;\n");
    }
    std::fs::write(dir.with_extension("sql"), script).unwrap();
    sh(&format!(
        "sqlite3 {d}/app.db < {}",
        dir.with_extension("sql").display()
    ));
    assert_eq!(
        sh(&format!("sqlite3 {d}/app.db 'PRAGMA integrity_check'")),
        "ok"
    );
    assert_eq!(
        sh(&format!("sqlite3 {d}/app.db 'SELECT count(*) FROM m'")),
        "10000"
    );
    // fio: random overwrites, fsync after every write, crc32c verification.
    sh(&format!(
        "fio --name=v --directory={d} --rw=randwrite --bs=4k --size=4m --ioengine=sync \
         --fsync=1 --verify=crc32c --do_verify=1 --verify_state_save=0 --output=/dev/null"
    ));
    // The namespace operations coreutils use.
    sh(&format!(
        "mkdir -p {d}/a/b && echo hello > {d}/a/b/f && mv {d}/a/b/f {d}/a/g && ln {d}/a/g {d}/a/h \
         && rm {d}/a/g && test \"$(cat {d}/a/h)\" = hello && rmdir {d}/a/b && ls {d}/a"
    ));
    session.umount_and_join().expect("unmounts");
    // What the programs left is in the core, not in a kernel cache.
    let mut tree = core.lock().unwrap();
    let root = tree.root();
    let db = tree
        .lookup(root, b"app.db")
        .expect("the database is in the tree");
    assert!(db.size > 100_000, "{db:?}");
    let a = tree.lookup(root, b"a").unwrap();
    assert_eq!(tree.readdir(a.ino).unwrap().len(), 1);
}

/// A shared mapping of a direct-I/O file (SQLite's WAL index is one) stays coherent with
/// read(2) and write(2) on the same file, in both directions and across processes, and
/// what was written through the mapping reaches the core. Then sqlite3 in WAL mode.
#[test]
fn shared_mappings_stay_coherent_with_reads_and_writes() {
    if let Some(why) = missing_prerequisite().or_else(|| {
        (!Command::new("sh")
            .args(["-c", "command -v python3"])
            .output()
            .is_ok_and(|o| o.status.success()))
        .then(|| "python3 missing".to_string())
    }) {
        flashstack_testkit::skip("run the FUSE mmap test", &why);
        return;
    }
    let dir = scratch("mmap");
    let core = Arc::new(Mutex::new(MemTree::new()));
    let session = mount(Arc::clone(&core), &dir);
    let d = dir.display();
    let out = sh(&format!(
        "python3 -c \"\nimport mmap, os, subprocess\n\
         p = '{d}/shm'\n\
         fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)\n\
         os.ftruncate(fd, 32768)\n\
         m = mmap.mmap(fd, 32768, mmap.MAP_SHARED)\n\
         m[100:105] = b'hello'\n\
         m.flush()\n\
         assert os.pread(fd, 5, 100) == b'hello'\n\
         os.pwrite(fd, b'world', 8192)\n\
         assert m[8192:8197] == b'world', m[8192:8197]\n\
         m[20000:20003] = b'abc'\n\
         other = subprocess.run(['python3', '-c', 'import mmap, os; f = os.open(\\'{d}/shm\\', os.O_RDWR); \
         n = mmap.mmap(f, 32768, mmap.MAP_SHARED); n[30000:30002] = n[20000:20002]'])\n\
         assert other.returncode == 0\n\
         assert m[30000:30002] == b'ab'\n\
         m.close()\n\
         os.close(fd)\n\
         print('coherent')\n\""
    ));
    assert_eq!(out, "coherent");
    assert_eq!(
        sh(&format!(
            "sqlite3 {d}/w.db 'PRAGMA journal_mode=WAL' 'CREATE TABLE t(x)' \
             'INSERT INTO t VALUES (1), (2)' 'SELECT sum(x) FROM t'"
        )),
        "wal\n3"
    );
    session.umount_and_join().expect("unmounts");
    let mut tree = core.lock().unwrap();
    let root = tree.root();
    let shm = tree.lookup(root, b"shm").unwrap().ino;
    let mut buf = [0u8; 5];
    for (offset, want) in [(100, &b"hello"[..]), (8192, b"world"), (30000, b"ab")] {
        let n = tree.read(shm, offset, &mut buf[..want.len()]).unwrap();
        assert_eq!(
            &buf[..n],
            want,
            "at {offset}: mapped writes reached the core"
        );
    }
}
