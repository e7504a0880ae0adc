//! Calibration search (not a test): `TUNE=gmail:launch cargo test -p flashstack-apps
//! --release --test tune -- --ignored --nocapture` searches the task's counts so that its
//! recorded trace matches its MedFS row, and prints the result.

use flashstack_apps::medfs::{tasks, MedfsTask};
use flashstack_apps::{run, Mix};
use flashstack_sqlvfs::{MemFs, MemFsConfig};

fn measure(task: &MedfsTask, mix: &Mix) -> Option<[f64; 4]> {
    let p = task.persona_with(mix);
    let r = match run(&p, Box::new(MemFs::new(1, MemFsConfig::default())), 1) {
        Ok(r) => r,
        Err(e) => {
            println!("{}: {e}", task.key);
            return None;
        }
    };
    let t = r.trace?;
    Some([
        t.write_bytes as f64 / 1e6,
        t.small_write_share.unwrap_or(0.0),
        t.update_ratio.unwrap_or(0.0),
        t.update_difference.unwrap_or(0.0),
    ])
}

fn error(task: &MedfsTask, m: &[f64; 4]) -> f64 {
    let p = [task.row.vol_mb, task.row.small, task.row.ur, task.row.ud];
    (0..4)
        .map(|i| ((m[i] - p[i]) / p[i]).abs())
        .fold(0.0, f64::max)
}

fn cost(task: &MedfsTask, m: &[f64; 4]) -> f64 {
    let p = [task.row.vol_mb, task.row.small, task.row.ur, task.row.ud];
    (0..4).map(|i| ((m[i] - p[i]) / p[i]).powi(2)).sum::<f64>() + error(task, m).powi(2)
}

fn show(task: &MedfsTask, m: &[f64; 4]) -> String {
    format!(
        "{:28} vol {:7.2}/{:7.2} small {:5.1}/{:5.1} UR {:5.1}/{:5.1} UD {:5.2}/{:5.2} err {:.3}",
        task.key,
        m[0],
        task.row.vol_mb,
        m[1] * 100.0,
        task.row.small * 100.0,
        m[2] * 100.0,
        task.row.ur * 100.0,
        m[3] * 100.0,
        task.row.ud * 100.0,
        error(task, m)
    )
}

#[test]
#[ignore]
fn tune() {
    let want = std::env::var("TUNE").unwrap_or_default();
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    for task in tasks() {
        if !want.is_empty() && !want.split(',').any(|w| task.key.starts_with(w)) {
            continue;
        }
        let mut best_k = task.mix.knobs();
        let mut best_m = measure(&task, &task.mix).expect("runs");
        let mut best_e = cost(&task, &best_m);
        println!("start {}", show(&task, &best_m));
        for _ in 0..rounds {
            if error(&task, &best_m) < 0.03 || want.is_empty() {
                break;
            }
            let mut improved = false;
            for i in 0..best_k.len() {
                if i == 8 && best_k[6] == 0 {
                    continue;
                }
                let v = best_k[i];
                let mut cands: Vec<u32> = [0.0, 0.5, 0.75, 0.9, 1.1, 1.33, 2.0]
                    .iter()
                    .map(|f| (v as f64 * f).round() as u32)
                    .chain([v.saturating_sub(1), v + 1])
                    .chain(if v == 0 { vec![2, 5, 20, 100] } else { vec![] })
                    .filter(|&c| c != v)
                    .collect();
                if i == 0 {
                    cands.retain(|&c| c > 0);
                }
                cands.dedup();
                for c in cands {
                    let mut k = best_k.clone();
                    k[i] = c;
                    let mix = task.mix.with_knobs(&k);
                    if let Some(m) = measure(&task, &mix) {
                        let e = cost(&task, &m);
                        if e < best_e - 1e-4 {
                            best_e = e;
                            best_k = k;
                            best_m = m;
                            improved = true;
                        }
                    }
                }
            }
            println!("      {}", show(&task, &best_m));
            if !improved {
                break;
            }
        }
        println!("best  {}\n      knobs {:?}", show(&task, &best_m), best_k);
    }
}
