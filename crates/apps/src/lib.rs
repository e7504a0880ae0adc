//! App personas (work in progress).
