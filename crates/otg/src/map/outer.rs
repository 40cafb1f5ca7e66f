//! Headers outside a tunnel: every header of a flow's `packet` before its last tunnel header
//! (`vxlan`, `gre`, `mpls`, `gtpv1`, or an IP header followed by another) becomes the stream's
//! `encap`; the headers after it are the stream's own, mapped as in a flow without a tunnel.
//! An outer field takes one value (patterns belong to the inner headers, which carry the flow),
//! but for the VNI of the innermost VXLAN header, which tells tunnels apart.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use linerate_stream::{Encap, OuterHeader, StreamSpec};
use linerate_wire::VlanTpid;

use super::Cx;
use super::pattern::{Kind, Pat};
use crate::model::*;

/// Whether `choice` at `i` is a tunnel: its own header, or IP carrying IP.
fn tunnel_at(choices: &[String], i: usize) -> bool {
    let ip = |c: &str| matches!(c, "ipv4" | "ipv6");
    match choices[i].as_str() {
        "vxlan" | "gre" | "mpls" | "gtpv1" => true,
        c if ip(c) => choices.get(i + 1).is_some_and(|n| ip(n)),
        _ => false,
    }
}

impl Cx {
    /// One value of an outer field; none when unset (or refused, which is recorded).
    pub(super) fn one(&mut self, path: &str, p: &Option<Pattern>, kind: Kind) -> Option<u128> {
        match self.pattern(path, p, kind)? {
            Pat::Value(v) => Some(v),
            Pat::Unset => None,
            Pat::Vary { .. } | Pat::List(_) => {
                self.refuse(
                    path,
                    "a header outside the tunnel takes one value per field: patterns go on the headers inside it",
                );
                None
            }
        }
    }

    /// Maps the headers before the last tunnel onto `spec.encap`; returns where the stream's
    /// own headers start (0: no tunnel), or None when something was refused.
    pub(super) fn encap(
        &mut self,
        path: &str,
        packet: &[FlowHeader],
        choices: &[String],
        spec: &mut StreamSpec,
    ) -> Option<usize> {
        let Some(last) = (0..choices.len()).rev().find(|&i| tunnel_at(choices, i)) else {
            return Some(0);
        };
        let before = self.refusals.len();
        let mut headers = Vec::new();
        let mut moving_vni = None;
        for (i, h) in packet[..=last].iter().enumerate() {
            let p = format!("{path}.packet[{i}]");
            self.rest(&p, &h.rest);
            let at = format!("{p}.{}", choices[i]);
            let next = choices.get(i + 1).map(String::as_str);
            let header = match choices[i].as_str() {
                "ethernet" => self.outer_ethernet(&at, h.ethernet.as_deref()),
                "vlan" => self.outer_vlan(&at, h.vlan.as_deref()),
                "ipv4" => self.outer_ipv4(&at, h.ipv4.as_deref()),
                "ipv6" => self.outer_ipv6(&at, h.ipv6.as_deref()),
                "udp" => self.outer_udp(&at, h.udp.as_deref()),
                "vxlan" => self
                    .vxlan(&at, h.vxlan.as_deref(), i == last)
                    .map(|(header, vni)| {
                        moving_vni = vni.map(|p| (format!("{at}.vni"), p));
                        header
                    }),
                "gre" => self.gre(&at, h.gre.as_deref()),
                "mpls" => self.mpls(&at, h.mpls.as_deref(), next == Some("mpls")),
                "gtpv1" => self.gtpv1(&at, h.gtpv1.as_deref()),
                other => {
                    self.refuse(
                        format!("{p}.choice"),
                        format!(
                            "'{other}' outside a tunnel is not supported: before the tunnel header come ethernet, vlan, mpls, ipv4 or ipv6, and udp"
                        ),
                    );
                    None
                }
            };
            headers.extend(header);
        }
        let inner = choices.get(last + 1).map(String::as_str);
        match (choices[last].as_str(), inner) {
            ("vxlan", Some("ethernet")) => {}
            ("vxlan", _) => {
                self.refuse(
                    format!("{path}.packet[{}]", last + 1),
                    "vxlan carries an Ethernet frame: ethernet comes next",
                );
            }
            // GRE or MPLS carrying Ethernet: the stream keeps its Ethernet header.
            (_, Some("ethernet")) => headers.push(OuterHeader::Ethernet {
                src: None,
                dst: None,
            }),
            _ => {}
        }
        if self.refusals.len() > before {
            return None;
        }
        spec.encap = Some(Encap { headers });
        if let Some((path, pat)) = moving_vni {
            self.vary_vni(&path, pat, spec);
        }
        Some(last + 1)
    }

