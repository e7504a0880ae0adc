//! MedFS's HCluster (seed-systems.md §A "HCluster"): files are points `(writes, reads)`,
//! their counts of write and read calls into the file system since the in-memory inode
//! was made (here: since mount), clustered by k-means with k = 4 from the published
//! initial centroids. Only files nearest the read-cold/write-hot centroid take DCM
//! deltas; BGRes re-clusters in idle time. Pure functions: the mechanism passes the
//! points and keeps the centroids.

/// A point or centroid: (write calls, read calls).
pub type Point = (f64, f64);

/// The source's initial centroids (`super.c`; x = writes, y = reads), in label order.
#[allow(dead_code)] // the published values as numbers; a test checks the tenths against them
pub const INITIAL_CENTROIDS: [Point; 4] = [(5.9, 2.9), (46.2, 5.5), (3.5, 31.1), (33.3, 30.8)];
/// The same in tenths (the configuration's integer form).
pub const INITIAL_CENTROIDS_TENTHS: [[u32; 2]; 4] = [[59, 29], [462, 55], [35, 311], [333, 308]];

/// Centroids from their configured tenths.
pub fn from_tenths(t: &[[u32; 2]; 4]) -> [Point; 4] {
    t.map(|[w, r]| (f64::from(w) / 10.0, f64::from(r) / 10.0))
}

/// Label (index) of the read-cold/write-hot cluster, the only one DCM admits.
pub const READ_COLD_WRITE_HOT: usize = 1;

/// Bound on k-means iterations (the source iterates until the total distance stops
/// changing; with few points that takes a handful).
pub const MAX_ITERATIONS: usize = 64;

fn distance(a: Point, b: Point) -> f64 {
    ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt()
}

/// The nearest centroid's label (ties go to the lower label).
pub fn nearest(p: Point, centroids: &[Point; 4]) -> usize {
    let mut best = 0;
    for (i, &c) in centroids.iter().enumerate().skip(1) {
        if distance(p, c) < distance(p, centroids[best]) {
            best = i;
        }
    }
    best
}

/// Whether `p` is nearest the read-cold/write-hot centroid.
pub fn read_cold_write_hot(p: Point, centroids: &[Point; 4]) -> bool {
    nearest(p, centroids) == READ_COLD_WRITE_HOT
}

/// `f2fs_kmeans_bgres`: assign → recompute means → total distance, from `start`, until
/// the total stops changing (at most [`MAX_ITERATIONS`]). A cluster left without points
/// keeps its centroid. No points: the centroids stay.
pub fn kmeans(points: &[Point], start: [Point; 4]) -> [Point; 4] {
    let mut centroids = start;
    let mut last_total = f64::INFINITY;
    for _ in 0..MAX_ITERATIONS {
        let mut sums = [(0.0, 0.0, 0usize); 4];
        for &p in points {
            let k = nearest(p, &centroids);
            sums[k].0 += p.0;
            sums[k].1 += p.1;
            sums[k].2 += 1;
        }
        for (c, s) in centroids.iter_mut().zip(sums) {
            if s.2 > 0 {
                *c = (s.0 / s.2 as f64, s.1 / s.2 as f64);
            }
        }
        let total: f64 = points
            .iter()
            .map(|&p| distance(p, centroids[nearest(p, &centroids)]))
            .sum();
        if total == last_total {
            break;
        }
        last_total = total;
    }
    centroids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenths_are_the_published_centroids() {
        assert_eq!(from_tenths(&INITIAL_CENTROIDS_TENTHS), INITIAL_CENTROIDS);
    }

    #[test]
    fn the_published_centroids_classify_by_distance() {
        let c = INITIAL_CENTROIDS;
        assert_eq!(nearest((0.0, 0.0), &c), 0);
        assert_eq!(nearest((40.0, 0.0), &c), READ_COLD_WRITE_HOT);
        assert_eq!(nearest((0.0, 40.0), &c), 2);
        assert_eq!(nearest((40.0, 40.0), &c), 3);
        // Halfway between 1 and 2 on the write axis (26.05): the hotter side from 26.1.
        assert!(!read_cold_write_hot((26.0, 4.2), &c));
        assert!(read_cold_write_hot((26.2, 4.2), &c));
    }

    #[test]
    fn kmeans_moves_centroids_to_the_means_and_stops() {
        let points = [(100.0, 0.0), (120.0, 2.0), (1.0, 1.0), (3.0, 1.0)];
        let c = kmeans(&points, INITIAL_CENTROIDS);
        assert_eq!(c[0], (2.0, 1.0));
        assert_eq!(c[1], (110.0, 1.0));
        // Empty clusters keep their centroids.
        assert_eq!(c[2], INITIAL_CENTROIDS[2]);
        assert_eq!(c[3], INITIAL_CENTROIDS[3]);
        assert_eq!(kmeans(&[], INITIAL_CENTROIDS), INITIAL_CENTROIDS);
    }
}
