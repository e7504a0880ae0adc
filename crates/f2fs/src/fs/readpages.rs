//! Reads of several consecutive pages of a file as the block layer issues them: the
//! plain blocks' addresses cut into requests at every break (an extent boundary) and at
//! the largest request, each request paying the host's time, up to the model's requests
//! in flight ([`flashstack_block::read_model`], configured by `F2fsConfig::read`). Pages
//! of a compressed cluster are decompressed, once per cluster; pages stored any other
//! way (holes, inline data, MedFS deltas) take the one-page path.
//!
//! This is where the stack's reads pay for fragmentation: a file in 512 pieces is 512
//! requests, a contiguous one a few (`docs/janusd.md`).

use flashstack_block::{runs_of, timed_read, BlockDevice, LBA_SIZE};

use super::cluster::ClusterMemo;
use super::data::OFF_SIZE;
use super::pagemap::{Encoding, Stored};
use super::{corrupt, F2fs, FsError};
use crate::codec::{zero_block, Block};
use crate::consts::BLOCK_SIZE;

impl<D: BlockDevice> F2fs<D> {
    /// Reads `count` whole pages of `ino` from `first` (zeros past the end of the file
    /// or in holes), the plain blocks in as few requests as their addresses allow.
    pub fn read_pages(
        &mut self,
        ino: u32,
        first: u64,
        count: usize,
    ) -> Result<Vec<Box<Block>>, FsError> {
        self.check_file(ino)?;
        // A page cache's miss reaching the file system is one of the file's read calls,
        // for HCluster's features as for FPC's re-packing (a launch reading the file's
        // blocks): the whole stack reads only through here.
        self.note_file_call(ino, false);
        let shape = match self.encoding(ino)? {
            Encoding::Compressed => Some(self.cluster_shape(ino)?),
            _ => None,
        };
        let mut stored = Vec::with_capacity(count);
        for k in 0..count as u64 {
            let index = first + k;
            let mut s = self.resolve(ino, index)?;
            if let Some(shape) = shape {
                // A compressed cluster's slots after its head hold compressed bytes or
                // `NEW_ADDR`, never the page: the cluster is read and decompressed.
                let head = index & !(shape.pages() - 1);
                let in_cluster = matches!(s, Stored::Block(_) | Stored::Reserved);
                if in_cluster && self.is_cluster_head(ino, head)? {
                    s = Stored::Compressed;
                }
            }
            stored.push(s);
        }
        let plain = self.plain_blocks(ino, first, &stored)?;
        let mut bytes = self.read_plain(&plain)?;
        let mut plain_at = 0usize;
        let size = self.inode_u64(ino, OFF_SIZE)?;
        let mut out = Vec::with_capacity(count);
        let mut memo = ClusterMemo::default();
        for (k, s) in stored.iter().enumerate() {
            let index = first + k as u64;
            let mut page = match (s, shape) {
                (Stored::Block(addr), _) => {
                    let mut page = zero_block();
                    let at = plain_at * BLOCK_SIZE;
                    page.copy_from_slice(&bytes[at..at + BLOCK_SIZE]);
                    plain_at += 1;
                    self.note_block_read(*addr, &page);
                    page
                }
                (Stored::Compressed, Some(shape)) => self
                    .cluster_page(ino, index, shape, &mut memo)?
                    .ok_or_else(|| corrupt(format!("inode {ino} page {index}: not compressed")))?,
                _ => self.load_page(ino, index)?,
            };
            zero_past_end(&mut page, index, size);
            out.push(page);
        }
        bytes.clear();
        Ok(out)
    }

    /// The addresses of the pages stored as plain blocks, in page order, checked.
    fn plain_blocks(
        &mut self,
        ino: u32,
        first: u64,
        stored: &[Stored],
    ) -> Result<Vec<u64>, FsError> {
        let mut plain = Vec::new();
        for (k, s) in stored.iter().enumerate() {
            if let Stored::Block(addr) = *s {
                if plain.is_empty() {
                    self.check_encoding(ino)?;
                }
                self.check_data_addr(ino, first + k as u64, addr)?;
                plain.push(addr as u64);
            }
        }
        Ok(plain)
    }

    /// Reads the blocks at `lbas` (in order) through the block layer's read model.
    fn read_plain(&mut self, lbas: &[u64]) -> Result<Vec<u8>, FsError> {
        let mut bytes = vec![0u8; lbas.len() * LBA_SIZE];
        if lbas.is_empty() {
            return Ok(bytes);
        }
        let model = self.cfg.read.clone();
        let requests = model.split(&runs_of(lbas));
        let t = timed_read(
            &mut self.dev,
            self.now_ns,
            &requests,
            &model,
            Some(&mut bytes),
        )
        .map_err(crate::F2fsError::from)?;
        self.now_ns += t.elapsed_ns;
        self.metrics.blocks_read += lbas.len() as u64;
        self.metrics.read_requests += t.requests;
        Ok(bytes)
    }
}

/// Bytes of page `index` at or past `size` read as zeros.
fn zero_past_end(page: &mut Block, index: u64, size: u64) {
    let start = index.saturating_mul(BLOCK_SIZE as u64);
    if start.saturating_add(BLOCK_SIZE as u64) > size {
        let keep = size.saturating_sub(start) as usize;
        page[keep..].fill(0);
    }
}
