//! Machine code in the style of AArch64 shared objects and oat files: functions made of a
//! prologue, a body of common instructions and an epilogue, padded to 16 bytes.
//!
//! Opcode bits come from a small frequency-skewed set of instruction forms and registers
//! from the few that compilers favour, while branch targets, page addresses and many
//! offsets are effectively random. That mix is what leaves real code only slightly
//! compressible (LZ4 ≈ 0.7–0.8). Updates rewrite the whole page: an app update replaces
//! its code files rather than patching them.

use flashstack_sim::Rng;

use super::PageCtx;
use crate::hash::mix64;
use crate::PAGE_SIZE;

const NOP: u32 = 0xD503_201F;
const RET: u32 = 0xD65F_03C0;
/// `stp x29, x30, [sp, #-32]!`, `mov x29, sp`, `stp x19, x20, [sp, #16]`
const PROLOGUE: [u32; 3] = [0xA9BE_7BFD, 0x9100_03FD, 0xA901_53F3];
/// `ldp x19, x20, [sp, #16]`, `ldp x29, x30, [sp], #32`, `ret`
const EPILOGUE: [u32; 3] = [0xA941_53F3, 0xA8C2_7BFD, RET];

const WORDS_PER_PAGE: usize = PAGE_SIZE / 4;

pub(crate) fn fill(ctx: &PageCtx, out: &mut [u8]) {
    let mut rng = ctx.version_rng();
    let mut code = [0u32; WORDS_PER_PAGE];
    // A page starts mid-function: its first words belong to the previous one.
    let mut i = rng.below(24) as usize;
    fill_body(&mut code[..i], &mut rng);
    while i < WORDS_PER_PAGE {
        i = function(&mut code, i, &mut rng);
    }
    for (dst, word) in out.chunks_exact_mut(4).zip(code) {
        dst.copy_from_slice(&word.to_le_bytes());
    }
}

/// Writes one function from word `at`; returns where the next one starts.
fn function(code: &mut [u32; WORDS_PER_PAGE], at: usize, rng: &mut Rng) -> usize {
    let body = 4 + rng.below(45) as usize;
    let mut i = put(code, at, &PROLOGUE);
    let end = (i + body).min(WORDS_PER_PAGE);
    fill_body(&mut code[i..end], rng);
    i = put(code, end, &EPILOGUE);
    // Functions start 16-byte aligned.
    while i & 3 != 0 && i < WORDS_PER_PAGE {
        code[i] = NOP;
        i += 1;
    }
    i
}

fn put(code: &mut [u32; WORDS_PER_PAGE], at: usize, words: &[u32]) -> usize {
    let n = words.len().min(WORDS_PER_PAGE.saturating_sub(at));
    code[at..at + n].copy_from_slice(&words[..n]);
    at + n
}

/// Two instructions per 64-bit draw.
fn fill_body(code: &mut [u32], rng: &mut Rng) {
    for pair in code.chunks_mut(2) {
        let r = rng.next_u64();
        pair[0] = instruction(r as u32);
        if let Some(second) = pair.get_mut(1) {
            *second = instruction((r >> 32) as u32);
        }
    }
}

/// A table entry's instruction with its random (address/offset) fields filled from
/// a scrambled copy of the draw (an odd multiply, rotated so the well-mixed high bits land
/// low).
#[inline]
fn instruction(r: u32) -> u32 {
    let (word, rand_mask) = CODE[(r as usize) & (CODE.len() - 1)];
    word | (r.wrapping_mul(0x9E37_79B1).rotate_left(16) & rand_mask)
}

/// An instruction form: fixed opcode bits plus where the register, immediate and random
/// (address/offset) fields go. Table-driven so that a word costs no unpredictable branch.
#[derive(Clone, Copy)]
struct Form {
    base: u32,
    /// Mask of the destination register field (bits 0–4), or 0.
    rt: u32,
    n_shift: u32,
    n_mask: u32,
    imm_shift: u32,
    imm_mask: u32,
    rand_mask: u32,
}

const fn form(base: u32) -> Form {
    Form {
        base,
        rt: 0,
        n_shift: 0,
        n_mask: 0,
        imm_shift: 0,
        imm_mask: 0,
        rand_mask: 0,
    }
}

