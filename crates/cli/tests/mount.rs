//! `flashstack mount --block`: a kernel ext4 on the emulated FTL through FUSE and a loop
//! device. Needs root, /dev/fuse, losetup and mkfs.ext4: under CI=true a missing piece is
//! a failure; elsewhere the test says what is missing and passes.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::flashstack_within_a_minute;

/// Why this machine cannot run the test, if it cannot.
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
    for tool in ["losetup", "mkfs.ext4", "mount", "umount"] {
        let found = Command::new("sh")
            .args([
                "-c",
                &format!("command -v {tool} || test -x /usr/sbin/{tool} || test -x /sbin/{tool}"),
            ])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Some(format!("{tool} missing"));
        }
    }
    None
}

fn sh(command: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", &format!("PATH=$PATH:/usr/sbin:/sbin; {command}")])
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "`{command}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn scratch(name: &str) -> PathBuf {
    // Images and metrics sit beside the mount point, inside the process's scratch directory.
    let dir = flashstack_testkit::scratch_dir("flashstack-mount").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

struct Daemon {
    child: Child,
    mountpoint: PathBuf,
}

/// A test that fails leaves no daemon or mount behind.
impl Drop for Daemon {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if is_mounted(&self.mountpoint) {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(&self.mountpoint)
                .status();
        }
    }
}

/// Whether `dir` is a FUSE mount point now (the kernel lists it in /proc/mounts).
fn is_mounted(dir: &Path) -> bool {
    let dir = dir.to_str().unwrap();
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(dir))
}

impl Daemon {
    fn start(mountpoint: &Path, metrics: &Path) -> Daemon {
        Daemon::start_with(mountpoint, metrics, &["--block"])
    }

