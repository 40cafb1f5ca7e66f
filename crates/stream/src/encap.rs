//! The outer headers a stream's frame travels inside (a tunnel), in one text form read by the
//! CLI (`--encap`) and the stream file (`encap = "…"`) alike:
//!
//! ```text
//! ethernet/ipv4:src=192.0.2.1,dst=192.0.2.2/udp/vxlan:vni=100
//! ```
//!
//! Headers outermost first, separated by `/`, as the packet carries them (scapy's `/`, the order
//! of an OTG flow's `packet` list); each is `NAME` or `NAME:KEY=VALUE,…`. The stream's own
//! headers (its addresses, ports, VLAN, `vary`) follow the last one: after `vxlan`, `nvgre` or a
//! closing bare `ethernet` the stream's frame keeps its Ethernet header; after anything else it
//! starts at its IP header. Keys left out take the defaults the stream's own headers take (the
//! port's MACs and addresses); RFC-given numbers are filled in (UDP port 4789 before VXLAN, 2152
//! before GTP-U, every next-header number, length and checksum).

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use linerate_wire::{
    Field, GreSpec, HeaderSpec, IpSpec, Mac, MacAddr, Payload, StackSpec, VlanTpid,
};

use crate::StreamError;

/// One outer header as written; `None` is "the port decides", as for the stream's own fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OuterHeader {
    Ethernet {
        src: Option<Mac>,
        dst: Option<Mac>,
    },
    Vlan {
        id: u16,
        pcp: u8,
        tpid: VlanTpid,
    },
    Mpls {
        label: u32,
        tc: u8,
        ttl: u8,
    },
    Ipv4 {
        src: Option<Ipv4Addr>,
        dst: Option<Ipv4Addr>,
        ttl: u8,
        id: u16,
        dscp: u8,
    },
    Ipv6 {
        src: Option<Ipv6Addr>,
        dst: Option<Ipv6Addr>,
        hop_limit: u8,
        flow_label: u32,
    },
    Gre(GreSpec),
    /// GRE keyed by a virtual subnet (RFC 7637), carrying the stream's Ethernet frame.
    Nvgre {
        vsid: u32,
        flow_id: u8,
    },
    Udp {
        src_port: u16,
        /// None: the well-known port of the tunnel that follows.
        dst_port: Option<u16>,
        /// None: 0 over IPv4 before VXLAN or GTP-U (RFC 7348 §5), computed otherwise.
        checksum: Option<bool>,
    },
    Vxlan {
        vni: u32,
    },
    GtpV1U {
        teid: u32,
        seq: Option<u16>,
    },
}

/// The outer headers of a tunnelled stream, outermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encap {
    pub headers: Vec<OuterHeader>,
}

/// The form every `--encap` error repeats.
pub const ENCAP_FORM: &str =
    "HEADER[:KEY=VALUE,…]/…, e.g. ethernet/ipv4:dst=192.0.2.2/udp/vxlan:vni=100";

/// The header names and their keys, for errors.
const HEADERS: &str = "ethernet (src, dst), vlan (id, pcp, tpid), mpls (label, tc, ttl), ipv4 (src, dst, ttl, id, dscp), ipv6 (src, dst, hop-limit, flow-label), gre (key, seq, checksum), nvgre (vsid, flow-id), udp (src-port, dst-port, checksum), vxlan (vni), gtpv1u (teid, seq)";

const TTL: u8 = 64;
const UDP_SRC_PORT: u16 = 49152;

