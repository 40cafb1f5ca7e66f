//! Tunnelled streams end to end: three flows (VXLAN with an incrementing inner port, GRE with a
//! key and a checksum over an incrementing inner address, two MPLS labels) written to a pcap and
//! decoded by scapy, and sent through a lab with `--rx`: every flow counted exactly.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Frames each flow sends.
const FLOWS: [(&str, u64); 3] = [("vxlan", 4000), ("gre", 2000), ("mpls", 1000)];

fn three_tunnels(dir: &Path) -> PathBuf {
    let file = dir.join("tunnels.toml");
    std::fs::write(
        &file,
        r#"
mode = "interleaved"
[[stream]]
name = "vxlan"
signature = true
rate = "20k"
count = 4000
size = 128
encap = "ethernet/ipv4:src=192.0.2.1,dst=192.0.2.2/udp/vxlan:vni=100"
vary = ["src-port:inc:1000-1099"]
[[stream]]
name = "gre"
signature = true
rate = "10k"
count = 2000
size = 128
encap = "ethernet/ipv4/gre:key=7,checksum=on"
vary = ["dst-ip:inc:10.0.0.1-10.0.0.20"]
[[stream]]
name = "mpls"
signature = true
rate = "5k"
count = 1000
size = 128
encap = "ethernet/mpls:label=100/mpls:label=200,tc=5"
"#,
    )
    .unwrap();
    file
}

fn names(frame: &Value) -> Vec<&str> {
    frame
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["layer"].as_str().unwrap())
        .collect()
}

fn field<'a>(frame: &'a Value, layer: usize, name: &str) -> &'a Value {
    &frame[layer]["fields"][name]
}

#[test]
fn tunnelled_flows_decode_in_scapy_with_every_checksum_valid() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("tunnels.pcap");
    let file = three_tunnels(dir.path());
    common::linerate_ok(&[
        "tx",
        "--pcap",
        pcap.to_str().unwrap(),
        "--stream",
        file.to_str().unwrap(),
        "-q",
    ]);
    let Some(frames) = common::scapy_layers(&pcap) else {
        return;
    };
    let mut seen = [0u64; 3];
    for (n, f) in frames.iter().enumerate() {
        for (i, layer) in f.as_array().unwrap().iter().enumerate() {
            let Some(c) = layer.get("checksum") else {
                continue;
            };
            // RFC 7348: the outer UDP checksum of VXLAN over IPv4 is sent as 0.
            let zero_before_vxlan = c["frame"] == 0 && f[i + 1]["layer"] == "VXLAN";
            assert!(
                c["frame"] == c["scapy"] || zero_before_vxlan,
                "frame {n}: {layer}"
            );
        }
        match names(f).as_slice() {
            // The inner frame's 4-byte FCS slot, past its IP packet: scapy's padding.
            [
                "Ether",
                "IP",
                "UDP",
                "VXLAN",
                "Ether",
                "IP",
                "UDP",
                "Raw",
                "Padding",
            ] => {
                assert_eq!(field(f, 2, "dport"), 4789);
                assert_eq!(field(f, 1, "dst"), "192.0.2.2");
                assert_eq!(field(f, 3, "vni"), 100);
                // 128 less the FCS, the outer headers, the inner Ethernet and its FCS slot.
                assert_eq!(field(f, 5, "len"), 128 - 4 - 50 - 14 - 4);
                assert_eq!(field(f, 6, "sport"), 1000 + seen[0] % 100, "frame {n}");
                seen[0] += 1;
            }
            ["Ether", "IP", "GRE", "IP", "UDP", "Raw"] => {
                assert_eq!(field(f, 2, "key"), 7);
                let dst = format!("10.0.0.{}", 1 + seen[1] % 20);
                assert_eq!(field(f, 3, "dst"), dst.as_str(), "frame {n}");
                seen[1] += 1;
            }
            ["Ether", "MPLS", "MPLS", "IP", "UDP", "Raw"] => {
                assert_eq!(
                    (field(f, 1, "label"), field(f, 1, "s")),
                    (&100.into(), &0.into())
                );
                assert_eq!(
                    (field(f, 2, "label"), field(f, 2, "cos")),
                    (&200.into(), &5.into())
                );
                assert_eq!(field(f, 2, "s"), 1);
                seen[2] += 1;
            }
            other => panic!("frame {n}: {other:?}"),
        }
    }
    assert_eq!(seen, FLOWS.map(|(_, n)| n));
}

#[cfg(target_os = "linux")]
#[test]
fn tunnelled_flows_arrive_whole_at_the_labs_receive_end() {
    if !common::root_or_skip("tunnelled flows with --rx on a lab") {
        return;
    }
    let lab = common::lab("tun", 1);
    let dir = tempfile::tempdir().unwrap();
    let file = three_tunnels(dir.path());
    let out = common::json(&common::linerate_ok(&[
        "tx",
        "-i",
        &lab.sender,
        "--stream",
        file.to_str().unwrap(),
        "--rx",
        "--json",
        "--cores",
        "0",
    ]));
    let flows = out["rx"]["flows"].as_array().expect("rx flows");
    assert_eq!(flows.len(), 3, "{out}");
    for (f, (name, n)) in flows.iter().zip(FLOWS) {
        assert_eq!(f["name"], name);
        assert_eq!(f["tx_frames"], n, "{f}");
        assert_eq!(f["rx_frames"], n, "{f}");
        assert_eq!(f["lost"], 0, "{f}");
        assert_eq!(f["duplicates"], 0, "{f}");
        assert!(f["latency"]["min"].as_u64().unwrap() > 0, "{f}");
    }
    assert_eq!(out["rx"]["other"]["other_frames"], 0);
}