    fn start_with(mountpoint: &Path, metrics: &Path, extra: &[&str]) -> Daemon {
        let mut args = vec![
            "--device",
            "ldc-emmc+nand.geometry.blocks_per_plane=1024",
            "--metrics",
            metrics.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        Daemon::start_args(mountpoint, &args)
    }

    /// `flashstack mount MOUNTPOINT ARGS...`, once the mount is visible.
    fn start_args(mountpoint: &Path, args: &[&str]) -> Daemon {
        let child = Command::new(env!("CARGO_BIN_EXE_flashstack"))
            .arg("mount")
            .arg(mountpoint)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        let start = Instant::now();
        while !is_mounted(mountpoint) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "mount did not appear"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Daemon {
            child,
            mountpoint: mountpoint.to_path_buf(),
        }
    }

    /// SIGTERM, then the daemon unmounts, reports and exits.
    fn stop(mut self) -> String {
        sh(&format!("kill -TERM {}", self.child.id()));
        let out = std::mem::replace(&mut self.child, Command::new("true").spawn().unwrap())
            .wait_with_output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }
}

#[test]
fn ext4_on_the_emulated_ftl_through_a_loop_device() {
    if let Some(why) = missing_prerequisite() {
        flashstack_testkit::skip("run the block-file mount test", &why);
        return;
    }
    let (fuse_dir, ext4_dir) = (scratch("fuse"), scratch("ext4"));
    let metrics = fuse_dir.with_extension("json");
    let daemon = Daemon::start(&fuse_dir, &metrics);
    let disk = fuse_dir.join("disk.img");
    let loopdev = sh(&format!("losetup -f --show {}", disk.display()));
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let ext4 = ext4_dir.display();
    sh(&format!("mkfs.ext4 -q -F {loopdev}"));
    sh(&format!(
        "mount {loopdev} {ext4} && cp -r {} {ext4}/tree && umount {ext4}",
        tree.display()
    ));
    // Remount: the copy must read back byte-exact from the device, not from a cache.
    sh("echo 3 > /proc/sys/vm/drop_caches || true");
    sh(&format!(
        "mount {loopdev} {ext4} && diff -r {} {ext4}/tree && umount {ext4}",
        tree.display()
    ));
    sh(&format!("losetup -d {loopdev}"));
    let table = daemon.stop();
    assert!(table.contains("NAND page programs"), "{table}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&metrics).unwrap()).unwrap();
    let programs = json["nand"]["page_programs"].as_u64().unwrap();
    let flushes = json["host"]["flush_requests"].as_u64().unwrap_or(0);
    assert!(
        programs > 100,
        "the FTL saw the traffic: {programs} programs"
    );
    assert!(
        flushes > 0,
        "ext4's journal commits reach the FTL as flushes: {json}"
    );
}

#[test]
fn mount_refuses_a_non_empty_mountpoint() {
    let dir = scratch("busy");
    std::fs::write(dir.join("file"), b"x").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(["mount", "--block", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not empty"), "{stderr}");
}

/// SQLite and fio (crc32c verification) on flashstack's own F2FS (on the emulated FTL)
/// through the FUSE mount; the image left at unmount passes fsck.f2fs and a second mount
/// finds the data.
#[test]
fn sqlite_on_the_f2fs_mount_survives_unmount_and_remount() {
    if let Some(why) = missing_prerequisite().or_else(|| missing_tool("sqlite3")) {
        flashstack_testkit::skip("run the F2FS mount test", &why);
        return;
    }
    let dir = scratch("f2fs");
    let image = dir.with_extension("img");
    let metrics = dir.with_extension("json");
    let _ = std::fs::remove_file(&image);
    let image_arg = ["--image", image.to_str().unwrap()];
    let trace = dir.with_extension("fst");
    let recorded_args = [
        image_arg[0],
        image_arg[1],
        "--record",
        trace.to_str().unwrap(),
    ];
    let daemon = Daemon::start_with(&dir, &metrics, &recorded_args);
    let d = dir.display();
    let mut script = String::from("CREATE TABLE m(id INTEGER PRIMARY KEY, body TEXT);\n");
    for t in 0..100 {
        script.push_str("BEGIN;\n");
        for r in 0..100 {
            script.push_str(&format!(
                "INSERT INTO m(body) VALUES ('message {t}-{r}');\n"
            ));
        }
        script.push_str("COMMIT;\n");
    }
    let sql = dir.with_extension("sql");
    std::fs::write(&sql, script).unwrap();
    sh(&format!("sqlite3 {d}/app.db < {}", sql.display()));
    assert_eq!(
        sh(&format!("sqlite3 {d}/app.db 'PRAGMA integrity_check'")),
        "ok"
    );
    sh(&format!(
        "mkdir {d}/dir && echo hello > {d}/dir/a && mv {d}/dir/a {d}/dir/b"
    ));
    // fio: random overwrites, fsync after every write, crc32c verification.
    if missing_tool("fio").is_none() {
        sh(&format!(
            "fio --name=v --directory={d} --rw=randwrite --bs=4k --size=4m --ioengine=sync \
             --fsync=1 --verify=crc32c --do_verify=1 --verify_state_save=0 --output=/dev/null"
        ));
    } else {
        flashstack_testkit::skip(
            "verify with fio",
            "fio is missing (scripts/test installs it)",
        );
    }
    let table = daemon.stop();
    assert!(table.contains("NAND page programs"), "{table}");
    // The page cache's and F2FS's figures beside the device's, in the table and the JSON.
    assert!(table.contains("page cache\n") && table.contains("pages written back"));
    assert!(table.contains("F2FS (4 KiB blocks)") && table.contains("fsyncs"));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&metrics).unwrap()).unwrap();
    assert!(json["nand"]["page_programs"].as_u64().unwrap() > 0);
    assert!(
        json["cache"]["pages_written_back"]["fsync"]
            .as_u64()
            .unwrap()
            > 100
    );
    assert!(json["cache"]["read_hits"].as_u64().is_some());
    assert!(
        json["f2fs"]["fsyncs"].as_u64().unwrap() >= 200,
        "{}",
        json["f2fs"]
    );
    assert!(json["f2fs"]["data_blocks"].as_u64().unwrap() > 0);
    assert!(json["requests"]["fsync"]["count"].as_u64().is_some());
    assert_eq!(
        json["stack"],
        "default with ldc-emmc+nand.geometry.blocks_per_plane=1024"
    );
    check_recorded_trace(&trace);
    let _ = std::fs::remove_file(&trace);
    fsck_clean(&image);
    let daemon = Daemon::start_with(&dir, &metrics, &image_arg);
    assert_eq!(
        sh(&format!("sqlite3 {d}/app.db 'SELECT count(*) FROM m'")),
        "10000"
    );
    assert_eq!(sh(&format!("cat {d}/dir/b")), "hello");
    daemon.stop();
}

/// `--record` wrote a valid file-level trace of the session: sqlite3's database and
/// journal traffic with its fsyncs, and the shell's rename, with the paths seen on the mount.
fn check_recorded_trace(trace: &Path) {
    let text = std::fs::read_to_string(trace).expect("the trace was written");
    assert!(text.starts_with("#flashstack-filetrace 1\n"));
    assert!(
        text.contains(" open 3 /app.db rdwr|creat"),
        "sqlite3 created /app.db"
    );
    assert!(
        text.contains(" /app.db-journal "),
        "the rollback journal appears"
    );
    assert!(text.contains(" rename /dir/a /dir/b"), "the shell's mv");
    let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(["workload", "analyze", "--json"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fsyncs =
        summary["fsync_count"].as_u64().unwrap() + summary["fdatasync_count"].as_u64().unwrap();
    assert!(
        fsyncs >= 200,
        "100 transactions sync journal and database: {summary}"
    );
    assert!(
        summary["write_bytes"].as_u64().unwrap() > 4 << 20,
        "fio's 4 MiB at least"
    );
}

fn missing_tool(tool: &str) -> Option<String> {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    (!found).then(|| format!("{tool} missing"))
}

fn f2fs_tool(tool: &str) -> Option<String> {
    ["/usr/sbin/", "/sbin/", "/usr/bin/"]
        .iter()
        .map(|dir| format!("{dir}{tool}"))
        .find(|path| Path::new(path).exists())
}

/// Killing the daemon (SIGKILL, no unmount) mid-write: the image holds what the device had
/// made durable, and the next mount recovers every fsync'd file by roll-forward.
#[test]
fn fsynced_files_survive_sigkill_of_the_daemon() {
    if let Some(why) = missing_prerequisite() {
        flashstack_testkit::skip("run the SIGKILL mount test", &why);
        return;
    }
    let dir = scratch("kill");
    let image = dir.with_extension("img");
    let metrics = dir.with_extension("json");
    let _ = std::fs::remove_file(&image);
    let image_arg = ["--image", image.to_str().unwrap()];
    let mut daemon = Daemon::start_with(&dir, &metrics, &image_arg);
    let content = |i: usize| format!("file {i} ").repeat(1500 + 300 * i);
    for i in 0..6 {
        use std::io::Write;
        let mut f = std::fs::File::create(dir.join(format!("synced{i}"))).unwrap();
        f.write_all(content(i).as_bytes()).unwrap();
        f.sync_all().unwrap();
    }
    std::fs::write(dir.join("unsynced"), b"may be lost").unwrap();
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    sh(&format!("umount -l {}", dir.display()));
    let daemon = Daemon::start_with(&dir, &metrics, &image_arg);
    for i in 0..6 {
        let got = std::fs::read_to_string(dir.join(format!("synced{i}"))).unwrap();
        assert!(got == content(i), "synced{i}: {} bytes back", got.len());
    }
    daemon.stop();
    fsck_clean(&image);
}

/// `--stack FILE.toml` configures the mount's page cache (here a tiny one, so writes push
/// pages out under pressure) and F2FS; `--device` still replaces its device.
#[test]
fn a_stack_file_configures_the_page_cache() {
    if let Some(why) = missing_prerequisite() {
        flashstack_testkit::skip("run the --stack mount test", &why);
        return;
    }
    let dir = scratch("stack");
    let metrics = dir.with_extension("json");
    let mut stack = flashstack_stack::StackConfig::preset("default").unwrap();
    stack.name = "tiny-cache".into();
    stack.cache.memory_bytes = 100 << 10;
    stack.cache.cache_bytes_max = 8 * 4096;
    stack.cache.writeback_batch_pages_max = 2;
    let toml = dir.with_extension("toml");
    std::fs::write(&toml, stack.to_toml_string()).unwrap();
    let daemon = Daemon::start_with(&dir, &metrics, &["--stack", toml.to_str().unwrap()]);
    let d = dir.display();
    sh(&format!(
        "head -c 262144 /dev/urandom > {d}.src && cp {d}.src {d}/file && cmp {d}.src {d}/file"
    ));
    daemon.stop();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&metrics).unwrap()).unwrap();
    assert_eq!(
        json["stack"],
        "tiny-cache with ldc-emmc+nand.geometry.blocks_per_plane=1024"
    );
    let written = &json["cache"]["pages_written_back"];
    let early = ["pressure", "throttle", "background"]
        .iter()
        .filter_map(|r| written[r].as_u64())
        .sum::<u64>();
    assert!(early > 0, "a tiny cache writes back before sync: {written}");
    assert!(json["cache"]["evictions"].as_u64().unwrap() > 0);
}

#[test]
fn mount_names_an_unknown_stack() {
    let dir = scratch("nostack");
    let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(["mount", dir.to_str().unwrap(), "--stack", "no-such-stack"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--stack no-such-stack"), "{stderr}");
}

/// Symlinks on the F2FS mount (`ln -s`, `readlink`, following, rename, unlink, a long
/// target in a data block) and extended attributes (python3's `os.setxattr` & co.: set,
/// replace, list, remove, the flags, ENOSPC when the inline area is full), kept across
/// unmount and remount; fsck.f2fs accepts the image.
#[test]
fn symlinks_and_xattrs_on_the_f2fs_mount_survive_remount() {
    if let Some(why) = missing_prerequisite() {
        flashstack_testkit::skip("run the symlink mount test", &why);
        return;
    }
    let dir = scratch("symlink");
    let image = dir.with_extension("img");
    let metrics = dir.with_extension("json");
    let _ = std::fs::remove_file(&image);
    let image_arg = ["--image", image.to_str().unwrap()];
    let daemon = Daemon::start_with(&dir, &metrics, &image_arg);
    let d = dir.display();
    let long = format!("/{}", "a-long-directory-name/".repeat(170));
    sh(&format!(
        "echo hello > {d}/target && ln -s target {d}/link && mkdir {d}/sub && \
         ln -s ../target {d}/sub/up && ln -s {long} {d}/long && ln -s nowhere {d}/gone"
    ));
    assert_eq!(sh(&format!("readlink {d}/link")), "target");
    assert_eq!(sh(&format!("cat {d}/link {d}/sub/up")), "hello\nhello");
    assert_eq!(sh(&format!("readlink {d}/long")), long);
    assert_eq!(sh(&format!("stat -c %F {d}/link")), "symbolic link");
    assert_eq!(sh(&format!("find {d} -type l | wc -l")), "4");
    sh(&format!("mv {d}/link {d}/renamed && rm {d}/gone"));
    // A hard link to a symlink is refused (F2FS's fsck allows one link per symlink).
    let refused = Command::new("ln")
        .args(["-P", &format!("{d}/renamed"), &format!("{d}/hard")])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let xattrs = python_xattrs(&format!(
        "import os, errno\n\
         p = '{d}/target'\n\
         os.setxattr(p, 'user.app', b'v1')\n\
         os.setxattr(p, 'user.app', b'v2', os.XATTR_REPLACE)\n\
         os.setxattr(p, 'user.gone', b'x')\n\
         os.removexattr(p, 'user.gone')\n\
         os.setxattr('{d}/sub', 'user.dir', b'on a directory')\n\
         try:\n    os.setxattr(p, 'user.app', b'v3', os.XATTR_CREATE)\nexcept OSError as e:\n    assert e.errno == errno.EEXIST\nelse:\n    raise SystemExit('no EEXIST')\n\
         try:\n    os.getxattr(p, 'user.none')\nexcept OSError as e:\n    assert e.errno == errno.ENODATA\nelse:\n    raise SystemExit('no ENODATA')\n\
         try:\n    os.setxattr(p, 'user.huge', b'z' * 400)\nexcept OSError as e:\n    assert e.errno == errno.ENOSPC\nelse:\n    raise SystemExit('no ENOSPC')\n\
         print(sorted(os.listxattr(p)), os.getxattr(p, 'user.app'))\n"
    ));
    if let Some(out) = xattrs {
        assert_eq!(out, "['user.app'] b'v2'");
    }
    daemon.stop();
    fsck_clean(&image);
    let daemon = Daemon::start_with(&dir, &metrics, &image_arg);
    assert_eq!(sh(&format!("readlink {d}/renamed")), "target");
    assert_eq!(sh(&format!("cat {d}/renamed")), "hello");
    assert_eq!(sh(&format!("readlink {d}/sub/up")), "../target");
    assert_eq!(sh(&format!("readlink {d}/long")), long);
    assert!(!Path::new(&format!("{d}/gone")).exists());
    assert!(std::fs::symlink_metadata(format!("{d}/gone")).is_err());
    let after = python_xattrs(&format!(
        "import os\n\
         print(os.listxattr('{d}/target'), os.getxattr('{d}/target', 'user.app'), \
         os.getxattr('{d}/sub', 'user.dir'))\n"
    ));
    if let Some(out) = after {
        assert_eq!(out, "['user.app'] b'v2' b'on a directory'");
    }
    daemon.stop();
}

/// Runs a python3 script (xattr calls need no extra package there); `None` without python3.
fn python_xattrs(script: &str) -> Option<String> {
    if let Some(why) = missing_tool("python3") {
        flashstack_testkit::skip("check xattrs with python3", &why);
        return None;
    }
    let out = Command::new("python3")
        .args(["-c", script])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether this machine can run `what` (root, /dev/fuse, the block tools and `tools`); if
/// not, says why on stdout (under CI=true that is a failure).
fn can_run(what: &str, tools: &[&str]) -> bool {
    let why = missing_prerequisite().or_else(|| tools.iter().find_map(|t| missing_tool(t)));
    match why {
        None => true,
        Some(why) => {
            flashstack_testkit::skip(&format!("run {what}"), &why);
            false
        }
    }
}

/// A scratch mountpoint, the image beside it (none yet) and the metrics file.
fn scratch_with_image(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = scratch(name);
    let image = dir.with_extension("img");
    let _ = std::fs::remove_file(&image);
    let metrics = dir.with_extension("json");
    (dir, image, metrics)
}

/// An image cut short (to a whole number of blocks) is refused with both sizes named, in
/// F2FS mode and in block-file mode, and the refused command leaves the file byte for
/// byte as it was (it used to be zero-padded and served, and extended on disk).
#[test]
fn a_truncated_image_is_refused_and_left_as_it_was() {
    if !can_run("the truncated-image mount test", &[]) {
        return;
    }
    let (dir, image, _) = scratch_with_image("short");
    let mkfs = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(["fs", "mkfs", image.to_str().unwrap(), "--size", "64MiB"])
        .output()
        .unwrap();
    assert!(mkfs.status.success());
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&image)
        .unwrap();
    file.set_len(32 << 20).unwrap();
    drop(file);
    let before = std::fs::read(&image).unwrap();
    let (d, i) = (dir.to_str().unwrap(), image.to_str().unwrap());
    let device = "ldc-emmc+nand.geometry.blocks_per_plane=1024";
    let (ok, stderr) = flashstack_within_a_minute(&["mount", d, "--device", device, "--image", i]);
    assert!(!ok);
    assert!(
        stderr.contains("truncated") && stderr.contains("33554432") && stderr.contains("67108864"),
        "{stderr}"
    );
    assert!(
        std::fs::read(&image).unwrap() == before,
        "the refused image changed"
    );
    let (ok, stderr) = flashstack_within_a_minute(&["mount", d, "--block", "--image", i]);
    assert!(!ok);
    assert!(
        stderr.contains("33554432 bytes but the device holds"),
        "{stderr}"
    );
    assert!(
        std::fs::read(&image).unwrap() == before,
        "the refused image changed"
    );
    assert!(!is_mounted(&dir));
}

/// `mount --image NEW` on the default stack (a 16 GiB device) writes a sparse image: only
/// the blocks mkfs and F2FS put data in take disk space (it used to write 16 GiB of zeros
/// before the mount came up). The time to come up is printed, not asserted.
#[test]
fn a_new_image_on_the_default_stack_is_sparse() {
    if !can_run("the sparse-image mount test", &[]) {
        return;
    }
    let (dir, image, _) = scratch_with_image("sparse");
    let start = Instant::now();
    let daemon = Daemon::start_args(&dir, &["--image", image.to_str().unwrap()]);
    println!(
        "mount --image NEW on the default stack came up in {:?}",
        start.elapsed()
    );
    std::fs::write(dir.join("f"), b"kept").unwrap();
    daemon.stop();
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&image).unwrap();
    assert_eq!(meta.len(), 17_180_033_024, "the default device's capacity");
    let on_disk = meta.blocks() * 512;
    assert!(
        on_disk < 4 << 20,
        "{on_disk} bytes allocated for a new image"
    );
    let daemon = Daemon::start_args(&dir, &["--image", image.to_str().unwrap()]);
    assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"kept");
    daemon.stop();
    let _ = std::fs::remove_file(&image);
}

/// Block-file mode with `--image`: ext4 on the loop device appends records, each fsync'd;
/// the daemon is killed (SIGKILL, no unmount) and restarted on the same image: every
/// fsync'd record is there (ext4's journal replays). The image used to be written only at
/// unmount, so all of them were lost.
#[test]
fn block_mode_keeps_fsynced_records_through_sigkill() {
    if !can_run("the block-file SIGKILL test", &["python3"]) {
        return;
    }
    let (fuse_dir, image, metrics) = scratch_with_image("bkill");
    let ext4_dir = scratch("bkill-ext4");
    let args = ["--block", "--image", image.to_str().unwrap()];
    let mut daemon = Daemon::start_with(&fuse_dir, &metrics, &args);
    let disk = fuse_dir.join("disk.img");
    let loopdev = sh(&format!("losetup -f --show {}", disk.display()));
    let ext4 = ext4_dir.display();
    sh(&format!(
        "mkfs.ext4 -q -F {loopdev} && mount {loopdev} {ext4}"
    ));
    let records = 300;
    sh(&format!(
        "python3 -c \"import os\nf = os.open('{ext4}/log', os.O_WRONLY | os.O_CREAT | os.O_APPEND)\n\
         for i in range({records}):\n    os.write(f, b'record %d\\n' % i)\n    os.fsync(f)\n\""
    ));
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    // The dead device: let go of ext4, the loop device and the FUSE mount.
    let _ = Command::new("sh")
        .args([
            "-c",
            &format!(
                "PATH=$PATH:/usr/sbin:/sbin; umount -l {ext4}; losetup -d {loopdev}; \
                 umount -l {}",
                fuse_dir.display()
            ),
        ])
        .status();
    let daemon = Daemon::start_with(&fuse_dir, &metrics, &args);
    let loopdev = sh(&format!("losetup -f --show {}", disk.display()));
    sh(&format!("mount {loopdev} {ext4}"));
    let log = std::fs::read_to_string(ext4_dir.join("log")).unwrap();
    sh(&format!("umount {ext4} && losetup -d {loopdev}"));
    daemon.stop();
    let expected: String = (0..records).map(|i| format!("record {i}\n")).collect();
    assert!(
        log == expected,
        "{} of {records} fsync'd records back",
        log.lines().count()
    );
    let _ = std::fs::remove_file(&image);
}

/// One writer and two readers, each its own process, on one SQLite database in WAL mode
/// (its default shared-memory index: the `-shm` file mapped shared by every process).
/// Every reader snapshot must be a whole number of committed transactions; the writer
/// checkpoints as it goes (`wal_autocheckpoint`) and truncates the WAL at the end.
const WAL_SCRIPT: &str = r#"
import os, sqlite3, subprocess, sys
db, role, total = sys.argv[1], sys.argv[2], 2000
if role == "reader":
    con = sqlite3.connect(db, timeout=60)
    last = 0
    while last < total:
        n, s = con.execute("SELECT count(*), coalesce(sum(x), 0) FROM t").fetchone()
        assert n >= last and n % 10 == 0 and s == n * (n - 1) // 2, (n, s, last)
        last = n
    print("reader saw", last)
    sys.exit(0)
con = sqlite3.connect(db, timeout=60, isolation_level=None)
assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
con.execute("PRAGMA wal_autocheckpoint=50")
con.execute("CREATE TABLE t(x INTEGER PRIMARY KEY, body BLOB)")
readers = [subprocess.Popen([sys.executable, sys.argv[0], db, "reader"]) for _ in range(2)]
for i in range(0, total, 10):
    con.execute("BEGIN")
    for x in range(i, i + 10):
        con.execute("INSERT INTO t VALUES (?, randomblob(700))", (x,))
    con.execute("COMMIT")
assert all(r.wait(timeout=300) == 0 for r in readers)
busy, log, done = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
assert busy == 0 and log == 0, (busy, log, done)
assert os.path.getsize(db + "-wal") == 0
print(con.execute("PRAGMA integrity_check").fetchone()[0])
"#;

/// SQLite in WAL mode on the F2FS mount (its -shm index is mapped shared, which direct-I/O
/// files refused with ENODEV: "disk I/O error"): concurrent writer and readers in separate
/// processes, checkpoints, an empty WAL after `wal_checkpoint(TRUNCATE)`; after unmount,
/// fsck.f2fs and a remount, `PRAGMA integrity_check` is ok and every row is there.
#[test]
fn sqlite_wal_mode_on_the_f2fs_mount() {
    if !can_run("the WAL mount test", &["sqlite3", "python3"]) {
        return;
    }
    let (dir, image, metrics) = scratch_with_image("wal");
    let script = dir.with_extension("py");
    std::fs::write(&script, WAL_SCRIPT).unwrap();
    let image_arg = ["--image", image.to_str().unwrap()];
    let daemon = Daemon::start_with(&dir, &metrics, &image_arg);
    let d = dir.display();
    let out = sh(&format!("python3 {} {d}/app.db writer", script.display()));
    assert!(out.ends_with("ok"), "{out}");
    assert_eq!(out.matches("reader saw 2000").count(), 2, "{out}");
    // The sqlite3 shell: a second program on the same WAL database.
    sh(&format!(
        "sqlite3 {d}/app.db \"INSERT INTO t VALUES (2000, randomblob(10));\""
    ));
    daemon.stop();
    fsck_clean(&image);
    let daemon = Daemon::start_with(&dir, &metrics, &image_arg);
    let check = sh(&format!(
        "sqlite3 {d}/app.db 'PRAGMA journal_mode' 'PRAGMA integrity_check' \
         'SELECT count(*), sum(x) FROM t'"
    ));
    assert_eq!(check, "wal\nok\n2001|2001000", "{check}");
    daemon.stop();
    let _ = std::fs::remove_file(&image);
}

/// Runs `command` as the unprivileged user nobody (uid and gid 65534, no other groups);
/// its stdout, or `Err(stderr)` when it fails.
fn as_nobody(command: &str) -> Result<String, String> {
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
            command,
        ])
        .output()
        .expect("setpriv runs");
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).trim().to_string()),
        false => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
    }
}

