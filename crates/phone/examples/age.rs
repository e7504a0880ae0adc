//! `cargo run --release -p flashstack-phone --example age -- BLOCKS_PER_PLANE DAYS FILL [realistic]`:
//! ages a phone on the default stack with a smaller device, prints what it measured and
//! the wall time.
use flashstack_phone::{build, AgingSpec, Fidelity};
use flashstack_stack::StackConfig;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let blocks: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(4200);
    let days: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(30);
    let fill: f64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(0.8);
    let fidelity = if args.get(4).map(String::as_str) == Some("realistic") {
        Fidelity::Realistic
    } else {
        Fidelity::Fast
    };
    let mut config = StackConfig::preset("default").expect("preset");
    config.device.nand.geometry.blocks_per_plane = blocks;
    let spec = AgingSpec::new(fill, days, 1, fidelity);
    let started = std::time::Instant::now();
    if std::env::var("PROBE").is_ok() {
        let (stack, _, _) =
            flashstack_phone::age::age_stack(&config, &spec, &mut |_, _| {}).expect("aging");
        let ftl = stack.device().unwrap();
        let mapped = ftl.mapping().iter().filter(|&s| s != u32::MAX).count();
        let programmed: u64 = (0..ftl.config().nand.geometry.blocks())
            .map(|b| ftl.nand().programmed_pages(b) as u64)
            .sum();
        println!(
            "frames {} mapped {} programmed pages {} cache {:?}",
            ftl.nand().stored_slots(),
            mapped,
            programmed,
            stack.metrics().map(|m| m.cache.clone())
        );
        return;
    }
    let image = build(&config, &spec, &mut |d, n| {
        if d % 10 == 0 || d == n {
            eprintln!("day {d}/{n} at {:.1} s", started.elapsed().as_secs_f64());
        }
    })
    .expect("aging");
    println!("{}", image.header.summary());
    println!(
        "{}",
        serde_json::to_string_pretty(&image.header.counts).unwrap()
    );
    println!(
        "{}",
        serde_json::to_string_pretty(&image.header.fs).unwrap()
    );
    println!(
        "{}",
        serde_json::to_string_pretty(&image.header.device).unwrap()
    );
    println!("aged in {:.1} s", started.elapsed().as_secs_f64());
    if let Ok(class) = std::env::var("DUMP") {
        let mut stack = image.clone().into_stack(None, 1).expect("restore");
        let (files, _) = stack
            .with_fs(flashstack_phone::measure::file_layouts)
            .unwrap()
            .unwrap();
        for f in files {
            if flashstack_phone::measure::class_of(&f.path) == class {
                println!("{:>7} blocks {:>5} extents {}", f.blocks, f.extents, f.path);
            }
        }
    }
    if let Some(path) = args.get(5) {
        let t = std::time::Instant::now();
        let bytes = image.save(std::path::Path::new(path)).expect("save");
        println!("saved {bytes} bytes in {:.2} s", t.elapsed().as_secs_f64());
        let t = std::time::Instant::now();
        let loaded = flashstack_phone::PhoneImage::load(std::path::Path::new(path)).expect("load");
        let stack = loaded.into_stack(None, 1).expect("restore");
        println!(
            "loaded and mounted in {:.2} s, now {}",
            t.elapsed().as_secs_f64(),
            stack.now_ns()
        );
    }
}

#[allow(dead_code)]
fn frames_probe() {}