impl OuterHeader {
    fn name(&self) -> &'static str {
        match self {
            OuterHeader::Ethernet { .. } => "ethernet",
            OuterHeader::Vlan { .. } => "vlan",
            OuterHeader::Mpls { .. } => "mpls",
            OuterHeader::Ipv4 { .. } => "ipv4",
            OuterHeader::Ipv6 { .. } => "ipv6",
            OuterHeader::Gre(_) => "gre",
            OuterHeader::Nvgre { .. } => "nvgre",
            OuterHeader::Udp { .. } => "udp",
            OuterHeader::Vxlan { .. } => "vxlan",
            OuterHeader::GtpV1U { .. } => "gtpv1u",
        }
    }

    /// The header `name` with every key at its default.
    fn default_of(name: &str) -> Option<Self> {
        Some(match name {
            "ethernet" | "eth" => OuterHeader::Ethernet {
                src: None,
                dst: None,
            },
            "vlan" => OuterHeader::Vlan {
                id: 0,
                pcp: 0,
                tpid: VlanTpid::Dot1Q,
            },
            "mpls" => OuterHeader::Mpls {
                label: 16,
                tc: 0,
                ttl: TTL,
            },
            "ipv4" => OuterHeader::Ipv4 {
                src: None,
                dst: None,
                ttl: TTL,
                id: 0,
                dscp: 0,
            },
            "ipv6" => OuterHeader::Ipv6 {
                src: None,
                dst: None,
                hop_limit: TTL,
                flow_label: 0,
            },
            "gre" => OuterHeader::Gre(GreSpec::default()),
            "nvgre" => OuterHeader::Nvgre {
                vsid: 0,
                flow_id: 0,
            },
            "udp" => OuterHeader::Udp {
                src_port: UDP_SRC_PORT,
                dst_port: None,
                checksum: None,
            },
            "vxlan" => OuterHeader::Vxlan { vni: 0 },
            "gtpv1u" | "gtpu" => OuterHeader::GtpV1U { teid: 0, seq: None },
            _ => return None,
        })
    }

    /// The one name of a key that `set` takes under two.
    fn key_name<'a>(&self, key: &'a str) -> &'a str {
        match (self, key) {
            (OuterHeader::Vlan { .. }, "priority") => "pcp",
            (OuterHeader::Ipv6 { .. }, "ttl") => "hop-limit",
            _ => key,
        }
    }

    /// Sets `key` to the text `value`; the error says what the key takes.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let unknown = || format!("no key '{key}'");
        match self {
            OuterHeader::Ethernet { src, dst } => match key {
                "src" => *src = Some(mac(value)?),
                "dst" => *dst = Some(mac(value)?),
                _ => return Err(unknown()),
            },
            OuterHeader::Vlan { id, pcp, tpid } => match key {
                "id" => *id = int(key, value)?,
                "pcp" | "priority" => *pcp = int(key, value)?,
                "tpid" => {
                    *tpid = match int::<u16>(key, value)? {
                        0x8100 => VlanTpid::Dot1Q,
                        0x88a8 => VlanTpid::Dot1Ad,
                        _ => return Err(format!("tpid '{value}' is neither 0x8100 nor 0x88a8")),
                    }
                }
                _ => return Err(unknown()),
            },
            OuterHeader::Mpls { label, tc, ttl } => match key {
                "label" => *label = int(key, value)?,
                "tc" => *tc = int(key, value)?,
                "ttl" => *ttl = int(key, value)?,
                _ => return Err(unknown()),
            },
            OuterHeader::Ipv4 {
                src,
                dst,
                ttl,
                id,
                dscp,
            } => match key {
                "src" => *src = Some(addr(key, value)?),
                "dst" => *dst = Some(addr(key, value)?),
                "ttl" => *ttl = int(key, value)?,
                "id" => *id = int(key, value)?,
                "dscp" => *dscp = int(key, value)?,
                _ => return Err(unknown()),
            },
            OuterHeader::Ipv6 {
                src,
                dst,
                hop_limit,
                flow_label,
            } => match key {
                "src" => *src = Some(addr(key, value)?),
                "dst" => *dst = Some(addr(key, value)?),
                "hop-limit" | "ttl" => *hop_limit = int(key, value)?,
                "flow-label" => *flow_label = int(key, value)?,
                _ => return Err(unknown()),
            },
            OuterHeader::Gre(g) => match key {
                "key" => g.key = Some(int(key, value)?),
                "seq" => g.seq = Some(int(key, value)?),
                "checksum" => g.checksum = on_off(key, value)?,
                _ => return Err(unknown()),
            },
            OuterHeader::Nvgre { vsid, flow_id } => match key {
                "vsid" => *vsid = int(key, value)?,
                "flow-id" => *flow_id = int(key, value)?,
                _ => return Err(unknown()),
            },
            OuterHeader::Udp {
                src_port,
                dst_port,
                checksum,
            } => match key {
                "src-port" => *src_port = int(key, value)?,
                "dst-port" => *dst_port = Some(int(key, value)?),
                "checksum" => *checksum = Some(on_off(key, value)?),
                _ => return Err(unknown()),
            },
            OuterHeader::Vxlan { vni } => match key {
                "vni" => *vni = int(key, value)?,
                _ => return Err(unknown()),
            },
            OuterHeader::GtpV1U { teid, seq } => match key {
                "teid" => *teid = int(key, value)?,
                "seq" => *seq = Some(int(key, value)?),
                _ => return Err(unknown()),
            },
        }
        Ok(())
    }

    /// The keys whose values differ from the header's defaults, in the text form `set` reads.
    fn keys(&self) -> Vec<(&'static str, String)> {
        let mut keys = Vec::new();
        let mut put = |key, value: Option<String>| {
            if let Some(v) = value {
                keys.push((key, v));
            }
        };
        let unless = |v: u64, default: u64| (v != default).then(|| v.to_string());
        match self {
            OuterHeader::Ethernet { src, dst } => {
                put("src", src.map(|m| m.to_string()));
                put("dst", dst.map(|m| m.to_string()));
            }
            OuterHeader::Vlan { id, pcp, tpid } => {
                put("id", unless((*id).into(), 0));
                put("pcp", unless((*pcp).into(), 0));
                put("tpid", (*tpid == VlanTpid::Dot1Ad).then(|| "0x88a8".into()));
            }
            OuterHeader::Mpls { label, tc, ttl } => {
                put("label", unless((*label).into(), 16));
                put("tc", unless((*tc).into(), 0));
                put("ttl", unless((*ttl).into(), TTL.into()));
            }
            OuterHeader::Ipv4 {
                src,
                dst,
                ttl,
                id,
                dscp,
            } => {
                put("src", src.map(|a| a.to_string()));
                put("dst", dst.map(|a| a.to_string()));
                put("ttl", unless((*ttl).into(), TTL.into()));
                put("id", unless((*id).into(), 0));
                put("dscp", unless((*dscp).into(), 0));
            }
            OuterHeader::Ipv6 {
                src,
                dst,
                hop_limit,
                flow_label,
            } => {
                put("src", src.map(|a| a.to_string()));
                put("dst", dst.map(|a| a.to_string()));
                put("hop-limit", unless((*hop_limit).into(), TTL.into()));
                put("flow-label", unless((*flow_label).into(), 0));
            }
            OuterHeader::Gre(g) => {
                put("key", g.key.map(|k| k.to_string()));
                put("seq", g.seq.map(|s| s.to_string()));
                put("checksum", g.checksum.then(|| "on".into()));
            }
            OuterHeader::Nvgre { vsid, flow_id } => {
                put("vsid", unless((*vsid).into(), 0));
                put("flow-id", unless((*flow_id).into(), 0));
            }
            OuterHeader::Udp {
                src_port,
                dst_port,
                checksum,
            } => {
                put("src-port", unless((*src_port).into(), UDP_SRC_PORT.into()));
                put("dst-port", dst_port.map(|p| p.to_string()));
                put(
                    "checksum",
                    checksum.map(|on| if on { "on" } else { "off" }.into()),
                );
            }
            OuterHeader::Vxlan { vni } => put("vni", unless((*vni).into(), 0)),
            OuterHeader::GtpV1U { teid, seq } => {
                put("teid", unless((*teid).into(), 0));
                put("seq", seq.map(|s| s.to_string()));
            }
        }
        keys
    }
}