/// fsck.f2fs accepts the image (run on a copy: fsck may write); skipped with a notice
/// without f2fs-tools outside CI.
fn fsck_clean(image: &Path) {
    let Some(fsck) = f2fs_tool("fsck.f2fs") else {
        flashstack_testkit::skip("check the image with fsck.f2fs", "f2fs-tools is missing");
        return;
    };
    let copy = image.with_extension("fsck.img");
    std::fs::copy(image, &copy).unwrap();
    let out = sh(&format!("{fsck} -f {} < /dev/null", copy.display()));
    let _ = std::fs::remove_file(&copy);
    assert!(
        out.contains("[FSCK] other corrupted bugs") && !out.contains("[Fail]"),
        "{out}"
    );
}

/// [`fsck_clean`], then dump.f2fs's fields of inode `ino` (empty without f2fs-tools
/// outside CI).
fn fsck_and_dump(image: &Path, ino: u64) -> String {
    fsck_clean(image);
    let Some(dump) = f2fs_tool("dump.f2fs") else {
        flashstack_testkit::skip("read the inode with dump.f2fs", "f2fs-tools is missing");
        return String::new();
    };
    let copy = image.with_extension("dump.img");
    std::fs::copy(image, &copy).unwrap();
    // dump.f2fs exits with 255 after printing the inode.
    let out = Command::new(dump)
        .args(["-i", &ino.to_string()])
        .arg(&copy)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&copy);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Modes, owners and times on the F2FS mount through the real system calls, as root and
