//! Replay throughput of the compressing FTL beside the raw throughput of its compressor on
//! the same bytes (wall clock; speed is reported, never asserted).
//!
//! ```sh
//! cargo run --release -p flashstack-ftl --example compression_throughput [POLICY] [WRITES]
//! ```

use std::time::Instant;

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_content::{ContentMix, ContentModel};
use flashstack_ftl::compression::CompressionPolicyKind;
use flashstack_ftl::{presets, Ftl};
use flashstack_sim::Rng;

const POOL_PAGES: usize = 16_384;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let policy = match args.first().map(String::as_str) {
        Some("pm") => CompressionPolicyKind::Pm,
        Some("zftl") => CompressionPolicyKind::Zftl,
        Some("sc") => CompressionPolicyKind::Sc,
        Some("opt") => CompressionPolicyKind::Opt,
        _ => CompressionPolicyKind::Ldc,
    };
    let writes: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(400_000);
    let model = ContentModel::new(3, ContentMix::default());
    let pool: Vec<Vec<u8>> = (0..POOL_PAGES as u64)
        .map(|i| {
            let mut page = vec![0u8; 4096];
            model.fill(i * 131, 1 + (i % 5) as u32, &mut page);
            page
        })
        .collect();

    // The compressor alone (the device's codec, LZO1X-1) on the same sequence of pages.
    let mut codec = flashstack_codec::CodecKind::Lzo1x1.build().unwrap();
    let mut out = Vec::new();
    let started = Instant::now();
    let mut compressed = 0usize;
    for i in 0..writes {
        compressed += codec.compress(&pool[i % POOL_PAGES], &mut out);
    }
    let codec_s = started.elapsed().as_secs_f64();
    std::hint::black_box(compressed);

    let mut device = presets::ldc_emmc_with(policy);
    device.nand.geometry.blocks_per_plane = 4_096; // 1 GiB: GC runs and page memory is reused
    let mut ftl = Ftl::new(device, true, 1).unwrap();
    let footprint = ftl.capacity_lbas() / 2;
    let mut rng = Rng::new(9);
    let targets: Vec<u64> = (0..writes).map(|_| rng.below(footprint)).collect();
    let started = Instant::now();
    for (i, &lba) in targets.iter().enumerate() {
        let now = ftl.busy_until_ns();
        let payload = Payload::Bytes(&pool[i % POOL_PAGES]);
        ftl.write(now, lba, payload, Hints::default()).unwrap();
    }
    let replay_s = started.elapsed().as_secs_f64();
    let mb = writes as f64 * 4096.0 / 1e6;
    let c = ftl.counters();
    println!("policy                    {}", policy.name());
    println!("writes                    {writes} × 4 KiB random over half of a 1 GiB device");
    println!(
        "pages compressed          {} host, {} by GC",
        c.pages_compressed_host, c.pages_compressed_gc
    );
    println!("compressor alone (LZO1X-1) {:.0} MB/s", mb / codec_s);
    println!("FTL replay, contents      {:.0} MB/s", mb / replay_s);
    println!("replay ÷ compressor       {:.2}", codec_s / replay_s);
}
