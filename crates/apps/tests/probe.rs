use flashstack_apps::*;
use flashstack_sqlvfs::{MemFs, MemFsConfig};

static DBS: [DbSpec; 1] = [DbSpec {
    file: "cache4.db",
    kind: Kind::Chat,
    setup_rows: 3000,
    body_bytes: 80,
    threads: 40,
    journal: None,
}];

fn app(j: Journal) -> &'static AppSpec {
    Box::leak(Box::new(AppSpec {
        name: "probe",
        package: "org.probe",
        journal: j,
        pragmas: &[],
        dbs: &DBS,
        prefs: &["main"],
        prefs_entries: 20,
        state: Some(("mmkv.default", 64 * 1024)),
        log: Some("app.log"),
        media_dir: "cache/images",
        media_ext: "jpg",
    }))
}

fn show(label: &str, j: Journal, steps: Vec<Step>) {
    let p = TaskPersona {
        name: label.into(),
        description: String::new(),
        calibration: String::new(),
        app: app(j),
        warmup: vec![UserOp {
            name: "w",
            steps: steps.clone(),
            repeat: 3,
            think_ms: 1000,
        }],
        ops: vec![UserOp {
            name: "op",
            steps,
            repeat: 5,
            think_ms: 1000,
        }],
        target: None,
    };
    let fs = MemFs::new(1, MemFsConfig::default());
    let r = run(&p, Box::new(fs), 1).unwrap();
    let t = r.trace.unwrap();
    println!(
        "{label:40} vol {:8.3} MB small {:5.1} UR {:5.1} UD {:5.1} (n {}) ",
        t.write_bytes as f64 / 1e6,
        t.small_write_share.unwrap_or(0.0) * 100.0,
        t.update_ratio.unwrap_or(0.0) * 100.0,
        t.update_difference.unwrap_or(0.0) * 100.0,
        t.ud_measured_updates
    );
}

#[test]
#[ignore]
fn probe() {
    for j in [
        Journal::Persist,
        Journal::Truncate,
        Journal::Wal,
        Journal::WalNormal,
    ] {
        let n = format!("{j:?}");
        show(
            &format!("{n} add1"),
            j,
            vec![Step::Add {
                db: 0,
                txns: 1,
                rows: 1,
                body: 100,
            }],
        );
        show(
            &format!("{n} add10"),
            j,
            vec![Step::Add {
                db: 0,
                txns: 1,
                rows: 10,
                body: 100,
            }],
        );
        show(
            &format!("{n} touch4"),
            j,
            vec![Step::Touch {
                db: 0,
                txns: 1,
                rows: 4,
            }],
        );
    }
    show(
        "media",
        Journal::Persist,
        vec![Step::Media {
            files: 1,
            kib: 200,
            fsync: false,
        }],
    );
    show(
        "prefs",
        Journal::Persist,
        vec![Step::Prefs { file: 0, writes: 1 }],
    );
    show("log", Journal::Persist, vec![Step::Log { bytes: 2000 }]);
    show(
        "state 10%",
        Journal::Persist,
        vec![Step::State {
            writes: 1,
            kib: 64,
            change_permille: 100,
        }],
    );
    show(
        "temp",
        Journal::Persist,
        vec![Step::Temp { files: 1, kib: 100 }],
    );
}

#[test]
#[ignore]
fn render() {
    let name = std::env::var("P").unwrap_or("gmail:send-text".into());
    let p = flashstack_apps::persona(&name).unwrap();
    let r = run(
        p.as_ref(),
        Box::new(MemFs::new(1, MemFsConfig::default())),
        1,
    )
    .unwrap();
    println!("{}", r.trace.unwrap().render());
}

#[test]
#[ignore]
fn trace_text() {
    let name = std::env::var("P").unwrap_or("gmail:send-text".into());
    let p = flashstack_apps::persona(&name).unwrap();
    let fs = MemFs::new(1, MemFsConfig::default());
    let out = run_with(p.as_ref(), Box::new(fs), 1, &RunOptions::default());
    let text = flashstack_workload::text::to_text(&out.trace.unwrap());
    for l in text.lines().take(400) {
        let mut l = l.to_string();
        l.truncate(160);
        println!("{l}");
    }
}

#[test]
#[ignore]
fn ud_by_file() {
    use flashstack_workload::{Data, OpKind};
    use std::collections::BTreeMap;
    let name = std::env::var("P").unwrap_or("gmail:send-text".into());
    let p = flashstack_apps::persona(&name).unwrap();
    let out = run_with(
        p.as_ref(),
        Box::new(MemFs::new(1, MemFsConfig::default())),
        1,
        &RunOptions::default(),
    );
    let trace = out.trace.unwrap();
    let mut fds: BTreeMap<u32, String> = BTreeMap::new();
    let mut known: BTreeMap<(String, u64), u8> = BTreeMap::new();
    // path -> (compared writes, sum of ratios, bytes)
    let mut stats: BTreeMap<String, (u64, f64, u64, u64)> = BTreeMap::new();
    for op in &trace.ops {
        match &op.kind {
            OpKind::Open { fd, path, flags } => {
                fds.insert(*fd, path.clone());
                if flags.create {
                    known.retain(|k, _| &k.0 != path);
                }
            }
            OpKind::Ftruncate { fd, len_bytes } => {
                let path = fds[fd].clone();
                known.retain(|k, _| k.0 != path || k.1 < *len_bytes);
            }
            OpKind::Pwrite {
                fd,
                offset_bytes,
                data: Data::Bytes(b),
                ..
            } => {
                let path = fds[fd].clone();
                let (mut ch, mut cmp) = (0u64, 0u64);
                for (i, &x) in b.iter().enumerate() {
                    let k = (path.clone(), offset_bytes + i as u64);
                    if let Some(&old) = known.get(&k) {
                        cmp += 1;
                        ch += u64::from(old != x);
                    }
                    known.insert(k, x);
                }
                let s = stats
                    .entry(path.rsplit('/').next().unwrap().to_string())
                    .or_default();
                s.2 += b.len() as u64;
                s.3 += 1;
                if cmp > 0 {
                    s.0 += 1;
                    s.1 += ch as f64 / cmp as f64;
                }
            }
            _ => {}
        }
    }
    for (p, (n, sum, bytes, w)) in stats {
        println!(
            "{p:50} writes {w:6} bytes {bytes:10} compared {n:6} meanUD {:6.2}%",
            if n > 0 { sum / n as f64 * 100.0 } else { 0.0 }
        );
    }
}