/// (with --allow-other) as user nobody: umask-applied create modes, chmod/fchmod,
/// chown/fchown, an executable script, set-group-ID directories, the kernel's permission
/// checks against the stored owners and modes, times from writes, chmod, rename and
/// utimensat (incl. UTIME_NOW and UTIME_OMIT); all kept across unmount and remount, the
/// image clean for fsck.f2fs and dump.f2fs showing the stored fields. Before, modes were
/// always 0644/0755, owners the mounting user and every time 1970.
#[test]
fn modes_owners_and_times_on_the_f2fs_mount() {
    if !can_run("the POSIX mount test", &["setpriv", "python3"]) {
        return;
    }
    let (dir, image, metrics) = scratch_with_image("posix");
    let args = ["--image", image.to_str().unwrap(), "--allow-other"];
    let daemon = Daemon::start_with(&dir, &metrics, &args);
    let d = dir.display();
    // Create modes with the umask applied; chmod; an executable script runs.
    sh(&format!(
        "cd {d} && umask 027 && touch f && mkdir d && printf '#!/bin/sh\\necho ran\\n' > run.sh \
         && chmod 750 run.sh"
    ));
    assert_eq!(sh(&format!("{d}/run.sh")), "ran");
    assert_eq!(
        sh(&format!("cd {d} && stat -c '%a %u %g' f d run.sh")),
        "640 0 0\n750 0 0\n750 0 0"
    );
    // open(O_CREAT) and mkdir with explicit modes; fchmod and fchown.
    let py = format!(
        "import os\n\
         os.umask(0)\n\
         fd = os.open('{d}/made', os.O_CREAT | os.O_WRONLY, 0o604)\n\
         os.mkdir('{d}/dir7', 0o710)\n\
         print(oct(os.fstat(fd).st_mode & 0o7777))\n\
         os.fchown(fd, 1234, 5678)\n\
         os.fchmod(fd, 0o6755)\n\
         st = os.fstat(fd)\n\
         print(oct(st.st_mode & 0o7777), st.st_uid, st.st_gid)\n\
         print(oct(os.stat('{d}/dir7').st_mode & 0o7777))\n"
    );
    assert_eq!(
        sh(&format!("python3 -c \"{py}\"")),
        "0o604\n0o6755 1234 5678\n0o710"
    );
    sh(&format!(
        "chown 1000:2000 {d}/f && chmod 600 {d}/f && echo secret > {d}/f"
    ));
    // Another user: the kernel checks the stored owner and mode.
    sh(&format!("mkdir {d}/pub && chmod 1777 {d}/pub && mkdir {d}/grp && chgrp 4242 {d}/grp && chmod 2777 {d}/grp"));
    assert_eq!(
        as_nobody(&format!(
            "touch {d}/pub/n && mkdir {d}/grp/sub && stat -c '%u %g %a' {d}/pub/n {d}/grp/sub"
        )),
        Ok("65534 65534 644\n65534 4242 2755".into()),
        "the caller owns what it creates; a set-group-ID directory passes on its group"
    );
    for refused in [
        format!("cat {d}/f"),
        format!("chmod 777 {d}/f"),
        format!("chown 65534 {d}/f"),
        format!("touch {d}/newfile"),
        format!("{d}/pub/n"),
    ] {
        assert!(as_nobody(&refused).is_err(), "nobody may not: {refused}");
    }
    // Times: a write sets mtime and ctime to the wall clock; chmod only ctime; a rename
    // ctime; utimensat sets what it is given (touch -a leaves mtime: UTIME_OMIT).
    let now = |what: &str| -> i64 { sh(&format!("stat -c %{what} {d}/pub/n")).parse().unwrap() };
    let wall = || -> i64 { sh("date +%s").parse().unwrap() };
    sh(&format!(
        "touch -d '2001-02-03 04:05:06.123456789' {d}/pub/n"
    ));
    assert_eq!(
        sh(&format!("stat -c %y {d}/pub/n")),
        "2001-02-03 04:05:06.123456789 +0000"
    );
    let before = wall();
    sh(&format!("echo more >> {d}/pub/n"));
    assert!(now("Y") >= before && now("Y") <= wall() && now("Z") == now("Y"));
    sh(&format!(
        "touch -m -d '2002-01-01 00:00:00' {d}/pub/n && chmod 604 {d}/pub/n"
    ));
    assert_eq!(now("Y"), 1_009_843_200, "chmod leaves mtime");
    assert!(now("Z") >= before, "chmod sets ctime");
    sh(&format!("touch -a -d '2003-01-01 00:00:00' {d}/pub/n"));
    assert_eq!(
        (now("X"), now("Y")),
        (1_041_379_200, 1_009_843_200),
        "UTIME_OMIT"
    );
    sh(&format!("touch -a {d}/pub/n"));
    assert!(now("X") >= before, "UTIME_NOW");
    let dir_before: i64 = sh(&format!("stat -c %Y {d}/d")).parse().unwrap();
    assert!(dir_before >= before - 60);
    sh(&format!("mv {d}/pub/n {d}/pub/m"));
    assert!(sh(&format!("stat -c %Z {d}/pub/m")).parse::<i64>().unwrap() >= before);
    let kept = sh(&format!(
        "cd {d} && stat -c '%n %a %u %g %Y %X' f made run.sh pub/m grp/sub"
    ));
    let ino: u64 = sh(&format!("stat -c %i {d}/made")).parse().unwrap();
    daemon.stop();
    let dump = fsck_and_dump(&image, ino);
    if !dump.is_empty() {
        // S_IFREG | 06755, as fchmod left it after fchown.
        let mode = (0o106755).to_string();
        for (field, want) in [
            ("i_mode", mode.as_str()),
            ("i_uid", "1234"),
            ("i_gid", "5678"),
        ] {
            let line = dump.lines().find(|l| l.starts_with(field)).unwrap_or("");
            assert!(
                line.contains(&format!(": {want}]")),
                "{field}: {line}\n{dump}"
            );
        }
    }
    let daemon = Daemon::start_with(&dir, &metrics, &args);
    assert_eq!(
        sh(&format!(
            "cd {d} && stat -c '%n %a %u %g %Y %X' f made run.sh pub/m grp/sub"
        )),
        kept
    );
    assert_eq!(sh(&format!("cat {d}/f")), "secret");
    daemon.stop();
    let _ = std::fs::remove_file(&image);
}

