//! The live-frames XDP transmit backend (in progress).