fn mac(value: &str) -> Result<Mac, String> {
    value.parse::<Mac>().map_err(|e| e.to_string())
}

fn addr<A: FromStr>(key: &str, value: &str) -> Result<A, String> {
    value
        .parse()
        .map_err(|_| format!("{key} '{value}' is not an address of this IP version"))
}

fn int<T: TryFrom<u64>>(key: &str, value: &str) -> Result<T, String> {
    let v = value.trim();
    let n = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    };
    n.and_then(|n| T::try_from(n).ok()).ok_or_else(|| {
        let max = [u8::MAX.into(), u16::MAX.into(), u32::MAX.into(), u64::MAX]
            .into_iter()
            .take_while(|&m: &u64| T::try_from(m).is_ok())
            .last()
            .unwrap_or(0);
        format!("{key} '{value}' is not a number in 0..={max}")
    })
}

fn on_off(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("{key} '{value}' is neither on nor off")),
    }
}

impl FromStr for Encap {
    type Err = StreamError;

    fn from_str(input: &str) -> Result<Self, StreamError> {
        let fail = |why: String| StreamError::Encap {
            input: input.to_owned(),
            why,
        };
        let mut headers = Vec::new();
        for (i, text) in input.split('/').map(str::trim).enumerate() {
            let (name, keys) = text.split_once(':').unwrap_or((text, ""));
            let mut h =
                OuterHeader::default_of(&name.trim().to_ascii_lowercase()).ok_or_else(|| {
                    fail(format!("header {} '{name}' is not one of {HEADERS}", i + 1))
                })?;
            // A key given twice would silently take its last value.
            let mut given: Vec<&str> = Vec::new();
            for pair in keys.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (key, value) = pair
                    .split_once('=')
                    .ok_or_else(|| fail(format!("'{pair}' in {} is not KEY=VALUE", h.name())))?;
                let one = h.key_name(key.trim());
                if given.contains(&one) {
                    return Err(fail(format!(
                        "{} (header {}): {one} is given twice: give it once",
                        h.name(),
                        i + 1
                    )));
                }
                given.push(one);
                h.set(key.trim(), value.trim())
                    .map_err(|why| fail(format!("{} (header {}): {why}", h.name(), i + 1)))?;
            }
            headers.push(h);
        }
        Ok(Self { headers })
    }
}