/// FIFOs, device nodes and Unix sockets (mkfifo, mknod, bind), and fallocate (util-linux:
/// mode 0, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE) on the F2FS mount, as root and as nobody;
/// kept across unmount and remount, fsck.f2fs clean. Before, all were EOPNOTSUPP.
#[test]
fn special_files_and_fallocate_on_the_f2fs_mount() {
    if !can_run(
        "the special-file mount test",
        &["setpriv", "fallocate", "python3"],
    ) {
        return;
    }
    let (dir, image, metrics) = scratch_with_image("special");
    let args = ["--image", image.to_str().unwrap(), "--allow-other"];
    let daemon = Daemon::start_with(&dir, &metrics, &args);
    let d = dir.display();
    sh(&format!(
        "cd {d} && mkfifo pipe && mknod null c 1 3 && mknod disk b 259 70000 && mkdir pub && \
         chmod 777 pub"
    ));
    // Data through the FIFO and the socket is the kernel's; the inodes are ours.
    let talk = format!(
        "import os, socket, threading\n\
         s = socket.socket(socket.AF_UNIX)\n\
         s.bind('{d}/sock')\n\
         s.listen(1)\n\
         c = socket.socket(socket.AF_UNIX)\n\
         c.connect('{d}/sock')\n\
         a, _ = s.accept()\n\
         c.send(b'over the socket')\n\
         print(a.recv(100).decode())\n\
         t = threading.Thread(target=lambda: open('{d}/pipe', 'w').write('over the fifo'))\n\
         t.start()\n\
         print(open('{d}/pipe').read())\n\
         t.join()\n"
    );
    assert_eq!(
        sh(&format!("python3 -c \"{talk}\"")),
        "over the socket\nover the fifo"
    );
    let refused = Command::new("ln")
        .args([format!("{d}/pipe"), format!("{d}/pipe2")])
        .output()
        .unwrap();
    assert!(!refused.status.success(), "one link per special file");
    let kinds = "stat -c '%n %F %t:%T %a %u' pipe null disk sock";
    let listed = sh(&format!("cd {d} && {kinds}"));
    assert_eq!(
        listed,
        "pipe fifo 0:0 644 0\nnull character special file 1:3 644 0\n\
         disk block special file 103:11170 644 0\nsock socket 0:0 755 0"
    );
    assert_eq!(
        as_nobody(&format!("mkfifo {d}/pub/q && stat -c '%F %u %g' {d}/pub/q")),
        Ok("fifo 65534 65534".into())
    );
    // fallocate: reserve (blocks counted, size or not), punch, zero.
    sh(&format!(
        "cd {d} && fallocate -l 1MiB big && fallocate -n -o 1MiB -l 1MiB big && \
         head -c 100000 /dev/urandom > data && cp data data.orig && \
         fallocate -p -o 4096 -l 8192 data && fallocate -z -o 50000 -l 10000 data"
    ));
    assert_eq!(sh(&format!("stat -c '%s %b' {d}/big")), "1048576 4096");
    let cmp = sh(&format!(
        "cd {d} && cmp -l data data.orig | \
         awk 'NR == 1 {{ first = $1 }} {{ last = $1 }} END {{ print first, last }}'"
    ));
    let (first, last): (u64, u64) = {
        let mut it = cmp.split_whitespace().map(|v| v.parse().unwrap());
        (it.next().unwrap(), it.next().unwrap())
    };
    assert!(
        first > 4096 && last <= 60_000,
        "only the punched and zeroed bytes differ: {cmp}"
    );
    let zeros = sh(&format!(
        "cd {d} && python3 -c \"b = open('data', 'rb').read(); print(b[4096:12288].count(0), \
         b[50000:60000].count(0), len(b))\""
    ));
    assert_eq!(zeros, "8192 10000 100000");
    let ino: u64 = sh(&format!("stat -c %i {d}/null")).parse().unwrap();
    daemon.stop();
    let dump = fsck_and_dump(&image, ino);
    if !dump.is_empty() {
        assert!(dump.contains(&format!(": {}]", 0o020644)), "{dump}");
    }
    let daemon = Daemon::start_with(&dir, &metrics, &args);
    assert_eq!(sh(&format!("cd {d} && {kinds}")), listed);
    assert_eq!(sh(&format!("stat -c '%s %b' {d}/big")), "1048576 4096");
    assert_eq!(sh(&format!("cmp {d}/data {d}/data.orig | wc -l")), "1");
    daemon.stop();
    let _ = std::fs::remove_file(&image);
}

