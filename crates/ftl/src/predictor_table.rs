//! Entropy → compression ratio (permille), 0.1-bit steps from 0.0 to 8.0 bits.
//! Written by `cargo run --release -p flashstack-ftl --example fit_predictor`;
//! do not edit by hand. Codec: LZ4 (block format).
//! Fitted on 119532 blocks of 4 KiB from:
//!   /tmp/corpus
//!   /usr/lib/x86_64-linux-gnu
//!   /usr/lib/python3.11
//!   /usr/share/icons
//!   /usr/share/doc
//! Mean relative entropy error of the 10% sample: 5.74%. Mean absolute ratio error: 0.087.
//! Blocks per bin: 754 170 209 223 307 293 224 287 327 334 366 291 357 435 300 360 499 563 765 903 1261 1679 1924 1412 1567 1284 1135 1040 949 913 816 794 810 763 795 840 893 997 1023 976 1216 1447 1962 2322 2430 2657 3072 3858 4721 4814 4390 3929 3816 3093 2909 3782 4761 6118 6006 4442 2348 847 393 222 173 157 181 174 151 131 190 180 185 242 3350 8674 351 0 0 0 0

#[rustfmt::skip]
pub const RATIO_PERMILLE_BY_DECIBIT: [u16; 81] = [
      11,   30,   55,   70,   82,   97,  119,  131,  145,
     170,  170,  199,  216,  237,  248,  256,  256,  298,
     304,  310,  326,  334,  350,  366,  369,  382,  391,
     416,  433,  454,  454,  458,  458,  458,  472,  472,
     482,  483,  483,  483,  483,  483,  483,  483,  507,
     522,  522,  522,  523,  531,  540,  548,  552,  617,
     678,  712,  724,  748,  756,  766,  774,  797,  827,
     881,  881,  895,  895,  895,  895,  935,  941,  948,
     948,  970,  998,  999,  999,  999,  999,  999,  999,
];
