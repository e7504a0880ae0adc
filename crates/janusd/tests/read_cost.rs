//! What each term of the read model costs a fragmented file on a small `ufs31` (the
//! preset's timing, two dies of four planes, 32 command slots): the same 2 MiB database
//! read whole, laid out contiguously, in 512 single-page pieces spread over the planes,
//! and in 128 four-page pieces that all sit on one plane. Each layout is read three
//! times: with the full model, without the host's time per request, and without the
//! device's command overhead too; the differences are the terms. The table printed
//! (`cargo test --release -p flashstack-janusd --test read_cost -- --nocapture`) is the
//! one in docs/janusd.md.

mod common;

use common::*;
use flashstack_f2fs::F2fs;
use flashstack_ftl::Ftl;
use flashstack_janusd::{measure, ReadModel};

struct Row {
    senses: u64,
    dof: f64,
    requests: u64,
    collision_ratio: f64,
    total_ns: u64,
    no_host_ns: u64,
    flash_ns: u64,
}

fn layout(fs: &mut F2fs<Ftl>, name: &str) {
    match name {
        "contiguous" => contiguous(fs),
        "spread" => interleaved(fs, 1, 1),
        _ => interleaved(fs, 4, 28),
    }
}

fn read_ns(
    name: &str,
    in_flight: u32,
    host_ns: u64,
    command_ns: Option<u64>,
) -> (u64, f64, u64, f64, u64) {
    let ftl = small_ufs31_with(|c| {
        if let Some(ns) = command_ns {
            c.host.controller_overhead_ns = ns;
        }
    });
    let mut fs = fs_on(ftl);
    layout(&mut fs, name);
    let model = ReadModel {
        host_overhead_ns_per_request: host_ns,
        in_flight_max: in_flight,
        ..ReadModel::default()
    };
    let before = fs.device().counters().page_reads_host;
    let r = measure(&mut fs, "/data/a.db", &model).unwrap();
    let senses = fs.device().counters().page_reads_host - before;
    let f = &r.files[0];
    let ratio = f.physical.as_ref().unwrap().collision_ratio;
    (f.read_ns.unwrap(), f.dof, f.block_ios, ratio, senses)
}

fn row(name: &str, in_flight: u32) -> Row {
    let host = ReadModel::default().host_overhead_ns_per_request;
    let (total_ns, dof, requests, collision_ratio, senses) = read_ns(name, in_flight, host, None);
    let (no_host_ns, ..) = read_ns(name, in_flight, 0, None);
    let (flash_ns, ..) = read_ns(name, in_flight, 0, Some(0));
    Row {
        senses,
        dof,
        requests,
        collision_ratio,
        total_ns,
        no_host_ns,
        flash_ns,
    }
}

fn table(in_flight: u32) -> Vec<Row> {
    let ms = |ns: u64| ns as f64 / 1e6;
    println!("reader keeping {in_flight} request(s) in flight:");
    println!(
        "layout      DoF  requests  senses  collision  read ms  host ms  command ms  flash+link ms"
    );
    let mut rows = Vec::new();
    for name in ["contiguous", "spread", "colliding"] {
        let r = row(name, in_flight);
        println!(
            "{name:<10} {:>4} {:>9} {:>7} {:>10.2} {:>8.2} {:>8.2} {:>11.2} {:>14.2}",
            r.dof,
            r.requests,
            r.senses,
            r.collision_ratio,
            ms(r.total_ns),
            ms(r.total_ns - r.no_host_ns),
            ms(r.no_host_ns - r.flash_ns),
            ms(r.flash_ns)
        );
        rows.push(r);
    }
    rows
}

#[test]
fn each_term_makes_the_fragmented_file_slower() {
    let rows = table(32);
    let (contiguous, spread, colliding) = (&rows[0], &rows[1], &rows[2]);
    // Request splitting: more requests, and each small request senses a whole flash
    // page for a quarter of it.
    assert!(spread.requests > 100 * contiguous.requests);
    assert!(spread.senses >= 3 * contiguous.senses);
    // Lost parallelism: with no per-request cost at all, pages on one plane still read
    // one after the other.
    assert!(colliding.collision_ratio >= 3.0 && spread.collision_ratio < 1.5);
    assert!(colliding.flash_ns > contiguous.flash_ns * 3);
    assert!(contiguous.total_ns < colliding.total_ns && contiguous.total_ns < spread.total_ns);

    // A reader waiting for each request pays the host's and the device's time per
    // request in full.
    let rows = table(1);
    let (contiguous, spread) = (&rows[0], &rows[1]);
    let host = |r: &Row| r.total_ns - r.no_host_ns;
    let command = |r: &Row| r.no_host_ns - r.flash_ns;
    assert!(host(spread) >= 100 * host(contiguous));
    assert!(command(spread) >= 100 * command(contiguous));
    assert!(spread.total_ns > 5 * contiguous.total_ns);
}