/// The form `from_str` reads back, with the keys that differ from their defaults.
impl fmt::Display for Encap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, h) in self.headers.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            f.write_str(h.name())?;
            for (k, (key, value)) in h.keys().iter().enumerate() {
                write!(f, "{}{key}={value}", if k == 0 { ':' } else { ',' })?;
            }
        }
        Ok(())
    }
}

linerate_wire::serde_as_text!(Encap);

/// What the port decides for an outer header's values the text leaves out.
/// The VNI's bits in the word of [`Encap::vni_field`].
pub const VNI_MASK: u64 = 0xFFFF_FF00;
/// How far up a VNI sits in the word of [`Encap::vni_field`].
pub const VNI_SHIFT: u32 = 8;

pub(crate) struct OuterDefaults {
    pub src_mac: MacAddr,
    pub dst_mac: MacAddr,
    pub ipv4: (Ipv4Addr, Ipv4Addr),
    pub ipv6: (Ipv6Addr, Ipv6Addr),
}

impl Encap {
    /// Whether the stream's frame keeps its Ethernet header inside the tunnel.
    pub fn carries_ethernet(&self) -> bool {
        matches!(
            self.headers.last(),
            Some(
                OuterHeader::Vxlan { .. }
                    | OuterHeader::Nvgre { .. }
                    | OuterHeader::Ethernet { .. }
            )
        ) && self.headers.len() > 1
    }

    /// The VNI of the tunnel's last VXLAN header as a field a stream can vary: the 32-bit word
    /// `byte@OFFSET/4` whose upper 24 bits it is (the low byte is VXLAN's reserved one), so vary
    /// it under [`VNI_MASK`] with values shifted [`VNI_SHIFT`] bits up. None without VXLAN.
    pub fn vni_field(&self) -> Option<Field> {
        let d = OuterDefaults {
            src_mac: [0; 6],
            dst_mac: [0; 6],
            ipv4: (Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED),
            ipv6: (Ipv6Addr::UNSPECIFIED, Ipv6Addr::UNSPECIFIED),
        };
        let mut headers = self.resolve(&d).ok()?;
        let last = headers
            .iter()
            .rposition(|h| matches!(h, HeaderSpec::Vxlan { .. }))?;
        headers.truncate(last);
        let before = StackSpec {
            headers,
            payload: Payload::Fixed(0),
        }
        .headers_len();
        let offset = u16::try_from(before + linerate_wire::tunnel::vxlan::field::VNI.start).ok()?;
        Some(Field::Byte { offset, width: 4 })
    }

