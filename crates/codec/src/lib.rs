//! Work in progress: the functional VP8 codec lands here next.
