//! macOS/BSD /dev/bpf transmit backend
