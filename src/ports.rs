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
    let lines = probe(&interfaces()?);
    if args.json {
        return print_json(&lines);
    }
    let mut text = format!(
        "{:<16} {:<17} {:>5} {:<10} {:>7} {:>6}  backends\n",
        "port", "mac", "mtu", "driver", "link", "queues"
    );
    for l in &lines {
        let backends: Vec<String> = l
            .backends
            .iter()
            .map(|(b, why)| {
                if why == "ok" {
                    b.clone()
                } else {
                    format!("{b}: {why}")
                }
            })
            .collect();
        text.push_str(&format!(
            "{:<16} {:<17} {:>5} {:<10} {:>7} {:>6}  {}\n",
            l.name,
            l.mac.as_deref().unwrap_or("-"),
            l.mtu,
            l.driver.as_deref().unwrap_or("-"),
            l.link_mbps
                .map_or("n/a".to_string(), |m| format!("{}G", m as f64 / 1000.0)),
            l.queues,
            backends.join("; ")
        ));
    }
    print(&text)
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
