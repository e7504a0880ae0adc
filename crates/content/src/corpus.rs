//! Real pages of a class: a corpus of page chains captured from real files, which the
//! content model serves instead of its synthetic generator for the classes it holds.
//!
//! A *chain* is the successive versions of one real page (one page of one database file,
//! captured each time the file was synced after that page changed). The corpus lays each
//! class's chains end to end in a ring; an LBA starts at a ring position drawn from
//! (seed, lba) and its version `v` is the page `v` steps further on. Successive versions of
//! an LBA are therefore successive real edits of one page, until its chain ends and the
//! next chain's first version follows (as a freed page reused for other rows). The bytes
//! depend on (corpus, seed, lba, version) only, so the model stays a pure function and
//! pages by reference regenerate them exactly.
//!
//! This crate only serves corpora; building one (running apps' real SQLite) is the work of
//! higher crates (`flashstack_apps::corpus`).

use std::fmt;

use crate::error::ContentError;
use crate::hash::{hash, mix64};
use crate::{ContentClass, PAGE_SIZE};

/// The successive versions of one real page, all of one class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageChain {
    pub class: ContentClass,
    /// Each entry [`PAGE_SIZE`] bytes; consecutive entries are consecutive versions.
    pub pages: Vec<Vec<u8>>,
}

/// The chains of one class laid end to end.
#[derive(Clone, PartialEq, Eq)]
struct Ring {
    class: ContentClass,
    /// `pages × PAGE_SIZE` bytes.
    bytes: Vec<u8>,
    /// First ring position of every chain.
    chain_starts: Vec<u32>,
}

impl Ring {
    fn pages(&self) -> usize {
        self.bytes.len() / PAGE_SIZE
    }
}

/// Real pages per class (see the module documentation). Cheap to share in an `Arc`.
#[derive(Clone, PartialEq, Eq)]
pub struct PageCorpus {
    name: String,
    rings: Vec<Ring>,
}

impl fmt::Debug for PageCorpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("PageCorpus");
        d.field("name", &self.name);
        for r in &self.rings {
            d.field(r.class.name(), &(r.chain_starts.len(), r.pages()));
        }
        d.field("digest", &format_args!("{:016x}", self.digest()));
        d.finish()
    }
}

/// Salt of the ring position an LBA starts at.
const START_SALT: u64 = 0x5EA1_9A6E_C0B9_F00D;
/// First bytes of a corpus file.
const MAGIC: &[u8; 8] = b"FSPCORP1";

impl PageCorpus {
    /// A corpus from chains, kept in the order given (which fixes the ring positions).
    /// Fails, naming the chain, on a page that is not [`PAGE_SIZE`] bytes or an empty chain.
    pub fn new(name: impl Into<String>, chains: Vec<PageChain>) -> Result<Self, ContentError> {
        let mut rings: Vec<Ring> = Vec::new();
        for (index, chain) in chains.into_iter().enumerate() {
            let bad = |reason: String| ContentError::Corpus {
                place: format!("chain {index} ({})", chain.class),
                reason,
            };
            if chain.pages.is_empty() {
                return Err(bad("no pages".into()));
            }
            if let Some((i, p)) = chain
                .pages
                .iter()
                .enumerate()
                .find(|(_, p)| p.len() != PAGE_SIZE)
            {
                return Err(bad(format!(
                    "version {i} is {} bytes, not {PAGE_SIZE}",
                    p.len()
                )));
            }
            let ring = match rings.iter_mut().position(|r| r.class == chain.class) {
                Some(at) => &mut rings[at],
                None => {
                    rings.push(Ring {
                        class: chain.class,
                        bytes: Vec::new(),
                        chain_starts: Vec::new(),
                    });
                    rings.last_mut().expect("just pushed")
                }
            };
            let start = u32::try_from(ring.pages())
                .map_err(|_| bad("more than 2^32 pages in one class".into()))?;
            ring.chain_starts.push(start);
            for page in &chain.pages {
                ring.bytes.extend_from_slice(page);
            }
        }
        rings.sort_by_key(|r| r.class);
        Ok(PageCorpus {
            name: name.into(),
            rings,
        })
    }

