//! `struct f2fs_super_block` (3072 bytes at byte 1024 of blocks 0 and 1) and its checks.

use crate::codec::{Block, Reader, Writer};
use crate::consts::*;
use crate::crc::f2fs_crc32;
use crate::error::Corruption;
use crate::features::Features;

/// One entry of the multi-device list (`struct f2fs_device`, 68 bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceEntry {
    /// NUL-padded path, `MAX_PATH_LEN` bytes on disk.
    pub path: Vec<u8>,
    pub total_segments: u32,
}

/// The superblock, field for field. Byte arrays are `Vec`s of their on-disk length
/// (encoding pads or cuts them to size).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Superblock {
    pub magic: u32,
    pub major_ver: u16,
    pub minor_ver: u16,
    pub log_sectorsize: u32,
    pub log_sectors_per_block: u32,
    pub log_blocksize: u32,
    pub log_blocks_per_seg: u32,
    pub segs_per_sec: u32,
    pub secs_per_zone: u32,
    pub checksum_offset: u32,
    pub block_count: u64,
    pub section_count: u32,
    pub segment_count: u32,
    pub segment_count_ckpt: u32,
    pub segment_count_sit: u32,
    pub segment_count_nat: u32,
    pub segment_count_ssa: u32,
    pub segment_count_main: u32,
    pub segment0_blkaddr: u32,
    pub cp_blkaddr: u32,
    pub sit_blkaddr: u32,
    pub nat_blkaddr: u32,
    pub ssa_blkaddr: u32,
    pub main_blkaddr: u32,
    pub root_ino: u32,
    pub node_ino: u32,
    pub meta_ino: u32,
    pub uuid: [u8; 16],
    /// UTF-16 label, `MAX_VOLUME_NAME` units.
    pub volume_name: Vec<u16>,
    /// Number of cold (media) extensions at the start of `extension_list`.
    pub extension_count: u32,
    /// `MAX_EXTENSION` NUL-padded 8-byte names: cold ones, then `hot_ext_count` hot ones.
    pub extension_list: Vec<[u8; EXTENSION_LEN]>,
    pub cp_payload: u32,
    pub version: Vec<u8>,
    pub init_version: Vec<u8>,
    pub feature: Features,
    pub encryption_level: u8,
    pub encrypt_pw_salt: [u8; 16],
    pub devices: Vec<DeviceEntry>,
    pub qf_ino: [u32; MAX_QUOTAS],
    pub hot_ext_count: u8,
    pub s_encoding: u16,
    pub s_encoding_flags: u16,
    /// The tail kept verbatim (the kernel's `s_stop_reason`/`s_errors` live here).
    pub reserved: Vec<u8>,
    pub crc: u32,
}

impl Superblock {
    /// Decodes the 3072 bytes of a superblock (never fails: checks are separate).
    pub fn decode(raw: &[u8]) -> Superblock {
        let mut r = Reader::new(raw);
        let mut sb = Superblock {
            magic: r.u32(),
            major_ver: r.u16(),
            minor_ver: r.u16(),
            log_sectorsize: r.u32(),
            log_sectors_per_block: r.u32(),
            log_blocksize: r.u32(),
            log_blocks_per_seg: r.u32(),
            segs_per_sec: r.u32(),
            secs_per_zone: r.u32(),
            checksum_offset: r.u32(),
            block_count: r.u64(),
            ..Superblock::default()
        };
        sb.decode_areas(&mut r);
        sb.decode_identity(&mut r);
        sb.decode_tail(&mut r);
        sb
    }

    fn decode_areas(&mut self, r: &mut Reader) {
        self.section_count = r.u32();
        self.segment_count = r.u32();
        self.segment_count_ckpt = r.u32();
        self.segment_count_sit = r.u32();
        self.segment_count_nat = r.u32();
        self.segment_count_ssa = r.u32();
        self.segment_count_main = r.u32();
        self.segment0_blkaddr = r.u32();
        self.cp_blkaddr = r.u32();
        self.sit_blkaddr = r.u32();
        self.nat_blkaddr = r.u32();
        self.ssa_blkaddr = r.u32();
        self.main_blkaddr = r.u32();
        self.root_ino = r.u32();
        self.node_ino = r.u32();
        self.meta_ino = r.u32();
    }

