use super::*;

#[test]
fn names_parse_in_every_spelling() {
    for app in LdcApp::ALL {
        assert_eq!(app.abbrev().parse::<LdcApp>(), Ok(app));
        assert_eq!(app.name().parse::<LdcApp>(), Ok(app));
        assert_eq!(app.to_string(), app.abbrev());
        let builtin = Builtin::Ldc(app);
        assert_eq!(builtin.to_string().parse::<Builtin>(), Ok(builtin));
    }
    assert_eq!("G. Earth".parse::<LdcApp>(), Ok(LdcApp::GoogleEarth));
    assert_eq!("google-earth".parse::<LdcApp>(), Ok(LdcApp::GoogleEarth));
    assert_eq!(
        "LDC:FB".parse::<Builtin>(),
        Ok(Builtin::Ldc(LdcApp::Facebook))
    );
    let err = "ldc:tiktok".parse::<Builtin>().unwrap_err().to_string();
    assert!(err.contains("ldc:fb, ldc:tw"), "{err}");
    assert!("fb".parse::<Builtin>().is_err());
    assert!("tpcc:fb".parse::<Builtin>().is_err());
}

#[test]
fn table4_rows_round_half_up() {
    assert_eq!(LdcApp::Facebook.table4().writes(), 15_685);
    assert_eq!(LdcApp::GoogleEarth.table4().writes(), 24_539);
    assert_eq!(LdcApp::Chrome.table4().writes(), 5_771);
    assert_eq!(LdcApp::Multiple.table4().writes(), 59_800);
    let six: u64 = LdcApp::SINGLE.iter().map(|a| a.table4().requests).sum();
    assert_eq!(six, LdcApp::Multiple.table4().requests);
}

#[test]
fn back_to_back_shifts_each_pass() {
    let r = |t| TraceRequest {
        arrival_ns: t,
        kind: RequestKind::Write,
        offset_bytes: 0,
        len_bytes: 4096,
        hints: Default::default(),
        process: 0,
    };
    let source = [r(0), r(10)];
    let times: Vec<u64> = back_to_back(source.iter().copied(), 3, 5)
        .map(|r| r.arrival_ns)
        .collect();
    assert_eq!(times, [0, 10, 15, 25, 30, 40]);
}

#[test]
#[ignore = "prints the per-app figures used to tune the profiles"]
fn print_figures() {
    for app in LdcApp::ALL {
        let w = ldc_workload(app, 16 << 30, 1).unwrap();
        let f = w.figures();
        println!(
            "{:<3} req {:>6} w {:>6} ({:.2}%) vol {:>7.1} MB small {:.1}% span {:.0}s",
            app.abbrev(),
            f.requests,
            f.writes,
            f.write_percent(),
            f.volume_mb(),
            f.small_write_percent(),
            w.requests.last().unwrap().arrival_ns as f64 / 1e9
        );
        let zones: Vec<flashstack_content::Zone> = w
            .content_zones()
            .iter()
            .map(|z| flashstack_content::Zone::new(z.lbas.clone(), z.mix.parse().unwrap()))
            .collect();
        let model = flashstack_content::ContentModel::new(1, "zeros:1".parse().unwrap())
            .with_zones(zones)
            .unwrap();
        let (mut comp, mut all, mut read) = (0u64, 0u64, 0u64);
        for r in &w.requests {
            if r.kind != RequestKind::Write {
                read += r.len_bytes;
                continue;
            }
            for lba in r.offset_bytes / 4096..(r.offset_bytes + r.len_bytes) / 4096 {
                all += 1;
                use flashstack_content::ContentClass::*;
                if !matches!(model.class_of(lba), Media | Executable) {
                    comp += 1;
                }
            }
        }
        println!(
            "    reads {:.1} MB, writes {:.1} MB, compressible {:.1}% of written pages",
            read as f64 / 1e6,
            all as f64 * 4096.0 / 1e6,
            comp as f64 * 100.0 / all as f64
        );
        for n in &w.notes {
            println!("    {n}");
        }
    }
}

#[test]
#[ignore = "prints where each app's pages go, to tune the profiles"]
fn print_breakdown() {
    for (app, profile) in PROFILES.iter().enumerate() {
        let (s, _) = session(app, 1).unwrap();
        let mut rows: Vec<(String, u64, u64, u64)> = Vec::new();
        for r in &s.skeleton.requests {
            let key = match r.target {
                Target::File { stream, .. } => format!("File({stream})"),
                t => format!("{t:?}"),
            };
            let small = u64::from(!r.target.is_read() && r.pages <= 2);
            match rows.iter_mut().find(|row| row.0 == key) {
                Some(row) => {
                    row.1 += 1;
                    row.2 += u64::from(r.pages);
                    row.3 += small;
                }
                None => rows.push((key, 1, u64::from(r.pages), small)),
            }
        }
        rows.sort();
        println!("{}", profile.app.name());
        for (k, n, p, small) in rows {
            println!(
                "  {k:<22} {n:>6} req {p:>7} pages ({:.1} MB) small {small}",
                p as f64 * 4096.0 / 1e6
            );
        }
    }
}
