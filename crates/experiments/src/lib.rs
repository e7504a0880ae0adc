//! Reproductions of the seed papers' experiments: each runs the paper's baselines on
//! flashstack, on the same workloads, and sets the paper's stated figures beside ours.

pub mod coco;
pub mod coco_op;
pub mod fullstack;
pub mod janusd;
pub mod ldc;
pub mod ldc_stack;
pub mod medfs;
pub mod mobifs;
pub mod paper;
