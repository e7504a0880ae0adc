//! Entropy → compression ratio (permille), 0.1-bit steps from 0.0 to 8.0 bits.
//! Written by `cargo run --release -p flashstack-ftl --example fit_predictor`;
//! do not edit by hand. Codec: LZO1X-1 (flashstack-codec).
//! Fitted on 126464 blocks of 4 KiB from:
//!   /tmp/corpus
//!   /usr/lib/x86_64-linux-gnu
//!   /usr/lib/python3.11
//!   /usr/share/icons
//!   /usr/share/doc
//! Mean relative entropy error of the 10% sample: 5.72%. Mean absolute ratio error: 0.082.
//! Blocks per bin: 806 172 212 228 320 300 227 291 328 340 372 294 365 441 308 365 506 576 772 920 1283 1697 1964 1436 1578 1293 1148 1054 962 928 825 798 819 788 805 845 899 1000 1027 985 1232 1490 2062 2483 2559 2753 3179 3982 4860 4972 4582 4059 3912 3191 3089 4032 5153 6514 6331 4659 2402 864 396 223 174 157 181 174 152 131 190 181 185 242 4055 10941 445 0 0 0 0

#[rustfmt::skip]
pub const RATIO_PERMILLE_BY_DECIBIT: [u16; 81] = [
      10,   28,   50,   65,   74,   88,  107,  116,  127,
     148,  148,  175,  190,  210,  216,  222,  222,  256,
     265,  269,  284,  290,  303,  316,  323,  336,  344,
     365,  381,  402,  402,  413,  416,  416,  430,  430,
     442,  446,  446,  446,  446,  446,  446,  446,  467,
     491,  491,  491,  495,  505,  516,  529,  536,  598,
     652,  686,  700,  726,  737,  752,  765,  796,  833,
     888,  888,  902,  902,  902,  902,  943,  954,  962,
     962,  980,  999, 1000, 1000, 1000, 1000, 1000, 1000,
];