    /// Where the corpus came from (e.g. the personas it was captured from).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The classes the corpus holds pages of.
    pub fn classes(&self) -> impl Iterator<Item = ContentClass> + '_ {
        self.rings.iter().map(|r| r.class)
    }

    fn ring(&self, class: ContentClass) -> Option<&Ring> {
        self.rings.iter().find(|r| r.class == class)
    }

    /// Pages of `class` (all versions of all its chains).
    pub fn pages(&self, class: ContentClass) -> usize {
        self.ring(class).map_or(0, Ring::pages)
    }

    /// Chains of `class`.
    pub fn chains(&self, class: ContentClass) -> usize {
        self.ring(class).map_or(0, |r| r.chain_starts.len())
    }

    /// The chains of `class` again, in their order.
    pub fn chain_list(&self, class: ContentClass) -> Vec<PageChain> {
        let Some(r) = self.ring(class) else {
            return Vec::new();
        };
        let ends = r.chain_starts[1..]
            .iter()
            .map(|&s| s as usize)
            .chain([r.pages()]);
        r.chain_starts
            .iter()
            .zip(ends)
            .map(|(&s, e)| PageChain {
                class,
                pages: (s as usize..e)
                    .map(|i| r.bytes[i * PAGE_SIZE..(i + 1) * PAGE_SIZE].to_vec())
                    .collect(),
            })
            .collect()
    }

    /// Bytes of page data held.
    pub fn bytes(&self) -> usize {
        self.rings.iter().map(|r| r.bytes.len()).sum()
    }

    /// A hash of every page and chain boundary: equal corpora have equal digests (for
    /// reports and cache checks).
    pub fn digest(&self) -> u64 {
        let mut h = mix64(self.rings.len() as u64);
        for r in &self.rings {
            h = hash(h, r.class as u64);
            for &s in &r.chain_starts {
                h = hash(h, u64::from(s));
            }
            for word in r.bytes.chunks_exact(8) {
                h = hash(h, u64::from_le_bytes(word.try_into().expect("8 bytes")));
            }
        }
        h
    }

    /// Writes version `version` of `lba`'s page of `class` under `seed` into `out` and
    /// returns true, or returns false (leaving `out` alone) if the corpus has no page of
    /// that class.
    pub(crate) fn fill(
        &self,
        class: ContentClass,
        seed: u64,
        lba: u64,
        version: u32,
        out: &mut [u8],
    ) -> bool {
        let Some(r) = self.ring(class) else {
            return false;
        };
        let n = r.pages() as u64;
        let start = ((u128::from(hash(seed ^ START_SALT ^ class.salt(), lba)) * u128::from(n))
            >> 64) as u64;
        let at = ((start + u64::from(version)) % n) as usize * PAGE_SIZE;
        out.copy_from_slice(&r.bytes[at..at + PAGE_SIZE]);
        true
    }

    /// The corpus as bytes (a cache file): magic, name, then per class its chain starts
    /// and pages. [`from_bytes`](Self::from_bytes) reads it back.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes() + 1024);
        out.extend_from_slice(MAGIC);
        let put = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&v.to_le_bytes());
        put(&mut out, self.name.len() as u64);
        out.extend_from_slice(self.name.as_bytes());
        put(&mut out, self.rings.len() as u64);
        for r in &self.rings {
            put(&mut out, r.class as u64);
            put(&mut out, r.chain_starts.len() as u64);
            for &s in &r.chain_starts {
                put(&mut out, u64::from(s));
            }
            put(&mut out, r.pages() as u64);
            out.extend_from_slice(&r.bytes);
        }
        put(&mut out, self.digest());
        out
    }

    /// Reads what [`to_bytes`](Self::to_bytes) wrote; a truncated, altered or foreign
    /// input is an error naming where it went wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ContentError> {
        let mut at = 0usize;
        let bad = |at: usize, reason: &str| ContentError::Corpus {
            place: format!("byte {at}"),
            reason: reason.to_string(),
        };
        let take = |at: &mut usize, n: usize| -> Result<&[u8], ContentError> {
            let s = bytes
                .get(*at..at.saturating_add(n))
                .ok_or_else(|| bad(*at, "truncated"))?;
            *at += n;
            Ok(s)
        };
        let word = |at: &mut usize| -> Result<u64, ContentError> {
            Ok(u64::from_le_bytes(
                take(at, 8)?.try_into().expect("8 bytes"),
            ))
        };
        if take(&mut at, MAGIC.len())? != MAGIC {
            return Err(bad(0, "not a page corpus (wrong magic)"));
        }
        let len = word(&mut at)? as usize;
        let name = String::from_utf8(take(&mut at, len)?.to_vec())
            .map_err(|_| bad(at, "name is not UTF-8"))?;
        let mut rings = Vec::new();
        for _ in 0..word(&mut at)? {
            let class = *ContentClass::ALL
                .get(word(&mut at)? as usize)
                .ok_or_else(|| bad(at, "unknown class"))?;
            let chains = word(&mut at)?;
            let mut chain_starts = Vec::new();
            for _ in 0..chains {
                let s = u32::try_from(word(&mut at)?).map_err(|_| bad(at, "chain start"))?;
                chain_starts.push(s);
            }
            let pages = word(&mut at)? as usize;
            let bytes = take(&mut at, pages.saturating_mul(PAGE_SIZE))?.to_vec();
            let ordered = chain_starts.first() == Some(&0)
                && chain_starts.windows(2).all(|w| w[0] < w[1])
                && chain_starts.last().is_some_and(|&s| (s as usize) < pages);
            if !ordered {
                return Err(bad(at, "chain starts out of order"));
            }
            rings.push(Ring {
                class,
                bytes,
                chain_starts,
            });
        }
        let corpus = PageCorpus { name, rings };
        if word(&mut at)? != corpus.digest() {
            return Err(bad(at, "digest does not match the pages"));
        }
        if at != bytes.len() {
            return Err(bad(at, "trailing bytes"));
        }
        Ok(corpus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(b: u8) -> Vec<u8> {
        vec![b; PAGE_SIZE]
    }

    fn corpus() -> PageCorpus {
        PageCorpus::new(
            "test",
            vec![
                PageChain {
                    class: ContentClass::SqliteTable,
                    pages: vec![page(1), page(2), page(3)],
                },
                PageChain {
                    class: ContentClass::SqliteIndex,
                    pages: vec![page(9)],
                },
                PageChain {
                    class: ContentClass::SqliteTable,
                    pages: vec![page(4)],
                },
            ],
        )
        .unwrap()
    }

    #[test]
    fn versions_walk_the_ring_and_chains_come_back() {
        let c = corpus();
        assert_eq!(c.pages(ContentClass::SqliteTable), 4);
        assert_eq!(c.chains(ContentClass::SqliteTable), 2);
        assert_eq!(c.chain_list(ContentClass::SqliteTable)[0].pages.len(), 3);
        let mut out = page(0);
        assert!(!c.fill(ContentClass::Text, 1, 5, 0, &mut out));
        assert_eq!(out, page(0));
        for lba in 0..20 {
            assert!(c.fill(ContentClass::SqliteTable, 7, lba, 0, &mut out));
            let first = out[0];
            for v in 1..9u32 {
                c.fill(ContentClass::SqliteTable, 7, lba, v, &mut out);
                assert_eq!(out[0], (first - 1 + v as u8) % 4 + 1, "lba {lba} v {v}");
            }
        }
    }

    #[test]
    fn bytes_round_trip_and_damage_is_named() {
        let c = corpus();
        let bytes = c.to_bytes();
        assert_eq!(PageCorpus::from_bytes(&bytes).unwrap(), c);
        let err = PageCorpus::from_bytes(&bytes[..bytes.len() - 3]).unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        let mut altered = bytes.clone();
        altered[200] ^= 1;
        let err = PageCorpus::from_bytes(&altered).unwrap_err();
        assert!(err.to_string().contains("digest"), "{err}");
        assert!(PageCorpus::from_bytes(b"nonsense").is_err());
    }

    #[test]
    fn bad_chains_are_named() {
        let err = PageCorpus::new(
            "x",
            vec![PageChain {
                class: ContentClass::SqliteBlob,
                pages: vec![vec![0; 10]],
            }],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "page corpus: chain 0 (sqlite-blob): version 0 is 10 bytes, not 4096"
        );
    }
}