    fn decode_identity(&mut self, r: &mut Reader) {
        self.uuid = r.fixed();
        self.volume_name = (0..MAX_VOLUME_NAME).map(|_| r.u16()).collect();
        self.extension_count = r.u32();
        self.extension_list = (0..MAX_EXTENSION).map(|_| r.fixed()).collect();
        self.cp_payload = r.u32();
        self.version = r.vec(VERSION_LEN);
        self.init_version = r.vec(VERSION_LEN);
        self.feature = Features(r.u32());
        self.encryption_level = r.u8();
        self.encrypt_pw_salt = r.fixed();
    }

    fn decode_tail(&mut self, r: &mut Reader) {
        self.devices = (0..MAX_DEVICES)
            .map(|_| DeviceEntry {
                path: r.vec(MAX_PATH_LEN),
                total_segments: r.u32(),
            })
            .collect();
        self.qf_ino = [r.u32(), r.u32(), r.u32()];
        self.hot_ext_count = r.u8();
        self.s_encoding = r.u16();
        self.s_encoding_flags = r.u16();
        self.reserved = r.vec(SB_RESERVED_LEN);
        self.crc = r.u32();
    }

    /// Encodes the 3072 bytes, storing `crc` as it is (see [`Superblock::seal`]).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; SUPER_SIZE];
        let mut w = Writer::new(&mut out);
        w.u32(self.magic);
        w.u16(self.major_ver);
        w.u16(self.minor_ver);
        for v in [
            self.log_sectorsize,
            self.log_sectors_per_block,
            self.log_blocksize,
            self.log_blocks_per_seg,
            self.segs_per_sec,
            self.secs_per_zone,
            self.checksum_offset,
        ] {
            w.u32(v);
        }
        w.u64(self.block_count);
        self.encode_areas(&mut w);
        self.encode_identity(&mut w);
        self.encode_tail(&mut w);
        debug_assert!(!w.overrun() && w.pos() == SUPER_SIZE);
        out
    }

    fn encode_areas(&self, w: &mut Writer) {
        for v in [
            self.section_count,
            self.segment_count,
            self.segment_count_ckpt,
            self.segment_count_sit,
            self.segment_count_nat,
            self.segment_count_ssa,
            self.segment_count_main,
            self.segment0_blkaddr,
            self.cp_blkaddr,
            self.sit_blkaddr,
            self.nat_blkaddr,
            self.ssa_blkaddr,
            self.main_blkaddr,
            self.root_ino,
            self.node_ino,
            self.meta_ino,
        ] {
            w.u32(v);
        }
    }

    fn encode_identity(&self, w: &mut Writer) {
        w.bytes(&self.uuid);
        for i in 0..MAX_VOLUME_NAME {
            w.u16(self.volume_name.get(i).copied().unwrap_or(0));
        }
        w.u32(self.extension_count);
        for i in 0..MAX_EXTENSION {
            w.bytes(&self.extension_list.get(i).copied().unwrap_or_default());
        }
        w.u32(self.cp_payload);
        w.padded(&self.version, VERSION_LEN);
        w.padded(&self.init_version, VERSION_LEN);
        w.u32(self.feature.0);
        w.u8(self.encryption_level);
        w.bytes(&self.encrypt_pw_salt);
    }

    fn encode_tail(&self, w: &mut Writer) {
        for i in 0..MAX_DEVICES {
            let dev = self.devices.get(i).cloned().unwrap_or_default();
            w.padded(&dev.path, MAX_PATH_LEN);
            w.u32(dev.total_segments);
        }
        for q in self.qf_ino {
            w.u32(q);
        }
        w.u8(self.hot_ext_count);
        w.u16(self.s_encoding);
        w.u16(self.s_encoding_flags);
        w.padded(&self.reserved, SB_RESERVED_LEN);
        w.u32(self.crc);
    }

    /// Sets `checksum_offset` and `crc` as the sb_checksum feature asks (f2fs-tools
    /// `f2fs_prepare_super_block`); without the feature both stay zero.
    pub fn seal(&mut self) {
        if self.feature.contains(FEATURE_SB_CHKSUM) {
            self.checksum_offset = SB_CHKSUM_OFFSET;
            self.crc = self.computed_crc();
        } else {
            self.checksum_offset = 0;
            self.crc = 0;
        }
    }

    /// CRC of the bytes before `SB_CHKSUM_OFFSET`.
    pub fn computed_crc(&self) -> u32 {
        f2fs_crc32(&self.encode()[..SB_CHKSUM_OFFSET as usize])
    }

    /// The whole block a copy is written as: zeros with the superblock at byte 1024.
    pub fn to_block(&self) -> Box<Block> {
        let mut block = crate::codec::zero_block();
        block[SUPER_OFFSET..SUPER_OFFSET + SUPER_SIZE].copy_from_slice(&self.encode());
        block
    }

    /// Decodes the superblock stored in block `copy` (0 or 1) and checks it.
    pub fn from_block(block: &Block, copy: u8) -> Result<Superblock, Corruption> {
        let sb = Superblock::decode(&block[SUPER_OFFSET..SUPER_OFFSET + SUPER_SIZE]);
        sb.check(copy)?;
        Ok(sb)
    }

    pub fn label(&self) -> String {
        let units: Vec<u16> = self
            .volume_name
            .iter()
            .copied()
            .take_while(|&u| u != 0)
            .collect();
        String::from_utf16_lossy(&units)
    }

    pub fn version_string(&self) -> String {
        c_string(&self.version)
    }

    /// The cold (media) and hot extension lists.
    pub fn extensions(&self) -> (Vec<String>, Vec<String>) {
        let cold = (self.extension_count as usize).min(MAX_EXTENSION);
        let hot = (cold + self.hot_ext_count as usize).min(MAX_EXTENSION);
        let names = |range: std::ops::Range<usize>| {
            self.extension_list
                .get(range)
                .unwrap_or(&[])
                .iter()
                .map(|e| c_string(e))
                .collect::<Vec<_>>()
        };
        (names(0..cold), names(cold..hot))
    }
}

