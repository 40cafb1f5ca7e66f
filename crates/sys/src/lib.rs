//! The Linux syscall boundary that the socket backends (AF_XDP, AF_PACKET) share: thin, typed
//! wrappers over `socket`, `setsockopt`, `getsockopt`, `bind`, `sendto` and `mmap`. Each
//! backend keeps only what is its own (which family, which options, which address) and every
//! `unsafe` of that kind lives here, once. Beside them, the one procfs read of the kernel's
//! socket table a server needs (`peer_uid`).

#[cfg(target_os = "linux")]
mod linux;

#[cfg(target_os = "linux")]
mod peer;

#[cfg(target_os = "linux")]
pub use linux::*;
#[cfg(target_os = "linux")]
pub use peer::{peer_uid, started_by};