/// `op xT, [xN, #imm]`-shaped forms: loads, stores, add/sub immediate.
const fn t_n_imm(base: u32) -> Form {
    Form {
        rt: 0x1F,
        n_shift: 5,
        n_mask: 0x3E0,
        imm_shift: 10,
        imm_mask: 0x3F_FC00,
        ..form(base)
    }
}

/// `mov xT, xN` (ORR with the zero register).
const fn t_m(base: u32) -> Form {
    Form {
        rt: 0x1F,
        n_shift: 16,
        n_mask: 0x1F_0000,
        ..form(base)
    }
}

const fn rand(base: u32, rt: u32, rand_mask: u32) -> Form {
    Form {
        rt,
        rand_mask,
        ..form(base)
    }
}

/// 32 entries, each form repeated by its frequency in compiled code.
const FORMS: [Form; 32] = {
    let ldr = t_n_imm(0xF940_0000);
    let str = t_n_imm(0xF900_0000);
    let ldr_w = t_n_imm(0xB940_0000);
    let mov = t_m(0xAA00_03E0);
    let add = t_n_imm(0x9100_0000);
    let bl = rand(0x9400_0000, 0, 0x3FF); // calls to nearby PLT stubs
    let cmp = Form {
        rt: 0,
        ..t_n_imm(0xF100_001F)
    };
    let movz = Form {
        rt: 0x1F,
        imm_shift: 5,
        imm_mask: 0x1F_FFE0,
        ..form(0x5280_0000)
    };
    let stp = Form {
        rt: 0x1F,
        n_shift: 10,
        n_mask: 0x7C00,
        imm_shift: 15,
        imm_mask: 0x3F_8000,
        ..form(0xA900_03E0)
    };
    [
        ldr,
        ldr,
        ldr,
        ldr,
        ldr,
        ldr,
        str,
        str,
        str,
        ldr_w,
        ldr_w,
        mov,
        mov,
        mov,
        mov,
        add,
        add,
        bl,
        bl,
        bl,
        rand(0xB400_0000, 0x1F, 0x7E0), // cbz xT, <near>
        rand(0x3500_0000, 0x1F, 0x7E0), // cbnz wT, <near>
        rand(0x5400_0000, 0, 0x7EF),    // b.cond <near>
        cmp,
        movz,
        rand(0x9000_0000, 0x1F, 0x60FF_FFE0), // adrp xT, <page>
        rand(0xF940_0000, 0x1F, 0x7_FFE0),    // ldr xT, [xN, #:lo12:sym]
        form(0xD63F_0100),                    // blr x8
        rand(0x1400_0000, 0, 0xFF),           // b <near>
        t_m(0x2A00_03E0),                     // mov wT, wN
        form(NOP),
        stp,
    ]
};

/// Registers as compilers allocate them: arguments/temporaries x0–x2 and x8 first, then
/// callee-saved x19–x20.
const REGS: [u32; 8] = [0, 0, 0, 1, 8, 19, 20, 2];

/// Immediates: small scaled offsets (struct fields near the base) four times in five,
/// otherwise any 8-bit value (the random bits are masked in).
const IMM_BASE: [u32; 16] = [0, 0, 1, 1, 2, 2, 3, 3, 0, 1, 2, 3, 0, 0, 0, 0];
const IMM_RAND: [u32; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF];

/// One instruction's fixed fields from 32 random bits: 5 select the form, 3 + 3 the
/// registers, 4 the immediate's kind, 8 a wide immediate. Returns the word and the mask of
/// its random fields.
const fn template(r: u32) -> (u32, u32) {
    let f = FORMS[(r & 31) as usize];
    let t = REGS[(r >> 5 & 7) as usize];
    let n = REGS[(r >> 8 & 7) as usize];
    let k = (r >> 11 & 15) as usize;
    let imm = IMM_BASE[k] | (r >> 15) & IMM_RAND[k];
    let word =
        f.base | (t & f.rt) | (n << f.n_shift & f.n_mask) | (imm << f.imm_shift & f.imm_mask);
    (word, f.rand_mask)
}

/// 2048 instruction templates drawn at compile time from the distribution above. A word
/// is then one table lookup plus its random fields, about a tenth of the work of building
/// it field by field (code generation must keep up with 1 GB/s).
static CODE: [(u32, u32); 2048] = {
    let mut table = [(0u32, 0u32); 2048];
    let mut i = 0;
    while i < table.len() {
        table[i] = template(mix64(i as u64 ^ 0x00C0_FFEE) as u32);
        i += 1;
    }
    table
};
