use super::*;

const S: Nanos = NS_PER_SEC;

fn phone() -> PhoneEnergyConfig {
    PhoneEnergyConfig {
        name: "test".into(),
        cpu: CpuPower {
            active_mw: 1000.0,
            idle_mw: 100.0,
            suspend_mw: 10.0,
            resume_uj: 1000.0,
        },
        dram: DramPower {
            capacity_gib: 1.0,
            self_refresh_mw_per_gib: 4.0,
        },
        storage: StoragePower {
            active_mw: 200.0,
            idle_mw: 20.0,
            sleep_mw: 1.0,
            wakeup_uj: 500.0,
            sleep_timeout_ns: S,
        },
        screen: ScreenPower { on_mw: 500.0 },
        cpu_ns_per_file_call: 0,
        cpu_ns_per_input: 0,
    }
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

#[test]
fn gaps_idle_until_the_timeout_then_sleep_and_wake() {
    // Busy 1 s, gap 0.5 s (idle), busy 1 s, gap 3 s (1 s idle, 2 s asleep, a wake-up),
    // busy 1 s, then 4 s to the end (1 s idle, 3 s asleep, no wake-up).
    let busy = [(0, S), (3 * S / 2, 5 * S / 2), (11 * S / 2, 13 * S / 2)];
    let a = Activity {
        start_ns: 0,
        end_ns: 21 * S / 2,
        device_busy: &busy,
        ..Activity::default()
    };
    let e = account(&phone(), &a);
    close(e.storage_active_mj, 600.0);
    close(e.storage_idle_mj, 20.0 * 2.5);
    close(e.storage_sleep_mj, 5.0);
    close(e.storage_wakeup_mj, 0.5);
    assert_eq!(e.device_wakeups, 1);
    close(e.device_sleep_s, 5.0);
}

#[test]
fn standby_work_wakes_the_cpu_and_the_screen_is_off() {
    // 10 s: screen off from 2 s to 10 s; the device works 4..5 s (in standby).
    let busy = [(4 * S, 5 * S)];
    let standby = [(2 * S, 10 * S)];
    let a = Activity {
        start_ns: 0,
        end_ns: 10 * S,
        device_busy: &busy,
        standby: &standby,
        cpu_active_ns: S,
        ..Activity::default()
    };
    let e = account(&phone(), &a);
    close(e.screen_mj, 1000.0);
    close(e.cpu_active_mj, 1000.0);
    close(e.cpu_idle_mj, 100.0);
    // 7 s suspended, 1 s active, one resume.
    close(e.cpu_standby_mj, 70.0 + 1000.0 + 1.0);
    assert_eq!(e.standby_wakeups, 1);
    // The same work with the screen on costs no resume and no standby CPU.
    let on = Activity {
        standby: &[(6 * S, 10 * S)],
        ..a.clone()
    };
    let e_on = account(&phone(), &on);
    assert_eq!(e_on.standby_wakeups, 0);
    assert!(e_on.cpu_standby_mj < e.cpu_standby_mj);
}

#[test]
fn extra_pages_cost_their_share_of_refresh() {
    let a = Activity {
        start_ns: 0,
        end_ns: S,
        extra_page_ns: 262_144 * u128::from(S), // 1 GiB held for 1 s
        ..Activity::default()
    };
    let e = account(&phone(), &a);
    close(e.dram_refresh_mj, 4.0);
    close(e.dram_extra_pages_mj, 4.0);
}

#[test]
fn totals_add_up_and_presets_validate() {
    for name in PhoneEnergyConfig::PRESETS {
        let config = PhoneEnergyConfig::preset(name).unwrap();
        config.validate().unwrap();
        let a = Activity {
            start_ns: 0,
            end_ns: 60 * S,
            device_busy: &[(S, 2 * S)],
            standby: &[(30 * S, 60 * S)],
            cpu_active_ns: S,
            inputs: 10,
            extra_page_ns: 1000 * u128::from(S),
            nand_mj: 5.0,
        };
        let e = account(&config, &a);
        let parts = e.screen_mj
            + e.cpu_active_mj
            + e.cpu_idle_mj
            + e.cpu_standby_mj
            + e.dram_refresh_mj
            + e.dram_extra_pages_mj
            + e.device_mj;
        close(e.total_mj, parts);
        close(e.screen_on_s + e.standby_s, 60.0);
    }
    assert!(PhoneEnergyConfig::preset("nokia").is_err());
    let mut bad = PhoneEnergyConfig::ufs31();
    bad.storage.idle_mw = f64::NAN;
    let err = bad.validate().unwrap_err().to_string();
    assert!(err.contains("storage.idle_mw"), "{err}");
}
