//! `linerate ports`: the interfaces here and which backends can send on each.

use anyhow::Result;
use linerate_port::PortInfo;
use serde::Serialize;

use crate::output::{print, print_json};
use linerate_cli::PortsArgs;

#[derive(Debug, Serialize)]
struct PortLine {
    name: String,
    mac: Option<String>,
    mtu: u32,
    driver: Option<String>,
    link_mbps: Option<u64>,
    queues: u32,
    /// Backend name → "ok" or why it cannot send here.
    backends: Vec<(String, String)>,
}

impl PortLine {
    fn new(info: &PortInfo) -> Self {
        Self {
            name: info.name.clone(),
            mac: info.mac.map(|m| linerate_wire::format_mac(&m)),
            mtu: info.mtu,
            driver: info.driver.clone(),
            link_mbps: info.link_speed.map(|s| s.mbps()),
            queues: info.queues,
            backends: Vec::new(),
        }
    }
}

pub fn run(args: &PortsArgs) -> Result<()> {
    let mut lines = probe(&interfaces()?);
    privileges(&mut lines, caps::effective());
    if args.json {
        return print_json(&lines);
    }
    print(&table(&lines))
}

/// The table: one short row per port, a column per backend (`ok`, `✗` or `root`, with a note
/// number), and under it the notes, each once with the ports it applies to. `--json` holds every
/// reason in full.
fn table(lines: &[PortLine]) -> String {
    let mut backends: Vec<&str> = Vec::new();
    for l in lines {
        for (b, _) in &l.backends {
            if !backends.contains(&b.as_str()) {
                backends.push(b);
            }
        }
    }
    // Notes in order of first use: (backend, reason with the port's name as <port>, ports).
    let mut notes: Vec<(String, String, Vec<String>)> = Vec::new();
    let mut rows: Vec<Vec<String>> = vec![
        ["port", "mac", "mtu", "driver", "link", "queues"]
            .iter()
            .map(|h| h.to_string())
            .chain(backends.iter().map(|b| b.to_string()))
            .collect(),
    ];
    for l in lines {
        let mut row = vec![
            l.name.clone(),
            l.mac.clone().unwrap_or_else(|| "-".into()),
            if l.mtu == 0 {
                "-".into()
            } else {
                l.mtu.to_string()
            },
            l.driver.clone().unwrap_or_else(|| "-".into()),
            l.link_mbps.map_or_else(|| "-".into(), link),
            l.queues.to_string(),
        ];
        for b in &backends {
            let cell = match l.backends.iter().find(|(name, _)| name == b) {
                None => "-".to_owned(),
                Some((_, why)) if why == "ok" => "ok".to_owned(),
                Some((_, why)) => {
                    let (word, reason) = match why.strip_prefix("ok (") {
                        Some(rest) => ("ok", rest.strip_suffix(')').unwrap_or(rest).to_owned()),
                        None if why.starts_with(NEEDS_PRIVILEGE) => ("root", why.clone()),
                        None => ("✗", why.clone()),
                    };
                    let reason = generic(&reason, &l.name);
                    let n = match notes.iter().position(|(nb, r, _)| nb == b && *r == reason) {
                        Some(i) => {
                            notes[i].2.push(l.name.clone());
                            i + 1
                        }
                        None => {
                            notes.push((b.to_string(), reason, vec![l.name.clone()]));
                            notes.len()
                        }
                    };
                    format!("{word}{}", superscript(n))
                }
            };
            row.push(cell);
        }
        rows.push(row);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    // Numbers right-aligned, words left.
    let right = |c: usize| c == 2 || c == 5;
    let mut text = String::new();
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let pad = " ".repeat(widths[c] - cell.chars().count());
            if right(c) {
                line.push_str(&pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&pad);
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    if !notes.is_empty() {
        text.push('\n');
    }
    for (i, (backend, reason, ports)) in notes.iter().enumerate() {
        text.push_str(&format!(
            "{} {backend} on {}: {reason}\n",
            superscript(i + 1),
            ports.join(", ")
        ));
    }
    text
}

/// A link speed in Mbit/s, short: 100M, 2.5G, 10G.
fn link(mbps: u64) -> String {
    if mbps < 1000 {
        format!("{mbps}M")
    } else {
        format!("{}G", mbps as f64 / 1000.0)
    }
}

/// `n` in superscript digits, the note mark.
fn superscript(n: usize) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    n.to_string()
        .chars()
        .map(|d| DIGITS[d.to_digit(10).unwrap_or(0) as usize])
        .collect()
}

/// `reason` with the port's own name (as a whole word) put as `<port>`, so one note serves every
/// port it applies to.
fn generic(reason: &str, port: &str) -> String {
    if port.is_empty() {
        return reason.to_owned();
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-');
    let mut out = String::new();
    let mut rest = reason;
    while let Some(at) = rest.find(port) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + port.len()..].chars().next();
        out.push_str(&rest[..at]);
        if word(before) || word(after) {
            out.push_str(port);
        } else {
            out.push_str("<port>");
        }
        rest = &rest[at + port.len()..];
    }
    out.push_str(rest);
    out
}

