//! `linerate tx --pcap`: the frames written are decoded by tcpdump, a decoder we did not write.

mod common;

use std::collections::BTreeSet;

use common::{after, frame_len, linerate_ok, linerate_usage_error, pcap_frames, tcpdump};

#[test]
fn a_thousand_source_ports_with_correct_checksums() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("out.pcap");
    let out = linerate_ok(&[
        "tx",
        "--pcap",
        pcap.to_str().unwrap(),
        "--count",
        "1000",
        "--vary",
        "src-port:inc:1000-1999",
    ]);
    assert!(out.contains("sent      1000 frames"), "{out}");
    let frames = tcpdump(&pcap);
    assert_eq!(frames.len(), 1000);
    let mut ports = BTreeSet::new();
    for f in &frames {
        assert_eq!(frame_len(f), 60, "{f}");
        assert!(f.contains("[udp sum ok]"), "{f}");
        assert!(!f.contains("bad cksum"), "{f}");
        assert!(f.contains("02:00:00:00:00:01 > ff:ff:ff:ff:ff:ff"), "{f}");
        let src = after(f, "198.18.0.1.").unwrap();
        ports.insert(src.parse::<u16>().unwrap());
    }
    assert_eq!(ports, (1000..=1999).collect());
}

#[test]
fn tcp_over_ipv6_in_a_vlan_with_every_destination() {
    let frames = pcap_frames(&[
        "-n",
        "64",
        "--proto",
        "tcp",
        "--ipv6",
        "--vlan",
        "100",
        "--size",
        "128",
        "--tcp-flags",
        "SA",
        "--vary",
        "dst-ip:inc:2001:2::1-2001:2::20",
    ]);
    assert_eq!(frames.len(), 64);
    let mut dsts = BTreeSet::new();
    for f in &frames {
        assert_eq!(frame_len(f), 124, "{f}");
        assert!(f.contains("vlan 100"), "{f}");
        assert!(f.contains("Flags [S.]"), "{f}");
        assert!(f.contains("(correct)"), "{f}");
        let dst = after(f, " > 2001:2::").unwrap();
        dsts.insert(dst.split('.').next().unwrap().to_owned());
    }
    assert_eq!(dsts.len(), 32);
}

#[test]
fn icmp_echo_over_both_ip_versions() {
    let frames = pcap_frames(&["-n", "10", "--proto", "icmp"]);
    assert_eq!(frames.len(), 10);
    let ids: BTreeSet<_> = frames
        .iter()
        .map(|f| after(f, ", id ").unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 10, "the seed stream has ten distinct frames");
    assert!(
        frames
            .iter()
            .all(|f| f.contains("ICMP echo request") && !f.contains("bad cksum"))
    );
    let frames = pcap_frames(&["-n", "3", "--proto", "icmp", "--ipv6", "--size", "70"]);
    assert_eq!(frames.len(), 3);
    assert!(
        frames
            .iter()
            .all(|f| f.contains("[icmp6 sum ok]") && frame_len(f) == 66),
        "{frames:?}"
    );
}

#[test]
fn random_addresses_stay_in_range_and_keep_checksums() {
    let frames = pcap_frames(&[
        "-n",
        "2000",
        "--vary",
        "src-ip:random:10.0.0.1-10.0.0.8",
        "--vary",
        "ttl:dec:1-3",
    ]);
    assert_eq!(frames.len(), 2000);
    let mut sources = BTreeSet::new();
    let mut ttls = BTreeSet::new();
    for f in &frames {
        assert!(
            f.contains("[udp sum ok]") && !f.contains("bad cksum"),
            "{f}"
        );
        sources.insert(
            after(f, "length 46) ")
                .unwrap()
                .rsplit_once('.')
                .unwrap()
                .0
                .to_owned(),
        );
        ttls.insert(after(f, "ttl ").unwrap().trim_end_matches(',').to_owned());
    }
    let expected: BTreeSet<_> = (1..=8).map(|i| format!("10.0.0.{i}")).collect();
    assert_eq!(sources, expected);
    assert_eq!(
        ttls,
        ["1", "2", "3"].into_iter().map(String::from).collect()
    );
}

