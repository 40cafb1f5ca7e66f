use super::*;

fn sample() -> Pdu {
    Pdu {
        actor: Info {
            system_priority: 1,
            system: [1, 1, 1, 1, 1, 1],
            key: 1,
            port_priority: 1,
            port: 1,
            state: 0x3f,
        },
        partner: Info {
            system_priority: 32768,
            system: [2, 2, 2, 2, 2, 2],
            key: 7,
            port_priority: 255,
            port: 3,
            state: state::TIMEOUT | state::SYNCHRONIZATION | state::EXPIRED,
        },
        collector_max_delay: 5,
    }
}

const SRC: [u8; 6] = [0, 0, 1, 1, 1, 1];

/// The frame of `sample()`, byte by byte as 802.1AX §6.4.2 lays it out.
#[rustfmt::skip]
const SAMPLE: [u8; 74] = [
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x02,  0x00, 0x00, 0x01, 0x01, 0x01, 0x01,  0x88, 0x09,
    0x01, 0x01,
    0x01, 0x14, 0x00, 0x01,  0x01, 0x01, 0x01, 0x01, 0x01, 0x01,  0x00, 0x01,  0x00, 0x01,
    0x00, 0x01,  0x3f,  0x00, 0x00, 0x00,
    0x02, 0x14, 0x80, 0x00,  0x02, 0x02, 0x02, 0x02, 0x02, 0x02,  0x00, 0x07,  0x00, 0xff,
    0x00, 0x03,  0x8a,  0x00, 0x00, 0x00,
    0x03, 0x10, 0x00, 0x05,  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0x00, 0x00,
];

#[test]
fn a_lacpdu_is_laid_out_byte_for_byte() {
    let frame = sample().emit(SRC);
    assert_eq!(frame.len(), FRAME_LEN);
    assert_eq!(frame[..SAMPLE.len()], SAMPLE);
    assert!(
        frame[SAMPLE.len()..].iter().all(|&b| b == 0),
        "50 reserved zeros"
    );
}

#[test]
fn a_lacpdu_reads_back_as_written() {
    assert_eq!(Pdu::parse(&sample().emit(SRC)), Ok(sample()));
}

#[test]
fn what_is_not_a_lacpdu_is_refused_with_why() {
    let good = sample().emit(SRC);
    assert_eq!(Pdu::parse(&good[..100]), Err(PduError::Short(100)));
    let mut f = good;
    f[12] = 0x08;
    f[13] = 0x00;
    assert_eq!(Pdu::parse(&f), Err(PduError::NotSlowProtocols(0x0800)));
    let mut f = good;
    f[field::SUBTYPE] = 2; // a Marker PDU
    assert_eq!(Pdu::parse(&f), Err(PduError::NotLacp(2)));
    let mut f = good;
    f[field::VERSION] = 0;
    assert_eq!(Pdu::parse(&f), Err(PduError::Version(0)));
    let mut f = good;
    f[field::PARTNER + 1] = 19;
    assert!(matches!(
        Pdu::parse(&f),
        Err(PduError::Tlv { expected: 2, .. })
    ));
    // A later version is read for what version 1 defines.
    let mut f = good;
    f[field::VERSION] = 2;
    assert_eq!(Pdu::parse(&f), Ok(sample()));
}

