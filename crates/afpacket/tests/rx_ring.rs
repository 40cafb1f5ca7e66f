//! The receive ring on a veth pair of a namespace of its own (root): frames sent by
//! `sendmmsg` batches from one end are read from the other end's ring in order, byte for byte,
//! round after round past the ring's size, a tagged frame seen untagged with its VLAN said, a
//! frame of stacked tags seen with its inner tag taken out on request, and a frame longer than the ring's frames seen cut with its whole length said. The namespace goes on drop, panic or not.
#![cfg(target_os = "linux")]

use std::os::fd::OwnedFd;
use std::process::Command;
use std::time::{Duration, Instant};

use linerate_afpacket::RxRing;
use linerate_lab::{root_or_skip, unique_name};

const ETHERTYPE: u16 = 0x88B5;

struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn ip(args: &[&str]) {
    let ok = Command::new("ip").args(args).status().expect("run ip");
    assert!(ok.success(), "ip {args:?}");
}

/// A packet socket on `iface` of the namespace, for every protocol.
fn socket(ns: &str, iface: &str) -> OwnedFd {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).expect("open netns");
    let iface = iface.to_owned();
    std::thread::spawn(move || {
        linerate_sys::enter_netns(&file).expect("enter netns");
        let ifindex = linerate_sys::if_index(&iface).expect("ifindex");
        let proto = (libc::ETH_P_ALL as u16).to_be();
        let fd = linerate_sys::raw_socket(libc::AF_PACKET, i32::from(proto)).expect("socket");
        // SAFETY: sockaddr_ll is plain integers; all-zero is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = proto;
        addr.sll_ifindex = ifindex as i32;
        linerate_sys::bind(&fd, &addr).expect("bind");
        fd
    })
    .join()
    .unwrap()
}

/// Frame `seq`: broadcast, the local experimental EtherType, its number, then bytes of it, 60
/// to 1514 bytes long as `seq` goes.
fn frame(seq: u32) -> Vec<u8> {
    frame_of(seq, 60 + (seq as usize * 37) % (1514 - 60 + 1))
}

fn frame_of(seq: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
    f[14..18].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f[18..].iter_mut().enumerate() {
        *b = (seq as usize + i) as u8;
    }
    f
}

/// The next frame of ours from the ring, waiting up to a second; others are passed over.
fn next_ours(ring: &mut RxRing, fd: &OwnedFd) -> Option<(Vec<u8>, usize)> {
    next_tagged(ring, fd).map(|(bytes, len, _)| (bytes, len))
}

/// [`next_ours`] with the VLAN the kernel took off it.
fn next_tagged(ring: &mut RxRing, fd: &OwnedFd) -> Option<(Vec<u8>, usize, Option<u16>)> {
    let end = Instant::now() + Duration::from_secs(1);
    while Instant::now() < end {
        match ring.front() {
            Some(f) => {
                let ours = f.bytes.len() >= 14 && f.bytes[12..14] == ETHERTYPE.to_be_bytes();
                let got = ours.then(|| (f.bytes.to_vec(), f.len, f.vlan));
                ring.release();
                if got.is_some() {
                    return got;
                }
            }
            None => {
                linerate_sys::wait_readable(fd, Duration::from_millis(100)).expect("poll");
            }
        }
    }
    None
}

/// An untagged frame's VLAN, as the ring says it.
fn next_tagged_after_plain(tx: &OwnedFd, ring: &mut RxRing, rx: &OwnedFd) -> Option<u16> {
    assert_eq!(
        linerate_sys::send_frames(tx, &[&frame(6)]).expect("sendmmsg"),
        1
    );
    next_tagged(ring, rx).expect("the untagged frame").2
}

