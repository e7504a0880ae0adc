//! Sparse files: where an image file holds data. A 16 GiB phone image may hold a few
//! hundred megabytes; reading its holes would cost a read of 16 GB of zeros.

use std::fs::File;
use std::os::unix::io::AsRawFd;

/// The byte ranges of `file` that may hold data (`lseek` `SEEK_DATA`/`SEEK_HOLE`), in
/// order; holes read as zeros and need not be read. Where the file system cannot tell,
/// the whole file is one range.
pub fn data_ranges(file: &File) -> std::io::Result<Vec<(u64, u64)>> {
    let len = file.metadata()?.len();
    let fd = file.as_raw_fd();
    let mut ranges = Vec::new();
    let mut at = 0u64;
    while at < len {
        // SAFETY: lseek on a descriptor `file` owns; it moves only the file offset, which
        // no other code of ours relies on (reads and writes here are positioned).
        let data = unsafe { libc::lseek(fd, at as i64, libc::SEEK_DATA) };
        if data < 0 {
            let error = std::io::Error::last_os_error();
            return match error.raw_os_error() {
                // No data past `at`.
                Some(libc::ENXIO) => Ok(ranges),
                Some(libc::EINVAL) if ranges.is_empty() && at == 0 => Ok(vec![(0, len)]),
                _ => Err(error),
            };
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
        if hole < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let (start, end) = (data as u64, (hole as u64).min(len));
        if end <= start {
            break;
        }
        ranges.push((start, end));
        at = end;
    }
    Ok(ranges)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;

    use super::*;

    #[test]
    fn finds_the_data_of_a_sparse_file_and_nothing_else() {
        let path = std::env::temp_dir().join(format!("sparse-{}", std::process::id()));
        let file = File::create(&path).unwrap();
        file.set_len(64 << 20).unwrap();
        file.write_all_at(&[1u8; 4096], 8 << 20).unwrap();
        file.write_all_at(&[2u8; 4096], 40 << 20).unwrap();
        let file = File::open(&path).unwrap();
        let ranges = data_ranges(&file).unwrap();
        std::fs::remove_file(&path).unwrap();
        // Every written byte is inside a range; on a file system that tracks holes the
        // ranges are far smaller than the file (one without SEEK_DATA gives the whole file).
        for at in [8u64 << 20, 40 << 20] {
            assert!(
                ranges.iter().any(|&(s, e)| s <= at && at + 4096 <= e),
                "{ranges:?}"
            );
        }
        assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0), "{ranges:?}");
        let covered: u64 = ranges.iter().map(|(s, e)| e - s).sum();
        assert!(covered == 64 << 20 || covered < 8 << 20, "{ranges:?}");
    }
}
