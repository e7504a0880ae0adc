//! Calibration search (not a test): `TUNE=gmail:launch cargo test -p flashstack-apps
//! --release --test tune -- --ignored --nocapture` adjusts the task's counts so that its
//! recorded trace matches its MedFS row, and prints them.
//!
//! The trace's additive totals (bytes written, bytes to small files, update bytes, the sum
//! and count of measured update differences) are nearly linear in the counts, and the
//! row's four columns are linear conditions on those totals, so a damped Gauss-Newton
//! step with finite-difference columns converges in a few runs.

use flashstack_apps::medfs::{tasks, MedfsTask};
use flashstack_apps::{run, Mix};
use flashstack_sqlvfs::{MemFs, MemFsConfig};

/// Bytes written, to small files, updates; sum and count of measured differences.
type Totals = [f64; 5];

fn totals(task: &MedfsTask, mix: &Mix) -> Option<Totals> {
    let p = task.persona_with(mix);
    let r = match run(&p, Box::new(MemFs::new(1, MemFsConfig::default())), 1) {
        Ok(r) => r,
        Err(e) => {
            println!("{}: {e}", task.key);
            return None;
        }
    };
    let t = r.trace?;
    let n = (t.ud_measured_updates + t.ud_declared_updates) as f64;
    Some([
        t.write_bytes as f64,
        t.small_file_write_bytes as f64,
        t.update_bytes as f64,
        t.update_difference.unwrap_or(0.0) * n,
        n,
    ])
}

fn measured(t: &Totals) -> [f64; 4] {
    let v = t[0].max(1.0);
    [t[0] / 1e6, t[1] / v, t[2] / v, t[3] / t[4].max(1.0)]
}

fn target(task: &MedfsTask) -> [f64; 4] {
    [task.row.vol_mb, task.row.small, task.row.ur, task.row.ud]
}

/// Relative errors of the four columns.
fn resid(task: &MedfsTask, t: &Totals) -> [f64; 4] {
    let (m, p) = (measured(t), target(task));
    [0, 1, 2, 3].map(|i| (m[i] - p[i]) / p[i])
}

fn cost(r: &[f64; 4]) -> f64 {
    r.iter().map(|x| x * x).sum()
}

fn show(task: &MedfsTask, t: &Totals) -> String {
    let (m, p) = (measured(t), target(task));
    let e = resid(task, t).iter().fold(0.0f64, |a, x| a.max(x.abs()));
    format!(
        "{:26} vol {:7.2}/{:7.2} small {:5.1}/{:5.1} UR {:5.1}/{:5.1} UD {:5.2}/{:5.2} err {:.3}",
        task.key,
        m[0],
        p[0],
        m[1] * 100.0,
        p[1] * 100.0,
        m[2] * 100.0,
        p[2] * 100.0,
        m[3] * 100.0,
        p[3] * 100.0,
        e
    )
}

/// Upper bounds that keep an operation plausible (per operation: log bytes, media KiB,
/// temp KiB, patch writes and KiB, transactions, rows).
fn bound(i: usize) -> f64 {
    match i {
        2 => 8192.0,
        3 => 4096.0,
        5 => 65_536.0,
        6 => 2000.0,
        7 => 1024.0,
        i if i >= 9 && (i - 9) % 4 == 0 => 500.0,
        i if i >= 9 && (i - 9) % 4 == 1 => 64.0,
        i if i >= 9 && (i - 9) % 4 == 3 => 64.0,
        _ => 1e9,
    }
}

fn apply(base: &[u32], idx: &[usize], x: &[f64]) -> Vec<u32> {
    let mut k = base.to_vec();
    for (j, &i) in idx.iter().enumerate() {
        k[i] = x[j].clamp(0.0, bound(i)).round() as u32;
    }
    k
}