#[test]
fn frames_sent_in_batches_are_read_from_the_ring_in_order_byte_for_byte() {
    if !root_or_skip("a veth pair in a namespace") {
        return;
    }
    let ns = Netns(unique_name("rxr"));
    ip(&["netns", "add", &ns.0]);
    // No IPv6 on the pair: the kernel's own solicitations as the links come up would take
    // ring frames beside the test's.
    let off = Command::new("ip")
        .args(["netns", "exec", &ns.0, "sysctl", "-qw"])
        .args([
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ])
        .status()
        .expect("sysctl");
    assert!(off.success());
    ip(&[
        "-n", &ns.0, "link", "add", "rxa", "type", "veth", "peer", "name", "rxb",
    ]);
    for i in ["rxa", "rxb"] {
        ip(&["-n", &ns.0, "link", "set", i, "up"]);
    }
    let tx = socket(&ns.0, "rxa");
    let rx = socket(&ns.0, "rxb");
    // A ring of 64 frames and batches of 48 (room for a stray frame of the kernel's beside
    // them: a full ring drops what comes), so the run goes round it 31 times.
    let mut ring = RxRing::new(&rx, 64, 1514).expect("ring");
    let mut seq = 0u32;
    for _round in 0..41 {
        let frames: Vec<Vec<u8>> = (0..48).map(|i| frame(seq + i)).collect();
        let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        assert_eq!(linerate_sys::send_frames(&tx, &refs).expect("sendmmsg"), 48);
        for want in &frames {
            let (got, len) = next_ours(&mut ring, &rx).expect("a frame in the ring");
            assert_eq!((len, got.len()), (want.len(), want.len()));
            assert_eq!(&got, want, "frame {seq}");
            seq += 1;
        }
    }
    // A frame tagged for VLAN 100: the ring holds it untagged and says its VLAN.
    let plain = frame(5);
    let mut tagged = plain[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0x00, 100]);
    tagged.extend_from_slice(&plain[12..]);
    assert_eq!(
        linerate_sys::send_frames(&tx, &[&tagged]).expect("sendmmsg"),
        1
    );
    let (got, len, vlan) = next_tagged(&mut ring, &rx).expect("the tagged frame");
    assert_eq!((vlan, len), (Some(100), plain.len()));
    assert_eq!(got, plain);
    assert_eq!(next_tagged_after_plain(&tx, &mut ring, &rx), None);
    // Stacked tags (802.1ad 100 outside, 802.1Q 200 inside): the kernel takes the outer one
    // off and leaves the inner in the bytes; strip_tag takes that out, the addresses kept.
    let mut stacked = plain[..12].to_vec();
    stacked.extend_from_slice(&[0x88, 0xa8, 0x00, 100, 0x81, 0x00, 0x00, 200]);
    stacked.extend_from_slice(&plain[12..]);
    assert_eq!(
        linerate_sys::send_frames(&tx, &[&stacked]).expect("sendmmsg"),
        1
    );
    let end = Instant::now() + Duration::from_secs(1);
    let inner_tagged = |f: &linerate_afpacket::RxFrame| {
        f.bytes.len() >= 18
            && f.bytes[12..14] == [0x81, 0x00]
            && f.bytes[16..18] == ETHERTYPE.to_be_bytes()
    };
    loop {
        assert!(Instant::now() < end, "the stacked frame never came");
        match ring.front() {
            Some(f) if inner_tagged(&f) => break,
            Some(_) => ring.release(),
            None => {
                linerate_sys::wait_readable(&rx, Duration::from_millis(100)).expect("poll");
            }
        }
    }
    let f = ring.front().expect("the stacked frame");
    assert_eq!((f.vlan, f.len), (Some(100), plain.len() + 4));
    assert_eq!(f.bytes[14..16], [0x00, 200]);
    ring.strip_tag();
    let f = ring.front().expect("the stacked frame, stripped");
    assert_eq!((f.vlan, f.len), (Some(100), plain.len()));
    assert_eq!(f.bytes, &plain[..]);
    ring.release();
    assert_eq!(next_tagged_after_plain(&tx, &mut ring, &rx), None);
    // A frame longer than a small ring's frames: its start, and its whole length.
    drop(ring);
    let rx = socket(&ns.0, "rxb");
    let mut small = RxRing::new(&rx, 8, 200).expect("small ring");
    let long = frame_of(7, 1514);
    assert_eq!(
        linerate_sys::send_frames(&tx, &[&long]).expect("sendmmsg"),
        1
    );
    let (got, len) = next_ours(&mut small, &rx).expect("the long frame");
    assert_eq!(len, 1514);
    assert!(got.len() < 1514 && got.len() >= 200, "{}", got.len());
    assert_eq!(got[..], long[..got.len()]);
}