/// An independent decoder reads what the codec writes: tcpdump's LACP dissector
/// (print-slow.c), on a pcap of the frame.
/// What `tcpdump -v -nn -e` reads off a pcap of `frames`: an independent decoder's view.
fn tcpdump_reads(frames: &[&[u8]]) -> String {
    use pcap_file::pcap::{PcapPacket, PcapWriter};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("slow.pcap");
    {
        let file = std::fs::File::create(&path).expect("create the pcap");
        let mut w = PcapWriter::new(file).expect("pcap header");
        for frame in frames {
            w.write_packet(&PcapPacket::new(
                std::time::Duration::ZERO,
                frame.len() as u32,
                frame,
            ))
            .expect("write the frame");
        }
    }
    let out = std::process::Command::new("tcpdump")
        .args(["-v", "-nn", "-e", "-r"])
        .arg(&path)
        .output()
        .expect("tcpdump is installed (scripts/setup.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn tcpdump_decodes_the_frame_as_written() {
    let text = tcpdump_reads(&[&sample().emit(SRC)]);
    for line in [
        "00:00:01:01:01:01 > 01:80:c2:00:00:02, ethertype Slow Protocols (0x8809), length 124",
        "LACPv1, length 110",
        "Actor Information TLV (0x01), length 20",
        "System 01:01:01:01:01:01, System Priority 1, Key 1, Port 1, Port Priority 1",
        "State Flags [Activity, Timeout, Aggregation, Synchronization, Collecting, Distributing]",
        "Partner Information TLV (0x02), length 20",
        "System 02:02:02:02:02:02, System Priority 32768, Key 7, Port 3, Port Priority 255",
        "State Flags [Timeout, Synchronization, Expired]",
        "Collector Information TLV (0x03), length 16",
        "Max Delay 5",
        "Terminator TLV (0x00), length 0",
    ] {
        assert!(text.contains(line), "tcpdump did not say {line:?}:\n{text}");
    }
}

/// A Marker PDU as a requester sends it (802.1AX-2014 §6.5.3.3), laid out by hand.
fn marker(system: [u8; 6], port: u16, transaction: u32) -> [u8; FRAME_LEN] {
    let mut f = [0u8; FRAME_LEN];
    f[0..6].copy_from_slice(&SLOW_PROTOCOLS_MAC);
    f[6..12].copy_from_slice(&system);
    f[12..14].copy_from_slice(&[0x88, 0x09]);
    f[14] = 2; // subtype Marker
    f[15] = 1; // version
    f[16] = 1; // Marker Information
    f[17] = 16;
    f[18..20].copy_from_slice(&port.to_be_bytes());
    f[20..26].copy_from_slice(&system);
    f[26..30].copy_from_slice(&transaction.to_be_bytes());
    f
}

#[test]
fn a_marker_is_answered_with_its_requesters_fields_and_nothing_else_is() {
    let asked = marker([2, 2, 2, 2, 2, 2], 7, 0x1234_5678);
    let answer = marker_response(&asked, SRC).expect("a Marker PDU is answered");
    let mut want = asked;
    want[6..12].copy_from_slice(&SRC);
    want[16] = 2; // Marker Response Information
    assert_eq!(answer, want);
    // A response, LACP, a short frame: no answer.
    assert!(marker_response(&answer, SRC).is_none());
    assert!(marker_response(&sample().emit(SRC), SRC).is_none());
    assert!(marker_response(&asked[..100], SRC).is_none());
}

#[test]
fn tcpdump_decodes_the_marker_and_its_response_as_written() {
    let asked = marker([2, 2, 2, 2, 2, 2], 7, 0x1234_5678);
    let answer = marker_response(&asked, SRC).expect("an answer");
    let text = tcpdump_reads(&[&asked, &answer]);
    // tcpdump 4.99 names the request's TLV and its fields; the response's type (0x02, Marker
    // Response Information) it does not name, so its bytes are read off its hex dump: the
    // requester's port, system and transaction id, then the pad.
    for line in [
        "02:02:02:02:02:02 > 01:80:c2:00:00:02, ethertype Slow Protocols (0x8809), length 124: MARKERv1, length 110",
        "Marker Information TLV (0x01), length 16",
        "Request System 02:02:02:02:02:02, Request Port 7, Request Transaction ID 0x12345678",
        "00:00:01:01:01:01 > 01:80:c2:00:00:02, ethertype Slow Protocols (0x8809), length 124: MARKERv1, length 110",
        "TLV (0x02), length 16",
        "0x0000:  0007 0202 0202 0202 1234 5678 0000",
        "Terminator TLV (0x00), length 0",
    ] {
        assert!(text.contains(line), "tcpdump did not say {line:?}:\n{text}");
    }
}
