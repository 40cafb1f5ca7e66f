//! ARP streams end to end: a gratuitous-ARP storm from a stream file and a reply from the CLI
//! flags written by `tx --pcap` and decoded by scapy field by field; a signed ARP stream sent
//! through a lab with `--rx`, its signature read from the padding.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The ARP layer of a decoded frame, after checking the layers before it.
fn arp_layer<'a>(f: &'a Value, before: &[&str]) -> &'a Value {
    let layers = f.as_array().unwrap();
    for (i, name) in before.iter().enumerate() {
        assert_eq!(layers[i]["layer"], *name, "{f}");
    }
    let arp = &layers[before.len()];
    assert_eq!(arp["layer"], "ARP", "{f}");
    let fields = &arp["fields"];
    for (name, want) in [("hwtype", 1), ("ptype", 0x0800), ("hwlen", 6), ("plen", 4)] {
        assert_eq!(fields[name], want, "{name}: {f}");
    }
    fields
}

fn storm(dir: &Path) -> PathBuf {
    let file = dir.join("storm.toml");
    std::fs::write(
        &file,
        r#"
[[stream]]
name = "garp"
proto = "arp"
count = 600
src-mac = "02:00:00:00:00:0a"
dst-mac = "ff:ff:ff:ff:ff:ff"
signature = true
vary = ["arp-sender-ip:inc:10.9.0.1-10.9.0.250", "arp-target-ip:inc:10.9.0.1-10.9.0.250", "arp-sender-mac:inc:02:00:00:00:01:00-02:00:00:00:01:ff"]
"#,
    )
    .unwrap();
    file
}

#[test]
fn a_gratuitous_arp_storm_decodes_in_scapy_address_by_address() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("storm.pcap");
    let file = storm(dir.path());
    let p = pcap.to_str().unwrap();
    common::linerate_ok(&["tx", "--pcap", p, "--stream", file.to_str().unwrap(), "-q"]);
    let Some(frames) = common::scapy_layers(&pcap) else {
        return;
    };
    assert_eq!(frames.len(), 600);
    for (k, f) in frames.iter().enumerate() {
        let a = arp_layer(f, &["Ether"]);
        let ip = format!("10.9.0.{}", 1 + k % 250);
        assert_eq!(a["op"], 1, "frame {k}");
        assert_eq!(a["psrc"], ip.as_str(), "frame {k}");
        assert_eq!(a["pdst"], ip.as_str(), "frame {k}");
        assert_eq!(
            a["hwsrc"],
            format!("02:00:00:00:01:{:02x}", k % 256),
            "frame {k}"
        );
        assert_eq!(a["hwdst"], "00:00:00:00:00:00", "frame {k}");
        assert_eq!(f[0]["fields"]["dst"], "ff:ff:ff:ff:ff:ff");
        assert_eq!(f[0]["fields"]["type"], 0x0806);
    }
}

#[test]
fn a_reply_from_the_cli_flags_decodes_in_scapy() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("reply.pcap");
    let p = pcap.to_str().unwrap();
    common::linerate_ok(&[
        "tx",
        "--pcap",
        p,
        "--count",
        "3",
        "--size",
        "100",
        "--vlan",
        "12",
        "--proto",
        "arp",
        "--arp-op",
        "reply",
        "--src-mac",
        "02:00:00:00:00:0a",
        "--dst-mac",
        "02:00:00:00:00:0b",
        "--arp-sender-ip",
        "192.0.2.1",
        "--arp-target-ip",
        "192.0.2.2",
        "-q",
    ]);
    let Some(frames) = common::scapy_layers(&pcap) else {
        return;
    };
    assert_eq!(frames.len(), 3);
    for f in &frames {
        assert_eq!(f[1]["fields"]["vlan"], 12, "{f}");
        let a = arp_layer(f, &["Ether", "Dot1Q"]);
        assert_eq!(a["op"], 2);
        assert_eq!(a["hwsrc"], "02:00:00:00:00:0a");
        assert_eq!(a["psrc"], "192.0.2.1");
        assert_eq!(a["hwdst"], "02:00:00:00:00:0b");
        assert_eq!(a["pdst"], "192.0.2.2");
    }
    // 100 bytes with the FCS (the pcap holds them without it): Ethernet, tag and ARP (46),
    // then padding to the size asked.
    let lens: Vec<usize> = common::tcpdump(&pcap)
        .iter()
        .map(|l| common::frame_len(l))
        .collect();
    assert_eq!(lens, [96, 96, 96]);
}

#[cfg(target_os = "linux")]
#[test]
fn a_signed_arp_storm_is_counted_by_the_labs_receive_end() {
    if !common::root_or_skip("an ARP stream with --rx on a lab") {
        return;
    }
    let lab = common::lab("arp", 1);
    let dir = tempfile::tempdir().unwrap();
    let file = storm(dir.path());
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
    assert_eq!(flows.len(), 1, "{out}");
    let f = &flows[0];
    assert_eq!(f["tx_frames"], 600, "{f}");
    assert_eq!(f["rx_frames"], 600, "{f}");
    assert_eq!(f["lost"], 0, "{f}");
    // Issue 41: without --rx the sink, which passes ARP to its stack uncounted, reads it all
    // as lost; the report says why and what to give.
    let out = common::linerate(&[
        "tx",
        "-i",
        &lab.sender,
        "--stream",
        file.to_str().unwrap(),
        "--json",
        "--cores",
        "0",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report = common::json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(report["sink"]["lost"], 600, "{report}");
    assert!(
        stderr.contains("the frames are ARP") && stderr.contains("give --rx"),
        "{stderr}"
    );
}