/// `mount --phone`: a used phone (`phone age`) mounted on the stack it was made on: its
/// apps' files are there (Facebook's database passes sqlite3's integrity check), a program
/// can write and read back, and the phone file itself is not changed.
#[test]
fn a_used_phone_mounts_with_its_files_and_the_file_stays_unchanged() {
    if !can_run("the --phone mount test", &["sqlite3"]) {
        return;
    }
    let dir = scratch("phone");
    let phone = dir.with_extension("phone");
    let metrics = dir.with_extension("json");
    let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args([
            "phone",
            "age",
            "--stack",
            "default+device.nand.geometry.blocks_per_plane=4200",
            "--days",
            "3",
            "--quiet",
            "-o",
            phone.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "phone age: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = std::fs::read(&phone).unwrap();
    let args = [
        "--phone",
        phone.to_str().unwrap(),
        "--metrics",
        metrics.to_str().unwrap(),
    ];
    let daemon = Daemon::start_args(&dir, &args);
    let d = dir.display();
    let db = format!("{d}/data/data/com.facebook.katana/databases/newsfeed_db");
    assert_eq!(sh(&format!("sqlite3 {db} 'PRAGMA integrity_check'")), "ok");
    assert!(sh(&format!("ls {d}/data/app")).lines().count() > 3);
    sh(&format!(
        "head -c 100000 /dev/urandom > {d}.src && cp {d}.src {d}/data/new && cmp {d}.src {d}/data/new"
    ));
    daemon.stop();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&metrics).unwrap()).unwrap();
    assert!(
        json["stack"].as_str().unwrap().starts_with("default"),
        "{}",
        json["stack"]
    );
    assert!(
        std::fs::read(&phone).unwrap() == before,
        "mount --phone changed the phone file"
    );
    let _ = std::fs::remove_file(&phone);
}