/// Solves min |J d + r|^2 + lambda |d|^2 over the free columns (Gaussian elimination).
fn solve(j: &[[f64; 4]], r: &[f64; 4], free: &[bool], lambda: f64) -> Vec<f64> {
    let cols: Vec<usize> = (0..j.len()).filter(|&c| free[c]).collect();
    let n = cols.len();
    let mut a = vec![vec![0.0; n + 1]; n];
    for (p, &cp) in cols.iter().enumerate() {
        for (q, &cq) in cols.iter().enumerate() {
            a[p][q] = (0..4).map(|e| j[cp][e] * j[cq][e]).sum::<f64>();
        }
        a[p][p] += lambda;
        a[p][n] = -(0..4).map(|e| j[cp][e] * r[e]).sum::<f64>();
    }
    for c in 0..n {
        let piv = (c..n)
            .max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs()))
            .unwrap();
        a.swap(c, piv);
        if a[c][c].abs() < 1e-18 {
            continue;
        }
        let pivot = a[c].clone();
        for (r2, row) in a.iter_mut().enumerate() {
            if r2 != c {
                let f = row[c] / pivot[c];
                for (v, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *v -= f * p;
                }
            }
        }
    }
    let mut d = vec![0.0; j.len()];
    for (p, &cp) in cols.iter().enumerate() {
        if a[p][p].abs() > 1e-18 {
            d[cp] = a[p][n] / a[p][p];
        }
    }
    d
}