    fn outer_ethernet(&mut self, at: &str, e: Option<&FlowEthernet>) -> Option<OuterHeader> {
        let mut scratch = StreamSpec::default();
        self.ethernet(at, e, &mut scratch, false)?;
        self.no_vary(at, &scratch);
        Some(OuterHeader::Ethernet {
            src: scratch.src_mac,
            dst: scratch.dst_mac,
        })
    }

    fn outer_ipv4(&mut self, at: &str, ip: Option<&FlowIpv4>) -> Option<OuterHeader> {
        let mut s = StreamSpec::default();
        self.ipv4(at, ip, &mut s)?;
        self.no_vary(at, &s);
        let v4 = |a: Option<IpAddr>| match a {
            Some(IpAddr::V4(a)) => Some(a),
            _ => None::<Ipv4Addr>,
        };
        Some(OuterHeader::Ipv4 {
            src: v4(s.src_ip),
            dst: v4(s.dst_ip),
            ttl: s.ttl,
            id: s.ip_id,
            dscp: s.dscp,
        })
    }

    fn outer_ipv6(&mut self, at: &str, ip: Option<&FlowIpv6>) -> Option<OuterHeader> {
        let mut s = StreamSpec::default();
        self.ipv6(at, ip, &mut s)?;
        self.no_vary(at, &s);
        let v6 = |a: Option<IpAddr>| match a {
            Some(IpAddr::V6(a)) => Some(a),
            _ => None::<Ipv6Addr>,
        };
        Some(OuterHeader::Ipv6 {
            src: v6(s.src_ip),
            dst: v6(s.dst_ip),
            hop_limit: s.ttl,
            flow_label: 0,
        })
    }

    fn outer_vlan(&mut self, at: &str, v: Option<&FlowVlan>) -> Option<OuterHeader> {
        let v = v.cloned().unwrap_or_default();
        self.rest(at, &v.rest);
        let id = self.one(&format!("{at}.id"), &v.id, Kind::Int(4095));
        let pcp = self.one(&format!("{at}.priority"), &v.priority, Kind::Int(7));
        self.fixed(&format!("{at}.cfi"), &v.cfi, Kind::Int(1), 0, "CFI 0");
        let tpid = match self.one(&format!("{at}.tpid"), &v.tpid, Kind::Int(0xffff)) {
            None | Some(0x8100) => VlanTpid::Dot1Q,
            Some(0x88a8) => VlanTpid::Dot1Ad,
            Some(_) => {
                self.refuse(
                    format!("{at}.tpid"),
                    "linerate writes TPID 0x8100 or, for the outer tag of QinQ, 0x88a8",
                );
                return None;
            }
        };
        Some(OuterHeader::Vlan {
            id: id.unwrap_or(0) as u16,
            pcp: pcp.unwrap_or(0) as u8,
            tpid,
        })
    }

    fn outer_udp(&mut self, at: &str, u: Option<&FlowUdp>) -> Option<OuterHeader> {
        let u = u.cloned().unwrap_or_default();
        self.rest(at, &u.rest);
        let port = Kind::Int(0xffff);
        let src = self.one(&format!("{at}.src_port"), &u.src_port, port);
        let dst = self.one(&format!("{at}.dst_port"), &u.dst_port, port);
        self.auto(
            &format!("{at}.length"),
            &u.length,
            port,
            "linerate writes the length of the datagram (auto)",
        );
        self.checksum(&format!("{at}.checksum"), &u.checksum);
        Some(OuterHeader::Udp {
            src_port: src.map_or(49152, |p| p as u16),
            dst_port: dst.map(|p| p as u16),
            // Asked for (generated): filled; left out: linerate's RFC 7348 default.
            checksum: u.checksum.as_ref().map(|_| true),
        })
    }

    fn no_vary(&mut self, at: &str, scratch: &StreamSpec) {
        if !scratch.vary.is_empty() {
            self.refuse(
                at,
                "a header outside the tunnel takes one value per field: patterns go on the headers inside it",
            );
        }
    }
}