/// MedFS (`--stack medfs`: deltas inlined in inodes) under real programs: sqlite3 with
/// updates of existing rows (the small page updates MedFS turns into deltas), its
/// integrity check, and fio's crc32c-verified random overwrites with fsync; the metrics
/// show deltas were stored. A second mount with `--restore-deltas` finds every row and
/// leaves stock F2FS behind: fsck.f2fs clean.
#[test]
fn medfs_on_the_f2fs_mount_runs_sqlite_and_fio_and_restores_at_unmount() {
    if !can_run("the MedFS mount test", &["sqlite3", "fio"]) {
        return;
    }
    let (dir, image, metrics) = scratch_with_image("medfs");
    let image_arg = ["--image", image.to_str().unwrap(), "--stack", "medfs"];
    let daemon = Daemon::start_with(&dir, &metrics, &image_arg);
    let d = dir.display();
    let mut script = String::from("CREATE TABLE m(id INTEGER PRIMARY KEY, body TEXT);\n");
    for t in 0..50 {
        script.push_str("BEGIN;\n");
        for r in 0..100 {
            script.push_str(&format!(
                "INSERT INTO m(body) VALUES ('message {t}-{r}');\n"
            ));
        }
        script.push_str("COMMIT;\n");
    }
    for k in 0..50 {
        script.push_str(&format!(
            "UPDATE m SET body = body || '+' WHERE id % 97 = {k};\n"
        ));
    }
    let sql = dir.with_extension("sql");
    std::fs::write(&sql, script).unwrap();
    sh(&format!("sqlite3 {d}/app.db < {}", sql.display()));
    assert_eq!(
        sh(&format!("sqlite3 {d}/app.db 'PRAGMA integrity_check'")),
        "ok"
    );
    sh(&format!(
        "fio --name=v --directory={d} --rw=randwrite --bs=4k --size=4m --ioengine=sync \
         --fsync=1 --verify=crc32c --do_verify=1 --verify_state_save=0 --output=/dev/null"
    ));
    daemon.stop();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&metrics).unwrap()).unwrap();
    let delta = &json["f2fs"]["delta"];
    assert!(
        delta["inline_stores"].as_u64().unwrap() > 50,
        "MedFS stored too few deltas on the mount: {delta}"
    );
    let restore = [
        image_arg[0],
        image_arg[1],
        image_arg[2],
        image_arg[3],
        "--restore-deltas",
    ];
    let daemon = Daemon::start_with(&dir, &metrics, &restore);
    assert_eq!(
        sh(&format!(
            "sqlite3 {d}/app.db 'PRAGMA integrity_check' \
             'SELECT count(*), sum(length(body)) FROM m'"
        )),
        format!("ok\n5000|{}", expected_body_bytes())
    );
    daemon.stop();
    fsck_clean(&image);
    let _ = std::fs::remove_file(&image);
}