fn tune_task(task: &MedfsTask, idx: &[usize], iters: usize) {
    let base = task.mix.knobs();
    let mut x: Vec<f64> = idx.iter().map(|&i| f64::from(base[i])).collect();
    let Some(mut t) = totals(task, &task.mix) else {
        return;
    };
    println!("start {}", show(task, &t));
    for _ in 0..iters {
        let r = resid(task, &t);
        if r.iter().all(|e| e.abs() < 0.05) {
            break;
        }
        let mut jac = vec![[0.0; 4]; idx.len()];
        for c in 0..idx.len() {
            let h = (x[c] * 0.3).max(1.0);
            let mut x2 = x.clone();
            x2[c] += h;
            let Some(t2) = totals(task, &task.mix.with_knobs(&apply(&base, idx, &x2))) else {
                continue;
            };
            let r2 = resid(task, &t2);
            for e in 0..4 {
                jac[c][e] = (r2[e] - r[e]) / h;
            }
        }
        // Scale columns so that the damping treats knobs of different units alike.
        let scale: Vec<f64> = x.iter().map(|v| v.max(1.0)).collect();
        let js: Vec<[f64; 4]> = jac
            .iter()
            .zip(&scale)
            .map(|(c, s)| c.map(|v| v * s))
            .collect();
        let mut free = vec![true; idx.len()];
        let mut d = vec![0.0; idx.len()];
        for _ in 0..idx.len() {
            let ds = solve(&js, &r, &free, 1e-3);
            d = ds.iter().zip(&scale).map(|(a, s)| a * s).collect();
            let mut changed = false;
            for c in 0..idx.len() {
                if free[c] && x[c] + d[c] < 0.0 {
                    free[c] = false;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
            for c in 0..idx.len() {
                if !free[c] {
                    d[c] = -x[c];
                }
            }
        }
        let mut accepted = false;
        for step in [1.0, 0.5, 0.25, 0.1] {
            let xn: Vec<f64> = x
                .iter()
                .zip(&d)
                .map(|(a, b)| (a + step * b).max(0.0))
                .collect();
            if let Some(tn) = totals(task, &task.mix.with_knobs(&apply(&base, idx, &xn))) {
                if cost(&resid(task, &tn)) < cost(&r) {
                    x = xn;
                    t = tn;
                    accepted = true;
                    break;
                }
            }
        }
        println!("      {}", show(task, &t));
        if !accepted {
            break;
        }
    }
    println!("best  {}", show(task, &t));
    println!("KNOBS {} {:?}", task.key, apply(&base, idx, &x));
}

/// The four target conditions as linear functions of the totals, normalised.
fn conditions(task: &MedfsTask, t: &Totals, n_ref: f64) -> [f64; 4] {
    let v = task.row.vol_mb * 1e6;
    [
        (t[0] - v) / v,
        (t[1] - task.row.small * t[0]) / v,
        (t[2] - task.row.ur * t[0]) / v,
        (t[3] - task.row.ud * t[4]) / (task.row.ud * n_ref.max(1.0)),
    ]
}

/// Least squares over a box by coordinate descent (the problem is a small convex quadratic).
fn box_lsq(a: &[[f64; 4]], c0: &[f64; 4], lo: &[f64], hi: &[f64], x0: &[f64]) -> Vec<f64> {
    let mut x = x0.to_vec();
    let n = a.len();
    let resid = |x: &[f64]| -> [f64; 4] {
        let mut r = *c0;
        for i in 0..n {
            for e in 0..4 {
                r[e] += a[i][e] * (x[i] - x0[i]);
            }
        }
        r
    };
    for _ in 0..2000 {
        for i in 0..n {
            let r = resid(&x);
            let aa: f64 = a[i].iter().map(|v| v * v).sum();
            if aa < 1e-30 {
                continue;
            }
            let ar: f64 = (0..4).map(|e| a[i][e] * r[e]).sum();
            x[i] = (x[i] - ar / aa).clamp(lo[i], hi[i]);
        }
    }
    x
}

/// Linear mode: totals are additive in the counts, so the conditions are linear in them.
fn tune_linear(task: &MedfsTask, idx: &[usize], iters: usize) {
    let base = task.mix.knobs();
    let mut x: Vec<f64> = idx.iter().map(|&i| f64::from(base[i])).collect();
    let Some(mut t) = totals(task, &task.mix) else {
        return;
    };
    println!("start {}", show(task, &t));
    for _ in 0..iters {
        if resid(task, &t).iter().all(|e| e.abs() < 0.04) {
            break;
        }
        let n_ref = t[4];
        let c0 = conditions(task, &t, n_ref);
        let mut a = vec![[0.0; 4]; idx.len()];
        for c in 0..idx.len() {
            let h = (x[c] * 0.5).max(2.0);
            let mut x2 = x.clone();
            x2[c] += h;
            let Some(t2) = totals(task, &task.mix.with_knobs(&apply(&base, idx, &x2))) else {
                continue;
            };
            let c2 = conditions(task, &t2, n_ref);
            for e in 0..4 {
                a[c][e] = (c2[e] - c0[e]) / h;
            }
        }
        let lo = vec![0.0; idx.len()];
        let hi: Vec<f64> = idx.iter().map(|&i| bound(i)).collect();
        let xn = box_lsq(&a, &c0, &lo, &hi, &x);
        let mut best: Option<(f64, Vec<f64>, Totals)> = None;
        for step in [1.0, 0.6, 0.3] {
            let xs: Vec<f64> = x.iter().zip(&xn).map(|(a, b)| a + step * (b - a)).collect();
            if let Some(ts) = totals(task, &task.mix.with_knobs(&apply(&base, idx, &xs))) {
                let cs = cost(&resid(task, &ts));
                if best.as_ref().is_none_or(|b| cs < b.0) {
                    best = Some((cs, xs, ts));
                }
            }
        }
        match best {
            Some((cs, xs, ts)) if cs < cost(&resid(task, &t)) => {
                x = xs;
                t = ts;
            }
            _ => break,
        }
        println!("      {}", show(task, &t));
    }
    println!("best  {}", show(task, &t));
    println!("KNOBS {} {:?}", task.key, apply(&base, idx, &x));
}

#[test]
#[ignore]
fn tune() {
    let want = std::env::var("TUNE").unwrap_or_default();
    let iters: usize = std::env::var("ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    for task in tasks() {
        if !want.is_empty() && !want.split(',').any(|w| task.key.starts_with(w)) {
            continue;
        }
        // Media KiB, temp KiB, log bytes, patch writes and KiB, and per database the
        // transactions, rows per insert and rows per update.
        let mut idx = vec![2, 3, 5, 6, 7];
        for i in 0..task.mix.sql.len() {
            idx.extend([9 + 4 * i, 10 + 4 * i, 12 + 4 * i]);
        }
        if let Ok(k) = std::env::var("KNOBS") {
            let k: Vec<u32> = k
                .split(',')
                .map(|v| v.trim().parse().expect("number"))
                .collect();
            let t = totals(&task, &task.mix.with_knobs(&k)).expect("runs");
            println!("try   {}", show(&task, &t));
        } else if want.is_empty() {
            let t = totals(&task, &task.mix).expect("runs");
            println!("{}", show(&task, &t));
        } else {
            if std::env::var("MODE").as_deref() == Ok("gn") {
                tune_task(&task, &idx, iters);
            } else {
                let lin: Vec<usize> = idx
                    .iter()
                    .copied()
                    .filter(|&i| i < 9 || (i - 9) % 4 == 0)
                    .collect();
                tune_linear(&task, &lin, iters);
            }
        }
    }
}
