//! The assembled stack (work in progress).
