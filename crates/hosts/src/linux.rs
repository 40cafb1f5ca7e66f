//! The Linux side: the hosts' maps in a loaded program ([`HostTable`]), `bpf/host.bpf.c` on a
//! port ([`HostProgram`]), and resolving neighbours through them ([`resolve`]).

mod program;
mod resolve;
mod table;

pub use program::{HostProgram, answer_mode};
pub use resolve::{RETRY, resolve};
pub use table::HostTable;