    /// The outer headers as the wire layer builds them, defaults filled in. A closing bare
    /// `ethernet` stands for the stream's own Ethernet header and is not among them.
    pub(crate) fn resolve(&self, d: &OuterDefaults) -> Result<Vec<HeaderSpec>, StreamError> {
        let fail = |why: String| StreamError::Encap {
            input: self.to_string(),
            why,
        };
        let mut out = Vec::with_capacity(self.headers.len());
        let last = self.headers.len() - 1;
        for (i, h) in self.headers.iter().enumerate() {
            let next = self.headers.get(i + 1);
            out.push(match h {
                OuterHeader::Ethernet { src, dst } if i == last && i > 0 => {
                    if src.is_some() || dst.is_some() {
                        return Err(fail(
                            "a closing ethernet is the stream's own Ethernet header: set its addresses with src-mac and dst-mac".into(),
                        ));
                    }
                    break;
                }
                OuterHeader::Ethernet { src, dst } => HeaderSpec::Ethernet {
                    src: src.map_or(d.src_mac, Mac::octets),
                    dst: dst.map_or(d.dst_mac, Mac::octets),
                },
                &OuterHeader::Vlan { id, pcp, tpid } => HeaderSpec::Vlan { tpid, id, pcp },
                &OuterHeader::Mpls { label, tc, ttl } => HeaderSpec::Mpls { label, tc, ttl },
                &OuterHeader::Ipv4 {
                    src,
                    dst,
                    ttl,
                    id,
                    dscp,
                } => HeaderSpec::Ip(IpSpec::V4 {
                    src: src.unwrap_or(d.ipv4.0),
                    dst: dst.unwrap_or(d.ipv4.1),
                    ttl,
                    id,
                    dscp,
                }),
                &OuterHeader::Ipv6 {
                    src,
                    dst,
                    hop_limit,
                    flow_label,
                } => HeaderSpec::Ip(IpSpec::V6 {
                    src: src.unwrap_or(d.ipv6.0),
                    dst: dst.unwrap_or(d.ipv6.1),
                    hop_limit,
                    flow_label,
                }),
                OuterHeader::Gre(g) => HeaderSpec::Gre(*g),
                &OuterHeader::Nvgre { vsid, flow_id } => {
                    HeaderSpec::Gre(GreSpec::nvgre(vsid, flow_id)?)
                }
                &OuterHeader::Udp {
                    src_port,
                    dst_port,
                    checksum,
                } => {
                    let over_ipv4 = matches!(out.last(), Some(HeaderSpec::Ip(IpSpec::V4 { .. })));
                    let tunnel = matches!(
                        next,
                        Some(OuterHeader::Vxlan { .. } | OuterHeader::GtpV1U { .. })
                    );
                    HeaderSpec::Udp {
                        src_port,
                        dst_port,
                        zero_checksum: !checksum.unwrap_or(!(over_ipv4 && tunnel)),
                    }
                }
                &OuterHeader::Vxlan { vni } => HeaderSpec::Vxlan { vni },
                &OuterHeader::GtpV1U { teid, seq } => HeaderSpec::GtpV1U { teid, seq },
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_reads_back() {
        for text in [
            "ethernet/ipv4/udp/vxlan:vni=100",
            "ethernet:src=02:00:00:00:00:0a,dst=02:00:00:00:00:0b/vlan:id=10,tpid=0x88a8/vlan:id=20/ipv4:src=192.0.2.1,dst=192.0.2.2,ttl=9/gre:key=7,seq=1,checksum=on",
            "ethernet/mpls:label=100,tc=3/mpls:label=200,ttl=1/ethernet",
            "ethernet/ipv6:src=2001:db8::1,dst=2001:db8::2,flow-label=5/udp:src-port=1,dst-port=2152,checksum=on/gtpv1u:teid=9,seq=4",
            "ethernet/ipv4/nvgre:vsid=5000,flow-id=1",
            "ethernet/ipv4/udp:checksum=off/vxlan",
        ] {
            let encap: Encap = text.parse().unwrap();
            assert_eq!(encap.to_string(), text);
        }
        // Short names and spaces read as the long ones.
        let e: Encap = "eth / ipv4 / udp / vxlan:vni=1".parse().unwrap();
        assert_eq!(e.to_string(), "ethernet/ipv4/udp/vxlan:vni=1");
    }

    #[test]
    fn errors_name_the_header_and_the_key() {
        for (bad, words) in [
            (
                "ethernet/ip4/udp",
                &["header 2", "'ip4'", "gtpv1u (teid, seq)"][..],
            ),
            (
                "ethernet/ipv4:dest=1.2.3.4",
                &["ipv4 (header 2)", "no key 'dest'"],
            ),
            ("ethernet/ipv4:dst=1.2.3", &["dst '1.2.3'"]),
            (
                "ethernet/ipv4/udp/vxlan:vni=x",
                &["vxlan (header 4)", "vni 'x'"],
            ),
            (
                "ethernet/udp:src-port=70000",
                &["src-port '70000'", "0..=65535"],
            ),
            ("ethernet/vlan:tpid=0x9100", &["tpid '0x9100'"]),
            ("ethernet/gre:checksum=maybe", &["checksum 'maybe'"]),
            ("ethernet/ipv4:ttl", &["'ttl' in ipv4 is not KEY=VALUE"]),
        ] {
            let err = bad.parse::<Encap>().unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
            assert!(words.iter().all(|w| err.contains(w)), "{bad}: {err}");
        }
    }

    #[test]
    fn a_key_given_twice_is_refused_under_either_name() {
        for (bad, key) in [
            ("ethernet/ipv4/udp/vxlan:vni=1,vni=2", "vni"),
            ("ethernet/ipv4/udp/vxlan:vni=1,vni=1", "vni"),
            ("ethernet/vlan:pcp=1,priority=2", "pcp"),
            ("ethernet/ipv6:ttl=9,hop-limit=9", "hop-limit"),
            (
                "ethernet:dst=02:00:00:00:00:01,dst=02:00:00:00:00:02",
                "dst",
            ),
        ] {
            let err = bad.parse::<Encap>().unwrap_err().to_string();
            assert!(
                err.contains(bad) && err.contains(&format!("{key} is given twice")),
                "{bad}: {err}"
            );
            assert!(!err.contains('\n'), "{err}");
        }
        // The same key in two headers is two keys.
        let e: Encap = "ethernet/vlan:id=10/vlan:id=20".parse().unwrap();
        assert_eq!(e.to_string(), "ethernet/vlan:id=10/vlan:id=20");
    }

    fn defaults() -> OuterDefaults {
        OuterDefaults {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            ipv4: (Ipv4Addr::new(198, 18, 0, 1), Ipv4Addr::new(198, 18, 0, 2)),
            ipv6: ("2001:2::1".parse().unwrap(), "2001:2::2".parse().unwrap()),
        }
    }

    #[test]
    fn a_tunnel_udp_checksum_is_zero_over_ipv4_unless_asked() {
        let zero = |text: &str| {
            let e: Encap = text.parse().unwrap();
            match e.resolve(&defaults()).unwrap()[2] {
                HeaderSpec::Udp { zero_checksum, .. } => zero_checksum,
                _ => unreachable!(),
            }
        };
        assert!(zero("ethernet/ipv4/udp/vxlan"));
        assert!(zero("ethernet/ipv4/udp/gtpv1u"));
        assert!(!zero("ethernet/ipv4/udp:checksum=on/vxlan"));
        assert!(!zero("ethernet/ipv6/udp/vxlan"));
    }

    #[test]
    fn what_the_stream_frame_keeps_follows_the_last_header() {
        let parse = |t: &str| t.parse::<Encap>().unwrap();
        assert!(parse("ethernet/ipv4/udp/vxlan").carries_ethernet());
        assert!(parse("ethernet/ipv4/nvgre").carries_ethernet());
        assert!(parse("ethernet/mpls/ethernet").carries_ethernet());
        assert!(!parse("ethernet/mpls").carries_ethernet());
        assert!(!parse("ethernet/ipv4/gre").carries_ethernet());
        assert!(!parse("ethernet").carries_ethernet());
        let e = parse("ethernet/mpls/ethernet")
            .resolve(&defaults())
            .unwrap();
        assert_eq!(e.len(), 2);
        let err = parse("ethernet/mpls/ethernet:src=02:00:00:00:00:09")
            .resolve(&defaults())
            .unwrap_err()
            .to_string();
        assert!(err.contains("src-mac"), "{err}");
    }
}