#[test]
fn size_modes_put_the_asked_sizes_on_the_wire() {
    let dir = tempfile::tempdir().unwrap();
    let frames = pcap_frames(&["-n", "120", "--size-mode", "imix"]);
    let count = |len| frames.iter().filter(|f| frame_len(f) == len).count();
    assert_eq!((count(60), count(590), count(1514)), (70, 40, 10));
    assert!(frames.iter().all(|f| f.contains("[udp sum ok]")));

    let inc = dir.path().join("inc.pcap");
    linerate_ok(&[
        "tx",
        "-q",
        "--pcap",
        inc.to_str().unwrap(),
        "-n",
        "6",
        "--size-mode",
        "inc:64-68:2",
    ]);
    let lens: Vec<_> = tcpdump(&inc).iter().map(|f| frame_len(f)).collect();
    assert_eq!(lens, vec![60, 62, 64, 60, 62, 64]);
}

#[test]
fn a_stream_file_sends_its_sequence_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("seq.toml");
    std::fs::write(
        &toml,
        r#"
[[stream]]
name = "first"
src-port = 1
count = 100
next = "next"

[[stream]]
name = "second"
src-port = 2
count = 200
next = "next"

[[stream]]
name = "third"
src-port = 3
count = 300
size = 128
next = "stop"
"#,
    )
    .unwrap();
    let pcap = dir.path().join("seq.pcap");
    linerate_ok(&[
        "tx",
        "-q",
        "--pcap",
        pcap.to_str().unwrap(),
        "--stream",
        toml.to_str().unwrap(),
    ]);
    let ports: Vec<String> = tcpdump(&pcap)
        .iter()
        .map(|f| after(f, "198.18.0.1.").unwrap().to_owned())
        .collect();
    assert_eq!(ports.len(), 600);
    assert!(ports[..100].iter().all(|p| p == "1"));
    assert!(ports[100..300].iter().all(|p| p == "2"));
    assert!(ports[300..].iter().all(|p| p == "3"));
}

#[test]
fn json_report_counts_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("j.pcap");
    let out = linerate_ok(&[
        "tx",
        "--json",
        "-q",
        "--pcap",
        pcap.to_str().unwrap(),
        "-n",
        "777",
        "--size",
        "100",
    ]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["completed"], 777);
    assert_eq!(json["bytes"], 777 * 96);
    assert_eq!(json["backend"], "pcap");
    assert_eq!(tcpdump(&pcap).len(), 777);
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("x.pcap");
    let p = pcap.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--src-mac", "02:00:00:00:01"], "02:00:00:00:01"),
        (&["--dst-ip", "198.18.0.300"], "198.18.0.300"),
        (&["--src-port", "70000"], "70000"),
        (&["--vary", "src-port:inc:2000-1000"], "END is below START"),
        (&["--vary", "colour:inc:1-2"], "colour"),
        (&["--size", "63"], "63"),
        (&["--size", "1519"], "1519"),
        (&["--size-mode", "zigzag"], "zigzag"),
        (&["--payload", "pattern:XYZ"], "XYZ"),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["tx", "--pcap", p, "-n", "1"];
        args.extend_from_slice(extra);
        let line = linerate_usage_error(&args);
        assert!(line.contains(needle), "{extra:?}: {line}");
        assert_eq!(line.lines().count(), 1, "{extra:?}: {line}");
    }
    let line = linerate_usage_error(&["tx", "--pcap", "/nonexistent-dir/out.pcap", "-n", "1"]);
    assert!(line.contains("/nonexistent-dir/out.pcap"), "{line}");
    let toml = dir.path().join("typo.toml");
    std::fs::write(&toml, "[[stream]]\nsize = 64\nsrc-prot = 5\n").unwrap();
    let line = linerate_usage_error(&["tx", "--pcap", p, "--stream", toml.to_str().unwrap()]);
    assert!(
        line.contains("src-prot") && line.contains("line 3"),
        "{line}"
    );
    let line = linerate_usage_error(&["tx", "--pcap", p]);
    assert!(line.contains("--count"), "{line}");
    let line = linerate_usage_error(&[
        "tx", "--null", "-n", "1", "--cores", "0,1", "--queues", "3,3",
    ]);
    assert!(line.contains("queue 3 is given twice"), "{line}");
}