/// The bytes of `body` after the MedFS test's script: the inserted messages, plus one
/// '+' per update that matched (each row is matched by exactly one `id % 97` below 50).
fn expected_body_bytes() -> usize {
    let inserted: usize = (0..50)
        .flat_map(|t| (0..100).map(move |r| format!("message {t}-{r}").len()))
        .sum();
    let updated = (1..=5000).filter(|id| id % 97 < 50).count();
    inserted + updated
}

/// MobiFS (`--stack mobifs`, here with a 3 s staleness bound) under real programs: sqlite3
/// and fio's crc32c-verified overwrites run on fsync at memory speed; the mount warns that
/// fsync is not durable on return; once the bound has passed on the wall clock with no
/// request, the checkpoint has run on its own, so a SIGKILL of the daemon loses nothing
/// and the database is whole on the next (stock) mount.
#[test]
fn mobifs_on_the_f2fs_mount_checkpoints_on_the_wall_clock_through_sigkill() {
    if !can_run("the MobiFS mount test", &["sqlite3", "fio"]) {
        return;
    }
    let (dir, image, metrics) = scratch_with_image("mobifs");
    let stack = "mobifs+cache.mobifs.staleness_bound_ns=3000000000\
                 +cache.mobifs.checkpoint_reserve_ns=1000000000";
    let image_arg = ["--image", image.to_str().unwrap()];
    let with_stack = [image_arg[0], image_arg[1], "--stack", stack];
    let mut daemon = Daemon::start_with(&dir, &metrics, &with_stack);
    let d = dir.display();
    let mut script = String::from("CREATE TABLE m(id INTEGER PRIMARY KEY, body TEXT);\n");
    for t in 0..20 {
        script.push_str("BEGIN;\n");
        for r in 0..100 {
            script.push_str(&format!(
                "INSERT INTO m(body) VALUES ('message {t}-{r}');\n"
            ));
        }
        script.push_str("COMMIT;\n");
    }
    let sql = dir.with_extension("sql");
    std::fs::write(&sql, script).unwrap();
    sh(&format!("sqlite3 {d}/app.db < {}", sql.display()));
    assert_eq!(
        sh(&format!("sqlite3 {d}/app.db 'PRAGMA integrity_check'")),
        "ok"
    );
    sh(&format!(
        "fio --name=v --directory={d} --rw=randwrite --bs=4k --size=2m --ioengine=sync \
         --fsync=1 --verify=crc32c --do_verify=1 --verify_state_save=0 --output=/dev/null"
    ));
    // Past the bound on the wall clock, with no request: the ticker checkpointed.
    std::thread::sleep(Duration::from_millis(3500));
    daemon.child.kill().unwrap();
    let out = std::mem::replace(&mut daemon.child, Command::new("true").spawn().unwrap())
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fsync returns before the data is on the device"),
        "{stderr}"
    );
    sh(&format!("umount -l {d}"));
    let daemon = Daemon::start_with(&dir, &metrics, &image_arg);
    assert_eq!(
        sh(&format!(
            "sqlite3 {d}/app.db 'PRAGMA integrity_check' 'SELECT count(*) FROM m'"
        )),
        "ok\n2000"
    );
    daemon.stop();
    fsck_clean(&image);
    let _ = std::fs::remove_file(&image);
}
