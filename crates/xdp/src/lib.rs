//! XDP programs (sink, pass-through) built from bpf/ and their loaders