/// How a backend this process lacks the privileges for is marked (the start of its reason).
const NEEDS_PRIVILEGE: &str = "needs root";

use linerate_port::caps::{
    self, BPF as CAP_BPF, NET_ADMIN as CAP_NET_ADMIN, NET_RAW as CAP_NET_RAW,
};

/// The capabilities each backend needs to send: AF_XDP a raw socket and, where the driver
/// needs one, an XDP program; live its XDP program and `BPF_PROG_RUN`; AF_PACKET a raw socket.
/// CAP_SYS_ADMIN stands for CAP_BPF, as on kernels before 5.8.
fn needs(backend: &str) -> &'static [u32] {
    match backend {
        "afxdp" => &[CAP_NET_RAW, CAP_NET_ADMIN, CAP_BPF],
        "live" => &[CAP_NET_ADMIN, CAP_BPF],
        "afpacket" => &[CAP_NET_RAW],
        _ => &[],
    }
}

fn cap_name(cap: u32) -> &'static str {
    match cap {
        CAP_NET_ADMIN => "CAP_NET_ADMIN",
        CAP_NET_RAW => "CAP_NET_RAW",
        CAP_BPF => "CAP_BPF",
        _ => "CAP_SYS_ADMIN",
    }
}

/// Marks each backend this process could not use for want of capabilities (`caps`, the
/// effective set; None when unknown: left as probed) — a probe that succeeds without them
/// (an AF_XDP socket opens before anything is bound) is no promise that a run will.
fn privileges(lines: &mut [PortLine], caps: Option<u64>) {
    let Some(caps) = caps else { return };
    let has = |cap: u32| caps::holds(caps, cap);
    for line in lines {
        for (backend, why) in &mut line.backends {
            let missing: Vec<&str> = needs(backend)
                .iter()
                .filter(|&&c| !has(c))
                .map(|&c| cap_name(c))
                .collect();
            // A reason of its own that is not about privileges (an interface down) fails for
            // root too: it stays.
            if missing.is_empty() || (why != "ok" && !about_privilege(why)) {
                continue;
            }
            // CAP_NET_RAW alone can be granted to the binary for good.
            let setcap = if missing == ["CAP_NET_RAW"] {
                ", or grant it once with `setcap cap_net_raw+ep $(command -v linerate)`"
            } else {
                ""
            };
            *why = format!(
                "{NEEDS_PRIVILEGE} (this process lacks {}): run with sudo{setcap}",
                missing.join(", ")
            );
        }
    }
}

/// A backend's refusal that privileges would lift (its own words: "permission denied: run as
/// root", "needs CAP_NET_RAW: run with sudo").
fn about_privilege(why: &str) -> bool {
    ["permission denied", "CAP_", "run as root", "sudo"]
        .iter()
        .any(|w| why.contains(w))
}

