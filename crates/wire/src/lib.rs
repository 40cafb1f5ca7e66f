//! Frame layouts, builders, checksums and field patches; no I/O
