//! The OSPF wire counter's frame reader (linerate_routing::wire): any bytes, as a packet socket
//! in a device's namespace may hand it, are counted or ignored, never a panic; a frame counts at
//! most once a way, and no more LSAs than its bytes hold (an LSA header is 20 bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_routing::wire::{self, OspfCounts};

fuzz_target!(|data: &[u8]| {
    let mut c = OspfCounts::default();
    wire::count(data, true, &mut c);
    let packets =
        c.sent.hellos + c.sent.dbds + c.sent.ls_requests + c.sent.ls_updates + c.sent.ls_acks;
    assert!(packets <= 1);
    assert_eq!(c.received, Default::default());
    assert!(c.sent.lsas <= data.len() as u64 / 20);
    assert!(c.sent.lsa_acks <= data.len() as u64 / 20);
    // A counted packet is a well-formed one (a well-formed one of a type OSPF does not have
    // counts as nothing).
    assert!(packets == 0 || wire::version(data).is_some());
});