#[test]
fn the_shipped_examples_run() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let dir_tmp = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            // As shipped, and signed as `tx --rx` signs it (each frame must hold the signature).
            let text = std::fs::read_to_string(&path).unwrap();
            let signed = dir_tmp.path().join(path.file_name().unwrap());
            let lines: Vec<&str> = text
                .lines()
                .flat_map(|l| match l {
                    "[[stream]]" => vec![l, "signature = true"],
                    _ => vec![l],
                })
                .collect();
            std::fs::write(&signed, lines.join("\n")).unwrap();
            for file in [&path, &signed] {
                let out = linerate_ok(&[
                    "tx",
                    "--null",
                    "-q",
                    "--json",
                    "-n",
                    "64",
                    "--link-speed",
                    "10G",
                    "--stream",
                    file.to_str().unwrap(),
                ]);
                let report: serde_json::Value = serde_json::from_str(&out).unwrap();
                assert_eq!(report["completed"], 64, "{}", file.display());
            }
            seen += 1;
        }
    }
    assert!(seen >= 4, "examples/ holds {seen} stream files");
}

#[test]
fn a_refused_command_leaves_an_earlier_capture_alone() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("keep.pcap");
    let p = pcap.to_str().unwrap();
    linerate_ok(&["tx", "-q", "--pcap", p, "-n", "5"]);
    let before = std::fs::read(&pcap).unwrap();
    linerate_usage_error(&["tx", "--pcap", p, "--size", "63", "-n", "1"]);
    linerate_usage_error(&["tx", "--pcap", p]);
    assert_eq!(std::fs::read(&pcap).unwrap(), before);
}

#[test]
fn input_that_would_overflow_or_exhaust_memory_is_refused() {
    let cases: &[(&[&str], &str)] = &[
        (&["-n", "0"], "0"),
        (&["-d", "99999999999999999999s"], "longer than a year"),
        (&["--size-mode", "imix:64x1000000000"], "4096"),
        (
            &["--burst", "10000000000", "--bursts-per-sec", "1"],
            "burst",
        ),
        (&["--vary", "byte@20/8:inc:0-18446744073709551615"], "2^64"),
        (&["--rate", "1e13"], "too high"),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["tx", "--null", "-n", "1"];
        if extra[0] == "-n" || extra[0] == "-d" {
            args.truncate(2);
        }
        args.extend_from_slice(extra);
        let line = linerate_usage_error(&args);
        assert!(line.contains(needle), "{extra:?}: {line}");
    }
}

#[test]
fn a_pcap_file_is_never_written_through_a_symbolic_link() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let link = dir.path().join("out.pcap");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let line = linerate_usage_error(&["tx", "-q", "--pcap", link.to_str().unwrap(), "-n", "3"]);
    assert!(line.contains("symbolic link"), "{line}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
}

/// Issue 25: a capture every reader accepts. The file is in the host's byte order (pypcapfile
/// read 0 frames of the big-endian files linerate wrote before), and tcpdump, dpkt, scapy and
/// pypcapfile all read the same 21 frames, each decoded by scapy down to UDP.
#[test]
fn every_reader_reads_the_same_frames_of_a_tx_capture() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("out.pcap");
    linerate_ok(&[
        "tx",
        "--pcap",
        pcap.to_str().unwrap(),
        "-n",
        "21",
        "--size",
        "128",
    ]);
    let bytes = std::fs::read(&pcap).unwrap();
    let magic = u32::from_ne_bytes(bytes[..4].try_into().unwrap());
    assert_eq!(magic, 0xa1b2_3c4d, "a nanosecond pcap in host order");
    // tx --pcap writes what the port hands the NIC: the frame without its FCS.
    let tcpdump_lens: Vec<usize> = tcpdump(&pcap).iter().map(|f| frame_len(f)).collect();
    assert_eq!(tcpdump_lens, vec![124; 21]);
    let Some(read) = common::python_readers(&pcap) else {
        return;
    };
    for reader in ["dpkt", "scapy", "pypcapfile"] {
        assert_eq!(
            read[reader],
            serde_json::json!(vec![124; 21]),
            "{reader}: {read}"
        );
    }
    for layers in read["scapy_layers"].as_array().unwrap() {
        assert!(
            layers.as_str().unwrap().starts_with("Ether / IP / UDP"),
            "{layers}"
        );
    }
}
