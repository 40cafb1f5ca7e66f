use thiserror::Error;

/// Everything that can go wrong while describing, building or patching a frame.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    #[error(
        "bad MAC address {input:?}: expected six hex octets like 02:00:00:00:00:01 or 02-00-00-00-00-01"
    )]
    BadMac { input: String },

    #[error("bad IP address {input:?} for {field}: expected {expected}")]
    BadIp {
        field: String,
        input: String,
        expected: &'static str,
    },

    #[error(
        "bad payload {input:?}: {reason}; forms are fixed:0xAB | fixed:171 | inc | random | random:SEED | pattern:HEX | raw:HEX"
    )]
    BadPayload { input: String, reason: String },

    #[error(
        "bad TCP flags {input:?}: {reason}; use names like syn,ack or letters F S R P A U E C like SA"
    )]
    BadTcpFlags { input: String, reason: String },

    #[error("unknown field {input:?}: known fields are {known}")]
    UnknownField { input: String, known: &'static str },

    #[error("bad field {input:?}: {reason}")]
    BadField { input: String, reason: String },

    #[error("bad value {input:?} for {field}: {reason}")]
    BadValue {
        field: String,
        input: String,
        reason: String,
    },

    #[error("value {value:#x} for {field} is over its maximum {max:#x}")]
    ValueTooLarge { field: String, value: u64, max: u64 },

    #[error("field {field} is not in this frame: {reason}")]
    FieldNotInFrame { field: String, reason: String },

    #[error("frame size {size} is below the minimum {min} for these headers (FCS included)")]
    FrameTooSmall { size: usize, min: usize },

    #[error("frame size {size} is over the maximum {max} (FCS included)")]
    FrameTooLarge { size: usize, max: usize },

    #[error("VLAN id {id} is out of range 0..=4095")]
    VlanIdOutOfRange { id: u16 },

    #[error("VLAN priority (pcp) {pcp} is out of range 0..=7")]
    VlanPcpOutOfRange { pcp: u8 },

    #[error("IPv4 DSCP {dscp} is out of range 0..=63")]
    DscpOutOfRange { dscp: u8 },

    #[error("IPv6 flow label {flow_label:#x} is out of range 0..=0xfffff")]
    FlowLabelOutOfRange { flow_label: u32 },

    #[error("raw payload is {len} bytes but a frame of size {frame_size} has room for {room}")]
    PayloadTooLong {
        len: usize,
        room: usize,
        frame_size: usize,
    },

    #[error("a header stack starts with an ethernet header, not {first}")]
    StackStart { first: &'static str },

    #[error("header {position} ({header}) cannot follow {after}: after {after} comes {allowed}")]
    StackOrder {
        position: usize,
        header: &'static str,
        after: &'static str,
        allowed: &'static str,
    },

    #[error(
        "the header stack ends with {last}, which does not carry a payload: end it with udp, tcp, icmp or arp"
    )]
    StackEnd { last: &'static str },

    #[error("header {position} (mpls): label {label:#x} is out of range 0..=0xfffff")]
    MplsLabelOutOfRange { position: usize, label: u32 },

    #[error("header {position} (mpls): traffic class {tc} is out of range 0..=7")]
    MplsTcOutOfRange { position: usize, tc: u8 },

    #[error("header {position} (vxlan): VNI {vni:#x} is out of range 0..=0xffffff")]
    VniOutOfRange { position: usize, vni: u32 },

    #[error("NVGRE VSID {vsid:#x} is out of range 0..=0xffffff")]
    VsidOutOfRange { vsid: u32 },

    #[error(
        "header {position} (udp) over ipv6 cannot send a zero checksum (RFC 8200 section 8.1): let linerate compute it"
    )]
    UdpZeroChecksumOverIpv6 { position: usize },

    #[error(
        "header {position} (udp) carries the payload, so it has no well-known port: give its destination port"
    )]
    UdpPortMissing { position: usize },

    #[error("the word at byte {offset} cannot be patched: {reason}")]
    WordNotPatchable { offset: usize, reason: &'static str },
}
