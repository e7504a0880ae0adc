//! The block file against a plain byte array: random unaligned reads, writes, discards and
//! syncs over the real FTL (with contents stored) must read back exactly what the model
//! holds after every step.

use flashstack_ftl::{presets, Ftl};
use flashstack_fuse::{BlockFile, BlockFileError};
use proptest::prelude::*;

fn small_ftl() -> Ftl {
    let mut device = presets::ldc_emmc();
    device.nand.geometry.blocks_per_plane = 96;
    Ftl::new(device, true, 7).expect("valid device")
}

#[derive(Clone, Debug)]
enum Op {
    Write { offset: u64, len: usize, seed: u8 },
    Read { offset: u64, len: usize },
    Discard { offset: u64, len: u64 },
    Sync,
}

fn op(size: u64) -> impl Strategy<Value = Op> {
    let span = 1usize..40_000;
    prop_oneof![
        5 => (0..size, span.clone(), any::<u8>())
            .prop_map(|(offset, len, seed)| Op::Write { offset, len, seed }),
        3 => (0..size, span.clone()).prop_map(|(offset, len)| Op::Read { offset, len }),
        1 => (0..size, 1u64..40_000).prop_map(|(offset, len)| Op::Discard { offset, len }),
        1 => Just(Op::Sync),
    ]
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

fn step(file: &mut BlockFile<Ftl>, model: &mut [u8], op: &Op) {
    let size = model.len() as u64;
    match *op {
        Op::Write { offset, len, seed } => {
            let data = pattern(len, seed);
            let result = file.write_at(offset, &data);
            if offset + len as u64 > size {
                assert!(matches!(result, Err(BlockFileError::BeyondEnd { .. })));
            } else {
                assert_eq!(result.unwrap(), len);
                model[offset as usize..offset as usize + len].copy_from_slice(&data);
            }
        }
        Op::Read { offset, len } => {
            let mut out = vec![0xAA; len];
            let n = file.read_at(offset, &mut out).unwrap();
            let expected = len.min(size.saturating_sub(offset) as usize);
            assert_eq!(n, expected);
            assert!(out[..n] == model[offset as usize..offset as usize + n]);
        }
        Op::Discard { offset, len } => {
            let result = file.discard(offset, len);
            if offset + len > size {
                assert!(result.is_err());
            } else {
                result.unwrap();
                model[offset as usize..(offset + len) as usize].fill(0);
            }
        }
        Op::Sync => file.sync().unwrap(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn reads_match_a_byte_array_model(ops in prop::collection::vec(op(6 << 20), 1..120)) {
        let mut file = BlockFile::new(small_ftl());
        let mut model = vec![0u8; file.size_bytes() as usize];
        for op in &ops {
            step(&mut file, &mut model, op);
        }
        // Everything, end to end.
        let mut all = vec![0u8; model.len()];
        assert_eq!(file.read_at(0, &mut all).unwrap(), model.len());
        assert!(all == model);
    }
}

#[test]
fn virtual_time_advances_with_each_request_and_partial_writes_merge() {
    let mut file = BlockFile::new(small_ftl());
    let t0 = file.now_ns();
    file.write_at(100, b"hello").unwrap();
    let t1 = file.now_ns();
    assert!(t1 > t0);
    file.write_at(8192, &[7u8; 4096]).unwrap();
    assert!(file.now_ns() > t1);
    let counters = file.counters().clone();
    assert_eq!(counters.writes, 2);
    assert_eq!(
        counters.partial_block_merges, 1,
        "only the unaligned write merges"
    );
    let mut out = [0u8; 5];
    file.read_at(100, &mut out).unwrap();
    assert_eq!(&out, b"hello");
    assert_eq!(file.read_at(file.size_bytes(), &mut out).unwrap(), 0);
}

#[test]
fn discard_trims_whole_blocks_and_zeroes_edges() {
    let mut file = BlockFile::new(small_ftl());
    file.write_at(0, &[9u8; 5 * 4096]).unwrap();
    let trims_before = file.device().counters().host_trim_requests;
    file.discard(1000, 3 * 4096).unwrap();
    assert!(file.device().counters().host_trim_requests > trims_before);
    let mut out = vec![0u8; 5 * 4096];
    file.read_at(0, &mut out).unwrap();
    assert!(out[..1000].iter().all(|&b| b == 9));
    assert!(out[1000..1000 + 3 * 4096].iter().all(|&b| b == 0));
    assert!(out[1000 + 3 * 4096..].iter().all(|&b| b == 9));
}
