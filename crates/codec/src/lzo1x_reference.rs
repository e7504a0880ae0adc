//! The LZO1X-1 encoder exactly as first written (straightforward, bounds-checked), kept
//! for tests: the encoder in `lzo1x.rs` is tuned for speed and must emit the same bytes
//! for every input, because compressed sizes are reported figures.

// Self-contained (no `crate::` paths) so that the codec bench can include it as well.
fn max_compressed_len(len: usize) -> usize {
    len + len / 16 + 64 + 3
}

const HASH_BITS: u32 = 14;
const HASH_SIZE: usize = 1 << HASH_BITS;
const HASH_MUL: u32 = 0x1824_429d;
const M2_MAX_DISTANCE: usize = 2048;
const M2_MAX_LEN: usize = 8;
const M3_MAX_DISTANCE: usize = 16384;
const M3_MAX_LEN: usize = 33;
const M4_MAX_DISTANCE: usize = 49151;
const M4_MAX_LEN: usize = 9;
const MIN_MATCH: usize = 4;
const MIN_INPUT_FOR_MATCHES: usize = 16;
const END_MARKER: [u8; 3] = [0x11, 0x00, 0x00];

#[inline(always)]
fn read_u32(input: &[u8], at: usize) -> u32 {
    let bytes: [u8; 4] = [input[at], input[at + 1], input[at + 2], input[at + 3]];
    u32::from_le_bytes(bytes)
}

#[inline(always)]
fn read_u64(input: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&input[at..at + 8]);
    u64::from_le_bytes(bytes)
}

/// How far the bytes at `earlier` and `later` agree (`earlier < later`), given that the
/// first `known` do, up to the end of the input. Compares a word at a time.
#[inline(always)]
fn match_len(input: &[u8], earlier: usize, later: usize, known: usize) -> usize {
    let n = input.len();
    let mut len = known;
    while later + len + 8 <= n {
        let diff = read_u64(input, earlier + len) ^ read_u64(input, later + len);
        if diff != 0 {
            // Little-endian: the lowest set bit is in the first differing byte.
            return len + (diff.trailing_zeros() / 8) as usize;
        }
        len += 8;
    }
    while later + len < n && input[earlier + len] == input[later + len] {
        len += 1;
    }
    len
}

#[inline(always)]
fn hash(key: u32) -> usize {
    (key.wrapping_mul(HASH_MUL) >> (32 - HASH_BITS)) as usize
}

/// Appends a length too large for an opcode's field: zero bytes worth 255 each, then the
/// remainder (1–255). `value` is at least 1.
fn push_extension(out: &mut Vec<u8>, mut value: usize) {
    while value > 255 {
        out.push(0);
        value -= 255;
    }
    out.push(value as u8);
}

/// Appends a literal run of `literals`. `stream_start` says whether nothing has been
/// written yet; otherwise the previous instruction was a match, whose `SS` bits (in the
/// byte two before its end) carry runs of 1–3.
fn push_literals(out: &mut Vec<u8>, literals: &[u8], stream_start: bool) {
    let n = literals.len();
    if n == 0 {
        return;
    }
    if stream_start && n <= 238 {
        out.push(17 + n as u8);
    } else if n <= 3 {
        // Not at the start, so at least the previous match's opcode and one more byte
        // were written.
        let at = out.len() - 2;
        out[at] |= n as u8;
    } else if n <= 18 {
        out.push((n - 3) as u8);
    } else {
        out.push(0);
        push_extension(out, n - 18);
    }
    out.extend_from_slice(literals);
}

/// Appends a match of `len` (≥ 3) bytes `distance` (1–49151) back, its `SS` bits zero.
fn push_match(out: &mut Vec<u8>, len: usize, distance: usize) {
    if len <= M2_MAX_LEN && distance <= M2_MAX_DISTANCE {
        let d = distance - 1;
        out.push((((len - 1) << 5) | ((d & 7) << 2)) as u8);
        out.push((d >> 3) as u8);
        return;
    }
    let word = if distance <= M3_MAX_DISTANCE {
        if len <= M3_MAX_LEN {
            out.push(0x20 | (len - 2) as u8);
        } else {
            out.push(0x20);
            push_extension(out, len - M3_MAX_LEN);
        }
        (distance - 1) << 2
    } else {
        let d = distance - M3_MAX_DISTANCE;
        let high = ((d >> 11) & 8) as u8;
        if len <= M4_MAX_LEN {
            out.push(0x10 | high | (len - 2) as u8);
        } else {
            out.push(0x10 | high);
            push_extension(out, len - M4_MAX_LEN);
        }
        (d & 0x3fff) << 2
    };
    out.push(word as u8);
    out.push((word >> 8) as u8);
}

/// The encoder as first written, kept to check that the optimised one emits the same bytes.
pub(crate) struct Reference {
    table: Box<[u32]>,
    base: u32,
}

impl Reference {
    pub(crate) fn new() -> Self {
        Reference {
            table: vec![0; HASH_SIZE].into_boxed_slice(),
            base: 1,
        }
    }

    /// Starts the next input at `base` (tests of the 32-bit wrap).
    pub(crate) fn set_base_for_test(&mut self, base: u32) {
        self.base = base;
    }

    pub(crate) fn compress_into(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize {
        let n = input.len();
        out.clear();
        out.reserve(max_compressed_len(n));
        // Positions are stored as `base + position` in 32 bits: start over (clear the
        // table) when this input would not fit above the current base.
        let room = (u32::MAX - self.base) as usize;
        if n >= room {
            self.table.fill(0);
            self.base = 1;
        }
        let base = self.base;
        // Positions from here on cannot be stored (inputs over 4 GiB): they stay literals.
        let storable = (u32::MAX - base) as usize;

        let mut literal_start = 0;
        if n >= MIN_INPUT_FOR_MATCHES {
            let mut ip = 0;
            // A 4-byte key must be readable at every probed position.
            let last_probe = n - MIN_MATCH;
            while ip <= last_probe {
                let key = read_u32(input, ip);
                let slot = hash(key);
                let stored = self.table[slot];
                if ip < storable {
                    self.table[slot] = base + ip as u32;
                }
                let candidate = stored.checked_sub(base).map(|c| c as usize);
                let found = match candidate {
                    Some(c) if c < ip && ip - c <= M4_MAX_DISTANCE && read_u32(input, c) == key => {
                        Some(c)
                    }
                    _ => None,
                };
                let Some(candidate) = found else {
                    // No match: step faster the longer the current literal run (LZO's
                    // skip heuristic for incompressible data).
                    ip += 1 + ((ip - literal_start) >> 5);
                    continue;
                };
                let len = match_len(input, candidate, ip, MIN_MATCH);
                push_literals(out, &input[literal_start..ip], out.is_empty());
                push_match(out, len, ip - candidate);
                ip += len;
                literal_start = ip;
            }
        }
        push_literals(out, &input[literal_start..], out.is_empty());
        out.extend_from_slice(&END_MARKER);
        self.base = match u32::try_from(n)
            .ok()
            .and_then(|n| base.checked_add(n))
            .and_then(|b| b.checked_add(1))
        {
            Some(next) => next,
            None => {
                self.table.fill(0);
                1
            }
        };
        out.len()
    }
}