/// Text up to the first NUL.
pub(crate) fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// A superblock rule: the field, its value and the rule, for the error message.
type Rule = (&'static str, u64, String);

impl Superblock {
    /// The checks f2fs-tools and the kernel apply before trusting a copy
    /// (`sanity_check_raw_super`, `sanity_check_area_boundary` in f2fs-tools
    /// `fsck/mount.c`, `fs/f2fs/super.c`).
    pub fn check(&self, copy: u8) -> Result<(), Corruption> {
        self.check_checksum(copy)?;
        if self.magic != F2FS_SUPER_MAGIC {
            return Err(Corruption::SuperblockMagic {
                copy,
                found: self.magic,
            });
        }
        let broken = self
            .geometry_rules()
            .or_else(|| self.count_rules())
            .or_else(|| self.boundary_rules());
        match broken {
            Some((field, value, rule)) => Err(Corruption::SuperblockField {
                copy,
                field,
                value,
                rule,
            }),
            None => Ok(()),
        }
    }

    fn check_checksum(&self, copy: u8) -> Result<(), Corruption> {
        if !self.feature.contains(FEATURE_SB_CHKSUM) {
            return Ok(());
        }
        if self.checksum_offset != SB_CHKSUM_OFFSET {
            return Err(Corruption::SuperblockField {
                copy,
                field: "checksum_offset",
                value: self.checksum_offset as u64,
                rule: format!("must be {SB_CHKSUM_OFFSET} with sb_checksum"),
            });
        }
        let computed = self.computed_crc();
        if computed != self.crc {
            return Err(Corruption::SuperblockChecksum {
                copy,
                stored: self.crc,
                computed,
            });
        }
        Ok(())
    }

    fn geometry_rules(&self) -> Option<Rule> {
        let sectors_ok = (MIN_LOG_SECTOR_SIZE..=MAX_LOG_SECTOR_SIZE).contains(&self.log_sectorsize);
        let per_block = self.log_sectors_per_block as u64 + self.log_sectorsize as u64;
        first_broken([
            (self.log_blocksize != LOG_BLOCK_SIZE).then(|| {
                rule(
                    "log_blocksize",
                    self.log_blocksize,
                    "must be 12 (4 KiB blocks)",
                )
            }),
            (self.log_blocks_per_seg != LOG_BLOCKS_PER_SEG).then(|| {
                rule(
                    "log_blocks_per_seg",
                    self.log_blocks_per_seg,
                    "must be 9 (2 MiB segments)",
                )
            }),
            (!sectors_ok).then(|| rule("log_sectorsize", self.log_sectorsize, "must be 9..=12")),
            (per_block != MAX_LOG_SECTOR_SIZE as u64).then(|| {
                let rule_text = "plus log_sectorsize must be 12";
                rule(
                    "log_sectors_per_block",
                    self.log_sectors_per_block,
                    rule_text,
                )
            }),
            (self.node_ino != NODE_INO).then(|| rule("node_ino", self.node_ino, "must be 1")),
            (self.meta_ino != META_INO).then(|| rule("meta_ino", self.meta_ino, "must be 2")),
            (self.root_ino != ROOT_INO).then(|| rule("root_ino", self.root_ino, "must be 3")),
        ])
    }

    fn count_rules(&self) -> Option<Rule> {
        let segs = self.segment_count;
        let sections = self.section_count;
        let ext_total = self.extension_count as u64 + self.hot_ext_count as u64;
        first_broken([
            (!(MIN_SEGMENTS..=MAX_SEGMENTS).contains(&segs)).then(|| {
                let text = format!("must be {MIN_SEGMENTS}..={MAX_SEGMENTS}");
                rule("segment_count", segs, &text)
            }),
            (self.segs_per_sec == 0 || self.segs_per_sec > segs).then(|| {
                rule(
                    "segs_per_sec",
                    self.segs_per_sec,
                    "must be 1..=segment_count",
                )
            }),
            (sections < MIN_SEGMENTS || sections > segs / self.segs_per_sec.max(1)).then(|| {
                let text = "must be 9..=segment_count/segs_per_sec";
                rule("section_count", sections, text)
            }),
            (segs as u64 > self.block_count >> LOG_BLOCKS_PER_SEG)
                .then(|| rule("segment_count", segs, "must fit in block_count/512")),
            (self.secs_per_zone == 0 || self.secs_per_zone > sections).then(|| {
                rule(
                    "secs_per_zone",
                    self.secs_per_zone,
                    "must be 1..=section_count",
                )
            }),
            (ext_total > MAX_EXTENSION as u64).then(|| {
                let text = "extension_count + hot_ext_count must be <= 64";
                ("extension_count", ext_total, text.to_string())
            }),
            (self.cp_payload > BLOCKS_PER_SEG - CP_PACKS)
                .then(|| rule("cp_payload", self.cp_payload, "must be <= 510")),
            (self.segment_count_ckpt != CP_PACKS)
                .then(|| rule("segment_count_ckpt", self.segment_count_ckpt, "must be 2")),
        ])
    }

    fn boundary_rules(&self) -> Option<Rule> {
        let end = |start: u32, segs: u32| start as u64 + ((segs as u64) << LOG_BLOCKS_PER_SEG);
        let main_end = end(self.main_blkaddr, self.segment_count_main);
        let seg_end = end(self.segment0_blkaddr, self.segment_count);
        first_broken([
            (self.cp_blkaddr != self.segment0_blkaddr)
                .then(|| rule("cp_blkaddr", self.cp_blkaddr, "must equal segment0_blkaddr")),
            (end(self.cp_blkaddr, self.segment_count_ckpt) != self.sit_blkaddr as u64)
                .then(|| rule("sit_blkaddr", self.sit_blkaddr, "must follow the CP area")),
            (end(self.sit_blkaddr, self.segment_count_sit) != self.nat_blkaddr as u64)
                .then(|| rule("nat_blkaddr", self.nat_blkaddr, "must follow the SIT area")),
            (end(self.nat_blkaddr, self.segment_count_nat) != self.ssa_blkaddr as u64)
                .then(|| rule("ssa_blkaddr", self.ssa_blkaddr, "must follow the NAT area")),
            (end(self.ssa_blkaddr, self.segment_count_ssa) != self.main_blkaddr as u64).then(
                || {
                    rule(
                        "main_blkaddr",
                        self.main_blkaddr,
                        "must follow the SSA area",
                    )
                },
            ),
            (main_end > seg_end).then(|| {
                let text = "main area must end inside segment_count";
                rule("segment_count_main", self.segment_count_main, text)
            }),
            (self.segment_count_main as u64
                != self.section_count as u64 * self.segs_per_sec as u64)
                .then(|| {
                    let text = "must be section_count * segs_per_sec";
                    rule("segment_count_main", self.segment_count_main, text)
                }),
            (self.segment_count_sit == 0 || !self.segment_count_sit.is_multiple_of(2)).then(|| {
                rule(
                    "segment_count_sit",
                    self.segment_count_sit,
                    "must be even, > 0",
                )
            }),
            (self.segment_count_nat == 0 || !self.segment_count_nat.is_multiple_of(2)).then(|| {
                rule(
                    "segment_count_nat",
                    self.segment_count_nat,
                    "must be even, > 0",
                )
            }),
        ])
    }
}

fn rule(field: &'static str, value: u32, text: &str) -> Rule {
    (field, value as u64, text.to_string())
}

fn first_broken<const N: usize>(rules: [Option<Rule>; N]) -> Option<Rule> {
    rules.into_iter().flatten().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Superblock {
        let mut ext = vec![[0u8; EXTENSION_LEN]; MAX_EXTENSION];
        ext[0][..2].copy_from_slice(b"mp");
        ext[1][..2].copy_from_slice(b"db");
        Superblock {
            magic: F2FS_SUPER_MAGIC,
            major_ver: 1,
            minor_ver: 15,
            block_count: 0x1_2345_6789,
            main_blkaddr: 0xAABB,
            uuid: [7; 16],
            volume_name: "data".encode_utf16().collect(),
            extension_count: 1,
            extension_list: ext,
            hot_ext_count: 1,
            cp_payload: 3,
            version: b"v1".to_vec(),
            feature: Features(FEATURE_SB_CHKSUM),
            qf_ino: [4, 5, 6],
            ..Superblock::default()
        }
    }

    #[test]
    fn field_offsets_match_struct_f2fs_super_block() {
        let raw = sample().encode();
        assert_eq!(raw.len(), SUPER_SIZE);
        let at = |off: usize, len: usize| &raw[off..off + len];
        assert_eq!(at(0, 4), &F2FS_SUPER_MAGIC.to_le_bytes());
        assert_eq!(
            at(36, 8),
            &0x1_2345_6789u64.to_le_bytes(),
            "packed block_count"
        );
        assert_eq!(at(92, 4), &0xAABBu32.to_le_bytes(), "main_blkaddr");
        assert_eq!(at(108, 16), &[7; 16], "uuid");
        assert_eq!(at(124, 2), &[b'd', 0], "volume_name");
        assert_eq!(at(1148, 4), &1u32.to_le_bytes(), "extension_count");
        assert_eq!(at(1152, 2), b"mp", "extension_list");
        assert_eq!(at(1664, 4), &3u32.to_le_bytes(), "cp_payload");
        assert_eq!(at(1668, 2), b"v1", "version");
        assert_eq!(at(2180, 4), &FEATURE_SB_CHKSUM.to_le_bytes(), "feature");
        assert_eq!(at(2745, 4), &4u32.to_le_bytes(), "qf_ino");
        assert_eq!(raw[2757], 1, "hot_ext_count");
    }

    #[test]
    fn round_trip_and_accessors() {
        let mut sb = sample();
        sb.seal();
        assert_eq!(sb.checksum_offset, SB_CHKSUM_OFFSET);
        let block = sb.to_block();
        assert_eq!(
            &block[SUPER_OFFSET + 3068..SUPER_OFFSET + 3072],
            &sb.crc.to_le_bytes()
        );
        let back = Superblock::decode(&block[SUPER_OFFSET..SUPER_OFFSET + SUPER_SIZE]);
        assert_eq!(back.encode(), sb.encode());
        assert_eq!(back.label(), "data");
        assert_eq!(back.version_string(), "v1");
        assert_eq!(back.extensions(), (vec!["mp".into()], vec!["db".into()]));
        assert!(back.check_checksum(0).is_ok());
        let mut bad = back.clone();
        bad.block_count += 1;
        assert!(matches!(
            bad.check_checksum(0),
            Err(Corruption::SuperblockChecksum { copy: 0, .. })
        ));
    }
}
