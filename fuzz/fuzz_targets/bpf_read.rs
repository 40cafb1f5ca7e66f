//! The /dev/bpf receive side: any bytes as one `read()` buffer through the record parser and
//! the capture counts. Parsing ends in records or an error, never a panic, and every record
//! read is counted once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_bpfdev::capture::{CaptureCounts, records};

fuzz_target!(|data: &[u8]| {
    let whole = records(data).take_while(Result::is_ok).count() as u64;
    let mut counts = CaptureCounts::new(4, 2);
    match counts.absorb(data, 1 << 40) {
        Ok(n) => {
            assert_eq!(n, whole);
            assert_eq!(counts.frames, n);
        }
        Err(_) => assert_eq!(counts.frames, whole),
    }
    assert!(counts.signed_frames() + counts.cut <= counts.frames);
});