fn interfaces() -> Result<Vec<String>> {
    let mut names: Vec<String> = nix::ifaddrs::getifaddrs()?
        .map(|a| a.interface_name)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

#[cfg(target_os = "linux")]
fn probe(names: &[String]) -> Vec<PortLine> {
    names
        .iter()
        .map(|name| {
            let xsk = linerate_afxdp::XskPort::open(name, Default::default());
            // The facts come from the shared description, so they show even where AF_XDP refuses.
            let mut line = match linerate_xdp::interface(name) {
                Ok(i) => PortLine::new(&i.port_info("afxdp", i.bindable_queues())),
                Err(_) => PortLine {
                    name: name.clone(),
                    mac: None,
                    mtu: 0,
                    driver: None,
                    link_mbps: None,
                    queues: 0,
                    backends: Vec::new(),
                },
            };
            line.backends.push((
                "afxdp".into(),
                xsk.as_ref().map_or_else(|e| e.to_string(), |_| "ok".into()),
            ));
            line.backends.push((
                "live".into(),
                linerate_live::LivePort::open(name).map_or_else(|e| e.to_string(), |_| "ok".into()),
            ));
            line.backends.push((
                "afpacket".into(),
                linerate_afpacket::AfPacketPort::open(name, Default::default())
                    .map_or_else(|e| e.to_string(), |_| "ok".into()),
            ));
            line
        })
        .collect()
}

#[cfg(any(target_os = "macos", target_os = "freebsd"))]
fn probe(names: &[String]) -> Vec<PortLine> {
    use linerate_port::Port;
    names
        .iter()
        .map(|name| match linerate_bpfdev::open(name) {
            Ok(p) => {
                let mut line = PortLine::new(p.info());
                line.backends.push((
                    "bpf".into(),
                    format!("ok ({})", linerate_bpfdev::QUEUES_NOTE),
                ));
                line
            }
            Err(e) => PortLine {
                name: name.clone(),
                mac: None,
                mtu: 0,
                driver: None,
                link_mbps: None,
                queues: 0,
                backends: vec![("bpf".into(), e.to_string())],
            },
        })
        .collect()
}

#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "freebsd")))]
fn probe(_names: &[String]) -> Vec<PortLine> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(name: &str, backends: &[(&str, &str)]) -> PortLine {
        PortLine {
            name: name.into(),
            mac: Some("02:fc:00:00:00:01".into()),
            mtu: 1500,
            driver: Some("veth".into()),
            link_mbps: Some(10_000),
            queues: 2,
            backends: backends
                .iter()
                .map(|(b, w)| (b.to_string(), w.to_string()))
                .collect(),
        }
    }

    fn eth0_ifb0() -> Vec<PortLine> {
        vec![
            port(
                "eth0",
                &[
                    ("afxdp", "ok"),
                    (
                        "live",
                        "eth0 does not support XDP transmit (ndo_xdp_xmit): use the afxdp backend",
                    ),
                    ("afpacket", "ok"),
                ],
            ),
            port(
                "ifb0",
                &[
                    (
                        "afxdp",
                        "interface ifb0 is down: bring it up with `ip link set ifb0 up`",
                    ),
                    (
                        "live",
                        "ifb0 does not support XDP transmit (ndo_xdp_xmit): use the afxdp backend",
                    ),
                    (
                        "afpacket",
                        "interface ifb0 is down: bring it up with `ip link set ifb0 up`",
                    ),
                ],
            ),
        ]
    }

    #[test]
    fn a_port_is_one_short_row_and_each_reason_one_note() {
        let text = table(&eth0_ifb0());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "port  mac                 mtu  driver  link  queues  afxdp  live  afpacket"
        );
        assert_eq!(
            lines[1],
            "eth0  02:fc:00:00:00:01  1500  veth    10G        2  ok     ✗¹    ok"
        );
        assert_eq!(
            lines[2],
            "ifb0  02:fc:00:00:00:01  1500  veth    10G        2  ✗²     ✗¹    ✗³"
        );
        assert_eq!(lines[3], "");
        assert_eq!(
            lines[4],
            "¹ live on eth0, ifb0: <port> does not support XDP transmit (ndo_xdp_xmit): use the afxdp backend"
        );
        assert_eq!(
            lines[5],
            "² afxdp on ifb0: interface <port> is down: bring it up with `ip link set <port> up`"
        );
        assert!(lines[6].starts_with("³ afpacket on ifb0: "), "{text}");
        assert_eq!(lines.len(), 7, "{text}");
        for l in &lines[..3] {
            assert!(l.chars().count() < 100, "a long row: {l}");
        }
    }

    #[test]
    fn without_privileges_no_backend_is_offered_as_usable() {
        let mut lines = eth0_ifb0();
        privileges(&mut lines, Some(0));
        let text = table(&lines);
        let row = text.lines().nth(1).unwrap();
        assert!(row.ends_with("root¹  ✗²    root³"), "{text}");
        assert!(!row.contains("ok"), "{text}");
        assert!(
            text.contains("¹ afxdp on eth0: needs root (this process lacks CAP_NET_RAW, CAP_NET_ADMIN, CAP_BPF): run with sudo"),
            "{text}"
        );
        assert!(
            text.contains("³ afpacket on eth0: needs root (this process lacks CAP_NET_RAW)"),
            "{text}"
        );
        // A refusal for want of privileges reads as the others do.
        let mut lines = vec![port(
            "lo",
            &[
                (
                    "live",
                    "loading the live transmit program: permission denied: run as root",
                ),
                (
                    "afpacket",
                    "AF_PACKET on lo needs CAP_NET_RAW: run with sudo",
                ),
            ],
        )];
        privileges(&mut lines, Some(0));
        assert!(
            table(&lines)
                .lines()
                .nth(1)
                .unwrap()
                .ends_with("root¹  root²")
        );
        let mut lines = eth0_ifb0();
        privileges(&mut lines, Some(0));
        // What fails for every user keeps its own reason.
        assert!(
            text.contains("afxdp on ifb0: interface <port> is down"),
            "{text}"
        );
        // The JSON keeps every reason whole.
        assert!(lines[0].backends[0].1.starts_with("needs root"));

        // Root (or the three capabilities, CAP_SYS_ADMIN standing for CAP_BPF) changes nothing.
        for caps in [
            u64::MAX,
            1 << CAP_NET_RAW | 1 << CAP_NET_ADMIN | 1 << caps::SYS_ADMIN,
        ] {
            let mut lines = eth0_ifb0();
            privileges(&mut lines, Some(caps));
            assert_eq!(lines[0].backends[0].1, "ok");
            assert_eq!(lines[0].backends[2].1, "ok");
        }
        // CAP_NET_RAW alone: AF_PACKET, not AF_XDP.
        let mut lines = eth0_ifb0();
        privileges(&mut lines, Some(1 << CAP_NET_RAW));
        assert_eq!(lines[0].backends[2].1, "ok");
        assert!(
            lines[0].backends[0]
                .1
                .contains("lacks CAP_NET_ADMIN, CAP_BPF")
        );
    }

    #[test]
    fn a_ports_name_is_generic_only_as_a_whole_word() {
        assert_eq!(
            generic("lo does not load on lo: `ip link set lo up`", "lo"),
            "<port> does not load on <port>: `ip link set <port> up`"
        );
        assert_eq!(generic("eth10 is not eth1", "eth1"), "eth10 is not <port>");
        assert_eq!(superscript(12), "¹²");
        assert_eq!(link(100), "100M");
        assert_eq!(link(2500), "2.5G");
    }

    #[test]
    fn an_ok_with_a_remark_keeps_ok_and_moves_the_remark_to_a_note() {
        let text = table(&[port("en0", &[("bpf", "ok (one queue)")])]);
        assert!(text.lines().nth(1).unwrap().ends_with("ok¹"), "{text}");
        assert!(text.contains("¹ bpf on en0: one queue"), "{text}");
    }
}
