use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use linerate_wire::{
    Field, FieldValue, FrameSpec, IpSpec, L4Spec, Mac, MacAddr, Payload, TcpFlags, VaryMode,
    VlanTag, units,
};
use serde::{Deserialize, Serialize};

use crate::arp::{ArpKeys, ArpOp};
use crate::encap::{Encap, OuterDefaults};
use crate::size::Sizes;
use crate::template::Template;
use crate::{Rate, SizeMode, StartDelay, StreamError, Vary, VarySpec};

/// Layer 4 of the template frame, or ARP in place of IP and L4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    #[default]
    Udp,
    Tcp,
    Icmp,
    /// No IP: the frame is an ARP request or reply (`crate::arp`).
    Arp,
    /// No L4 header: the payload follows the IP header (IPv4 protocol 61, IPv6 next header 59).
    Ip,
    /// No IP: the payload follows the Ethernet header and its VLAN tag (ethertype 0xFFFF).
    Ethernet,
}

/// What a port does when a stream has sent its `count`, as Ostinato models it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Next {
    #[default]
    Stop,
    Next,
    GotoFirst,
}

/// How the streams of a file share the port: one after another (`sequence`, each for its count
/// and then its `next`), or all at once (`interleaved`, each at its own rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Sequence,
    Interleaved,
}

/// Bursts: `frames` per burst, `per-second` bursts each second. Inside a burst frames follow
/// each other at the stream's rate (back to back at `max`); the gap between bursts is what is
/// left of each 1/per-second period.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Bursts {
    #[serde(with = "crate::text::count")]
    pub frames: u64,
    pub per_second: f64,
}

/// One stream as a person writes it. CLI flags and a `[[stream]]` table of a TOML file fill
/// the same struct, so both go through the same validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct StreamSpec {
    pub name: String,
    /// None: the port's own MAC, else 02:00:00:00:00:01.
    #[serde(with = "crate::text::optional")]
    pub src_mac: Option<Mac>,
    /// None: the port fills it in (the lab's peer MAC), else broadcast.
    #[serde(with = "crate::text::optional")]
    pub dst_mac: Option<Mac>,
    pub vlan: Option<u16>,
    pub vlan_pcp: u8,
    pub ipv6: bool,
    /// None: the lab's addresses on a lab, else 198.18.0.1 / 198.18.0.2 and 2001:2::1 /
    /// 2001:2::2 (the RFC 2544 / RFC 5180 benchmarking ranges). The version must be the
    /// stream's (`ipv6`).
    #[serde(with = "crate::text::optional_ip")]
    pub src_ip: Option<IpAddr>,
    #[serde(with = "crate::text::optional_ip")]
    pub dst_ip: Option<IpAddr>,
    pub ttl: u8,
    pub ip_id: u16,
    pub dscp: u8,
    pub proto: Proto,
    pub src_port: u16,
    pub dst_port: u16,
    pub tcp_flags: TcpFlags,
    /// ARP streams (`proto = "arp"`): request or reply.
    pub arp_op: ArpOp,
    /// None: the frame's source MAC.
    #[serde(with = "crate::text::optional")]
    pub arp_sender_mac: Option<Mac>,
    /// None: `src-ip`'s value.
    #[serde(with = "crate::text::optional")]
    pub arp_sender_ip: Option<Ipv4Addr>,
    /// None: all zeros in a request, the frame's destination MAC in a reply.
    #[serde(with = "crate::text::optional")]
    pub arp_target_mac: Option<Mac>,
    /// None: `dst-ip`'s value.
    #[serde(with = "crate::text::optional")]
    pub arp_target_ip: Option<Ipv4Addr>,
    pub payload: Payload,
    /// Frame size, FCS included.
    pub size: usize,
    /// `fixed`, `inc:MIN-MAX[:STEP]`, `random:MIN-MAX`, `imix`, `imix:SIZExWEIGHT,…`.
    pub size_mode: SizeMode,
    /// `FIELD:MODE:START-END[:STEP][,mask=M]`, applied in order.
    pub vary: Vec<Vary>,
    /// Frames this stream sends before `next`; none means it never ends by itself.
    #[serde(with = "crate::text::optional_count")]
    pub count: Option<u64>,
    pub next: Next,
    /// How many times `goto-first` loops before stopping (none: forever).
    #[serde(with = "crate::text::optional_count")]
    pub loops: Option<u64>,
    pub bursts: Option<Bursts>,
    /// How long after the run's start the stream's first frame is due (`delay = "1ms"`, OTG's
    /// `duration.….delay`): its whole schedule moves that much later, once. A stream of a
    /// sequence other than the first starts when the one before it ends, so only the first may
    /// have one; a stream at `max` has no schedule to move.
    #[serde(with = "crate::text::optional")]
    pub delay: Option<StartDelay>,
    /// `auto`, `precise` (each frame at its own instant) or `sliced` (the frames of 20 µs
    /// together): how a paced stream's frames leave.
    pub pacing: crate::Spacing,
    /// `even` or `poisson`: the gaps between a paced stream's frames.
    pub gaps: crate::Gaps,
    /// `max`, `1.5M` (frames/s), `500Mbps` (L2), `1Gbps-l1` (L1), `50%` (of line rate).
    pub rate: Rate,
    /// Seed for random payloads, random sizes and random fields.
    pub seed: u64,
    /// Stamp the receive side's signature (flow id, sequence, transmit time) into the last 18
    /// bytes of every frame (`linerate_wire::signature`).
    pub signature: bool,
    /// The host it leaves from (`[[host]]`, `--host`): its port, MAC, VLAN and address are the
    /// stream's source.
    pub from: Option<String>,
    /// The host it goes to: its address is the destination, the MAC is the next hop's as
    /// resolved by ARP/ND.
    pub to: Option<String>,
    /// More host pairs the stream goes between after `from` → `to`, which is pair 0: frame n
    /// goes between pair n mod (1 + len), its addresses, source MAC and next hop that pair's
    /// (an OTG device flow between several devices, `one_to_one` or `mesh`), the stream's
    /// other varied fields moving on with it. Every pair leaves from `from`'s port and arrives
    /// at `to`'s, so one receiver counts the stream.
    pub pairs: Vec<(String, String)>,
    /// Outer headers the stream's frame is sent inside (a tunnel), outermost first:
    /// `ethernet/ipv4:dst=192.0.2.2/udp/vxlan:vni=100`. The stream's own fields and `vary`
    /// describe the frame inside.
    #[serde(with = "crate::text::optional")]
    pub encap: Option<Encap>,
    /// Copied from the file's top-level `mode`; not a key of a `[[stream]]` table.
    #[serde(skip)]
    pub mode: Mode,
}

impl Default for StreamSpec {
    fn default() -> Self {
        Self {
            name: "stream0".into(),
            src_mac: None,
            dst_mac: None,
            vlan: None,
            vlan_pcp: 0,
            ipv6: false,
            src_ip: None,
            dst_ip: None,
            ttl: 64,
            ip_id: 0,
            dscp: 0,
            proto: Proto::Udp,
            src_port: 49152,
            dst_port: 9,
            tcp_flags: TcpFlags {
                syn: true,
                ..TcpFlags::default()
            },
            arp_op: ArpOp::Request,
            arp_sender_mac: None,
            arp_sender_ip: None,
            arp_target_mac: None,
            arp_target_ip: None,
            payload: Payload::Increment,
            size: 64,
            size_mode: SizeMode::Fixed,
            vary: Vec::new(),
            count: None,
            next: Next::Stop,
            loops: None,
            bursts: None,
            delay: None,
            pacing: crate::Spacing::Auto,
            gaps: crate::Gaps::Even,
            rate: Rate::Max,
            seed: 1,
            signature: false,
            from: None,
            to: None,
            pairs: Vec::new(),
            encap: None,
            mode: Mode::Sequence,
        }
    }
}

impl StreamSpec {
    /// The seed stream: Ethernet II, IPv4, UDP, incrementing payload, 10 distinct frames (the IP
    /// identification counts 0..9), then back to the first.
    pub fn seed() -> Self {
        Self {
            vary: vec![Vary {
                field: Field::IpId,
                mode: VaryMode::Inc,
                start: FieldValue::Int(0),
                end: FieldValue::Int(9),
                step: 1,
                mask: None,
                list: Vec::new(),
            }],
            ..Self::default()
        }
    }

    /// The smallest frame (FCS included, at least 64 B) that holds the stream's headers, its
    /// raw payload and, after it, its signature: what a size left unset becomes where a
    /// header may carry bytes of its own (an OTG flow with `custom` bytes and no `size`).
    pub fn smallest_size(&self) -> Result<usize, StreamError> {
        let template = self.template(&Limits::default())?;
        let raw = match &self.payload {
            Payload::Raw(bytes) => bytes.len(),
            _ => 0,
        };
        let signature = if self.signature {
            linerate_wire::signature::LEN
        } else {
            0
        };
        Ok(template
            .min_frame_size()
            .max(template.headers_len() + units::FCS_LEN + raw + signature))
    }

    /// Checks everything that can be checked without a port, and fills in what the port
    /// decides (addresses left out).
    pub(crate) fn resolve(&self, limits: &Limits) -> Result<Resolved, StreamError> {
        self.check_counts()?;
        let frame = self.template(limits)?;
        let sizes = self.size_mode.with_size(self.size);
        self.size_mode
            .check()
            .map_err(|why| StreamError::SizeMode {
                input: self.size_mode.to_string(),
                why,
            })?;
        let min = frame.min_frame_size();
        if sizes.min() < min {
            return Err(StreamError::SizeTooSmall {
                size: sizes.min(),
                min,
            });
        }
        let max = units::max_frame_size(limits.mtu, frame.outer_tags());
        if sizes.max() > max {
            return Err(StreamError::SizeOverMtu {
                size: sizes.max(),
                max,
                mtu: limits.mtu,
                settable: limits.mtu_settable,
            });
        }
        let vary = self
            .vary
            .iter()
            .map(|v| v.resolve(self.ipv6))
            .collect::<Result<Vec<_>, _>>()?;
        crate::vary::check_overlaps(&vary, &frame.build(sizes.min())?.layout)
            .map_err(|why| self.invalid(why))?;
        Ok(Resolved {
            frame,
            sizes,
            vary,
            rate: self.rate,
        })
    }

    fn invalid(&self, why: String) -> StreamError {
        StreamError::Invalid {
            stream: self.name.clone(),
            why,
        }
    }

    /// Counts, loops and bursts that would send nothing or overflow a schedule.
    fn check_counts(&self) -> Result<(), StreamError> {
        if self.count == Some(0) {
            return Err(
                self.invalid("count 0 sends nothing; leave it out to send until stopped".into())
            );
        }
        if self.loops == Some(0) {
            return Err(self.invalid("loops 0 sends nothing".into()));
        }
        self.rate.check().map_err(|why| StreamError::Rate {
            input: self.rate.to_string(),
            why: why.into(),
        })?;
        if let Some(b) = self.bursts
            && (b.frames == 0 || b.per_second <= 0.0 || !b.per_second.is_finite())
        {
            return Err(self.invalid("bursts need frames ≥ 1 and per-second > 0".into()));
        }
        if let Some(b) = self.bursts
            && b.frames > crate::CACHE_LIMIT
        {
            return Err(self.invalid(format!(
                "a burst of {} frames is over the {} a schedule holds",
                b.frames,
                crate::CACHE_LIMIT
            )));
        }
        Ok(())
    }

    /// The frame's header stack: the outer headers of `encap` (if any), then the stream's own.
    fn template(&self, limits: &Limits) -> Result<Template, StreamError> {
        let frame = self.frame(limits)?;
        let arp = ArpKeys::of(self);
        let mut stack = match self.proto {
            Proto::Arp => arp.stack(&self.name, &frame)?,
            _ if arp.any_given() => {
                return Err(self.invalid(
                    "the arp-… keys describe an ARP frame: make the protocol arp (proto = \"arp\")"
                        .into(),
                ));
            }
            Proto::Ip => {
                let mut stack = frame.stack();
                stack.headers.pop();
                stack
            }
            Proto::Ethernet => {
                let mut stack = frame.stack();
                stack.headers.truncate(stack.headers.len() - 2);
                stack
            }
            _ => frame.stack(),
        };
        let Some(encap) = &self.encap else {
            return Ok(Template::new(stack)?);
        };
        let encap_error = |why: String| StreamError::Encap {
            input: encap.to_string(),
            why,
        };
        let outer = encap.resolve(&OuterDefaults {
            src_mac: limits.default_src_mac.unwrap_or(DEFAULT_SRC_MAC),
            dst_mac: limits.default_dst_mac.unwrap_or([0xff; 6]),
            ipv4: limits.default_ipv4,
            ipv6: DEFAULT_IPV6,
        })?;
        if !encap.carries_ethernet() {
            if matches!(self.proto, Proto::Arp | Proto::Ethernet) {
                return Err(encap_error(
                    "an ARP or Ethernet-only frame keeps its Ethernet header inside the tunnel: end the encap with vxlan, nvgre or ethernet".into(),
                ));
            }
            if self.vlan.is_some() {
                return Err(encap_error(
                    "the stream's vlan tag needs its Ethernet header inside the tunnel: end the encap with vxlan, nvgre or ethernet, or drop vlan".into(),
                ));
            }
            stack.headers.remove(0);
        }
        stack.headers.splice(0..0, outer);
        Template::new(stack).map_err(|e| encap_error(e.to_string()))
    }

    /// The stream's own headers, with what it leaves out taken from the port.
    fn frame(&self, limits: &Limits) -> Result<FrameSpec, StreamError> {
        if self.vlan.is_some_and(|id| id > 4095) {
            return Err(self.invalid(format!("VLAN id {} is over 4095", self.vlan.unwrap_or(0))));
        }
        let ip = if self.ipv6 {
            IpSpec::V6 {
                src: ip6(self.src_ip, "src-ip")?.unwrap_or(DEFAULT_IPV6.0),
                dst: ip6(self.dst_ip, "dst-ip")?.unwrap_or(DEFAULT_IPV6.1),
                hop_limit: self.ttl,
                flow_label: 0,
            }
        } else {
            IpSpec::V4 {
                src: ip4(self.src_ip, "src-ip")?.unwrap_or(limits.default_ipv4.0),
                dst: ip4(self.dst_ip, "dst-ip")?.unwrap_or(limits.default_ipv4.1),
                ttl: self.ttl,
                id: self.ip_id,
                dscp: self.dscp,
            }
        };
        let l4 = match self.proto {
            Proto::Udp => L4Spec::Udp {
                src_port: self.src_port,
                dst_port: self.dst_port,
            },
            Proto::Tcp => L4Spec::Tcp {
                src_port: self.src_port,
                dst_port: self.dst_port,
                seq: 1,
                ack: 0,
                flags: self.tcp_flags,
                window: 65535,
            },
            Proto::Icmp => L4Spec::IcmpEcho {
                id: self.src_port,
                seq: 0,
            },
            // An ARP, IP-only or Ethernet-only stream drops the headers it does not send.
            Proto::Arp | Proto::Ip | Proto::Ethernet => L4Spec::Udp {
                src_port: 0,
                dst_port: 0,
            },
        };
        Ok(FrameSpec {
            src_mac: self
                .src_mac
                .map(Mac::octets)
                .or(limits.default_src_mac)
                .unwrap_or(DEFAULT_SRC_MAC),
            dst_mac: self
                .dst_mac
                .map(Mac::octets)
                .or(limits.default_dst_mac)
                .unwrap_or([0xff; 6]),
            vlan: self.vlan.map(|id| VlanTag {
                id,
                pcp: self.vlan_pcp,
            }),
            ip,
            l4,
            payload: self.payload.clone(),
        })
    }
}

/// Source MAC when neither the spec nor the port gives one.
const DEFAULT_SRC_MAC: MacAddr = [0x02, 0, 0, 0, 0, 0x01];

/// IPv6 source and destination when the spec leaves them out (RFC 5180's benchmarking range).
const DEFAULT_IPV6: (Ipv6Addr, Ipv6Addr) = (
    Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 1),
    Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 2),
);

fn ip4(addr: Option<IpAddr>, what: &str) -> Result<Option<Ipv4Addr>, StreamError> {
    match addr {
        None => Ok(None),
        Some(IpAddr::V4(a)) => Ok(Some(a)),
        Some(IpAddr::V6(a)) => Err(StreamError::Invalid {
            stream: what.into(),
            why: format!(
                "'{a}' is IPv6 but the stream is IPv4: make the stream IPv6 (ipv6 = true)"
            ),
        }),
    }
}

fn ip6(addr: Option<IpAddr>, what: &str) -> Result<Option<Ipv6Addr>, StreamError> {
    match addr {
        None => Ok(None),
        Some(IpAddr::V6(a)) => Ok(Some(a)),
        Some(IpAddr::V4(a)) => Err(StreamError::Invalid {
            stream: what.into(),
            why: format!("'{a}' is not an IPv6 address (form: 2001:2::1)"),
        }),
    }
}

/// Refuses, by arithmetic and before any frame is built, a plan over [`MAX_STREAMS`] streams or
/// [`MAX_PLAN_BYTES`] of pre-built frames. The count per stream follows the plan's rules: a
/// stream of a sequence is built `count` times; otherwise one cycle of its sizes, widened by each
/// counting field whose period still fits `CACHE_LIMIT` (goto-first: `count` frames).
pub(crate) fn check_plan_size(
    streams: &[StreamSpec],
    resolved: &[Resolved],
) -> Result<(), StreamError> {
    check_stream_count(streams)?;
    let sequence = streams.len() > 1 && streams.iter().all(|s| s.mode == Mode::Sequence);
    let mut total: u64 = 0;
    for (spec, r) in streams.iter().zip(resolved) {
        let schedule = r.sizes.schedule(spec.seed);
        let frames = match (sequence, spec.next, spec.count) {
            // Counts over the plan's own limits are refused there, with their own words.
            (true, _, Some(count)) => count.min(4 * crate::CACHE_LIMIT),
            (false, Next::GotoFirst, Some(count)) => count.min(crate::CACHE_LIMIT),
            _ => r.vary.iter().fold(schedule.len() as u64, |period, v| {
                match v.modifier.period().and_then(|q| lcm(period, q)) {
                    Some(l) if l <= crate::CACHE_LIMIT => l,
                    _ => period,
                }
            }),
        };
        let cycle: u64 = schedule
            .iter()
            .map(|&size| units::buffer_len(size) as u64)
            .sum();
        let len = schedule.len() as u64;
        let partial: u64 = schedule[..(frames % len) as usize]
            .iter()
            .map(|&size| units::buffer_len(size) as u64)
            .sum();
        let bytes = (frames / len)
            .checked_mul(cycle)
            .and_then(|b| b.checked_add(partial));
        total = match bytes.and_then(|b| total.checked_add(b)) {
            Some(t) if t <= MAX_PLAN_BYTES => t,
            _ => {
                return Err(StreamError::Invalid {
                    stream: spec.name.clone(),
                    why: format!(
                        "the plan's pre-built frames would take over {} MiB (at most {} MiB): use fewer or smaller frames, or shorter counts",
                        MAX_PLAN_BYTES >> 20,
                        MAX_PLAN_BYTES >> 20
                    ),
                });
            }
        };
    }
    Ok(())
}

/// Refuses more than [`MAX_STREAMS`] streams, before any is resolved.
pub(crate) fn check_stream_count(streams: &[StreamSpec]) -> Result<(), StreamError> {
    if streams.len() > MAX_STREAMS {
        return Err(StreamError::Invalid {
            stream: streams[0].name.clone(),
            why: format!(
                "{} streams, over the {MAX_STREAMS} a plan holds",
                streams.len()
            ),
        });
    }
    Ok(())
}

fn lcm(a: u64, b: u64) -> Option<u64> {
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    (a / gcd(a, b).max(1)).checked_mul(b)
}

/// A stream whose text has been parsed and checked.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub frame: Template,
    pub sizes: Sizes,
    pub vary: Vec<VarySpec>,
    pub rate: Rate,
}

/// What the port imposes on a stream.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub mtu: u32,
    /// The MTU is the port's own setting (a file, nowhere), which can be raised for a
    /// too-large size, not an interface's.
    pub mtu_settable: bool,
    /// Source MAC when the spec leaves it empty (the port's own).
    pub default_src_mac: Option<MacAddr>,
    /// Destination MAC when the spec leaves it empty (a lab's peer).
    pub default_dst_mac: Option<MacAddr>,
    /// IPv4 source and destination when the spec leaves them empty.
    pub default_ipv4: (Ipv4Addr, Ipv4Addr),
    /// The link's speed in Mbit/s, when known: rates in % need it, and no rate may exceed it.
    pub link_mbps: Option<u64>,
    /// The signature's flow id of the first stream; stream `i` is flow `first_flow + i`. A
    /// session of several ports numbers its flows across all of them, so a port that receives
    /// from several others tells every flow apart.
    pub first_flow: u16,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            mtu: 1500,
            mtu_settable: false,
            default_src_mac: None,
            default_dst_mac: None,
            default_ipv4: (Ipv4Addr::new(198, 18, 0, 1), Ipv4Addr::new(198, 18, 0, 2)),
            link_mbps: None,
            first_flow: 0,
        }
    }
}

/// A TOML stream file: one or more `[[stream]]` tables, run in order or (with a top-level
/// `mode = "interleaved"`, written before the first table) all at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecFile {
    #[serde(default)]
    pub mode: Mode,
    #[serde(rename = "stream")]
    pub streams: Vec<StreamSpec>,
    /// `[[host]]` tables: the emulated hosts streams go from and to.
    #[serde(rename = "host", default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<crate::HostSpec>,
}

/// Largest stream file read. `toml` holds a parsed file in up to some seventy times its size
/// before a stream is checked (a hostile 35 MB file cost 2 GB): 2 MiB is thousands of streams.
pub const MAX_FILE_BYTES: u64 = 2 << 20;
/// Most streams one plan holds (`[[stream]]` tables of a file).
pub const MAX_STREAMS: usize = 4096;
/// Most bytes of pre-built frames one plan holds, counted from the sizes and periods before any
/// frame is built.
pub const MAX_PLAN_BYTES: u64 = 64 << 20;

impl SpecFile {
    pub fn parse(text: &str, path: &str) -> Result<Self, StreamError> {
        let too_big = |why: String| StreamError::Toml {
            path: path.into(),
            why,
        };
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(too_big(format!(
                "larger than {MAX_FILE_BYTES} bytes ({} MiB), the most a stream file may hold",
                MAX_FILE_BYTES >> 20
            )));
        }
        // Counted in the text before `toml` builds a table for each.
        let tables = text.matches("[[stream]]").count();
        if tables > MAX_STREAMS {
            return Err(too_big(format!(
                "{tables} [[stream]] tables, over the {MAX_STREAMS} a plan holds"
            )));
        }
        // Inline tables (`stream = [{}, {}, …]`) are counted by a first pass that keeps none of
        // them: a stream with its defaults costs far more than its text.
        #[derive(Deserialize)]
        struct Count {
            stream: Option<Vec<serde::de::IgnoredAny>>,
        }
        if let Ok(Count {
            stream: Some(streams),
        }) = toml::from_str::<Count>(text)
            && streams.len() > MAX_STREAMS
        {
            return Err(too_big(format!(
                "{} streams, over the {MAX_STREAMS} a plan holds",
                streams.len()
            )));
        }
        let mut file: Self = toml::from_str(text).map_err(|e| StreamError::Toml {
            path: path.into(),
            why: toml_error(text, &e),
        })?;
        if file.streams.is_empty() {
            return Err(StreamError::Toml {
                path: path.into(),
                why: "no [[stream]] table".into(),
            });
        }
        if file.streams.len() > MAX_STREAMS {
            return Err(too_big(format!(
                "{} streams, over the {MAX_STREAMS} a plan holds",
                file.streams.len()
            )));
        }
        for s in &mut file.streams {
            s.mode = file.mode;
        }
        crate::host::check_hosts(&file.hosts, &file.streams)?;
        Ok(file)
    }
}

/// toml's message, with the key whose value it refused (a value's own grammar does not know
/// which key it was read for) and the line.
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let Some(span) = e.span() else {
        return e.message().to_owned();
    };
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let key = text[line_start..start]
        .split_once('=')
        .map(|(key, _)| key.trim())
        .filter(|key| !key.is_empty() && !e.message().contains(key));
    let line = text[..start].matches('\n').count() + 1;
    // `[stream]` is one table where the file holds a list of them.
    if text[line_start..].trim_start().starts_with("[stream]") {
        return format!(
            "[stream] is one table, but a file holds a list of streams: write [[stream]] (at line {line})"
        );
    }
    match key {
        Some(key) => format!("{key}: {} (at line {line})", e.message()),
        None => format!("{} (at line {line})", e.message()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_stream_table_is_told_to_be_a_list() {
        let err = SpecFile::parse("[stream]\nsize = 128\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("write [[stream]]") && err.contains("line 1"),
            "{err}"
        );
    }

    /// Issue 41: a count reads as on the command line (`-n 1e6`), in a file too.
    #[test]
    fn counts_read_as_the_command_line_reads_them() {
        let file = SpecFile::parse(
            "[[stream]]\ncount = \"1e3\"\nloops = \"2k\"\nbursts = { frames = \"1M\", per-second = 2.0 }\n\
             [[stream]]\ncount = 1e3\nloops = 7\n",
            "t.toml",
        )
        .unwrap();
        let (a, b) = (&file.streams[0], &file.streams[1]);
        assert_eq!((a.count, a.loops), (Some(1000), Some(2000)));
        assert_eq!(a.bursts.unwrap().frames, 1_000_000);
        assert_eq!((b.count, b.loops), (Some(1000), Some(7)));
        // Written back as integers, read back the same.
        let back = SpecFile::parse(&toml::to_string(&file).unwrap(), "t.toml").unwrap();
        assert_eq!(back.streams[0].count, Some(1000));
        // JSON (the agents' wire) writes none as null and reads it back.
        let none = StreamSpec::default();
        let json = serde_json::to_string(&none).unwrap();
        let again: StreamSpec = serde_json::from_str(&json).unwrap();
        assert_eq!((again.count, again.loops), (None, None));
        let some: StreamSpec = serde_json::from_str(&serde_json::to_string(a).unwrap()).unwrap();
        assert_eq!((some.count, some.loops), (Some(1000), Some(2000)));
        for bad in ["count = \"1e3x\"", "count = 1.5", "count = -1"] {
            let err = SpecFile::parse(&format!("[[stream]]\n{bad}\n"), "t.toml")
                .unwrap_err()
                .to_string();
            assert!(err.contains("count"), "{bad}: {err}");
        }
    }

    /// A stream file's `delay` and `pairs`, and the agents' JSON, read back what they wrote.
    #[test]
    fn delay_and_pairs_read_from_a_file_and_go_over_the_wire() {
        let file = SpecFile::parse(
            "[[host]]\nname = \"a\"\nport = \"p0\"\nipv4 = \"10.0.0.1/24\"\n\
             [[host]]\nname = \"c\"\nport = \"p0\"\nipv4 = \"10.0.0.3/24\"\n\
             [[host]]\nname = \"b\"\nport = \"p1\"\nipv4 = \"10.0.0.2/24\"\n\
             [[host]]\nname = \"d\"\nport = \"p1\"\nipv4 = \"10.0.0.4/24\"\n\
             [[stream]]\nfrom = \"a\"\nto = \"b\"\npairs = [[\"c\", \"d\"]]\ndelay = \"1.5ms\"\nrate = \"1k\"\n",
            "t.toml",
        )
        .unwrap();
        let s = &file.streams[0];
        assert_eq!(s.pairs, [("c".to_string(), "d".to_string())]);
        assert_eq!(s.delay.unwrap().0, std::time::Duration::from_micros(1500));
        let again: StreamSpec = serde_json::from_str(&serde_json::to_string(s).unwrap()).unwrap();
        assert_eq!((again.pairs, again.delay), (s.pairs.clone(), s.delay));
        let back = SpecFile::parse(&toml::to_string(&file).unwrap(), "t.toml").unwrap();
        assert_eq!(back.streams[0].delay, s.delay);
        let err = SpecFile::parse("[[stream]]\ndelay = \"2days\"\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("delay"), "{err}");
    }

    #[test]
    fn toml_and_defaults_meet_in_one_struct() {
        let file = SpecFile::parse(
            "[[stream]]\nname = \"a\"\nsize = 128\nvary = [\"src-port:inc:1-4\"]\ncount = 4\nnext = \"goto-first\"\n",
            "t.toml",
        )
        .unwrap();
        let s = &file.streams[0];
        assert_eq!((s.size, s.count, s.next), (128, Some(4), Next::GotoFirst));
        assert_eq!(s.src_mac, StreamSpec::default().src_mac);
    }

    #[test]
    fn a_typo_names_the_key_and_line() {
        let err = SpecFile::parse("[[stream]]\nsize = 64\nsrc-prot = 5\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("src-prot") && err.contains("line 3"), "{err}");
    }

    #[test]
    fn sizes_are_checked_against_headers_and_mtu() {
        let limits = Limits::default();
        let small = StreamSpec {
            size: 63,
            ..StreamSpec::default()
        };
        assert!(matches!(
            small.resolve(&limits),
            Err(StreamError::SizeTooSmall { .. })
        ));
        let big = StreamSpec {
            size: 1519,
            ..StreamSpec::default()
        };
        assert!(matches!(
            big.resolve(&limits),
            Err(StreamError::SizeOverMtu { .. })
        ));
        let tagged = StreamSpec {
            size: 1522,
            vlan: Some(5),
            ..StreamSpec::default()
        };
        assert!(tagged.resolve(&limits).is_ok());
    }

    #[test]
    fn bad_values_name_the_key_the_text_and_the_form() {
        let err = |body: &str| {
            SpecFile::parse(&format!("[[stream]]\n{body}\n"), "t.toml")
                .unwrap_err()
                .to_string()
        };
        for (body, words) in [
            (
                "src-ip = \"300.1.1.1\"",
                &["src-ip", "300.1.1.1", "198.18.0.1"][..],
            ),
            (
                "dst-mac = \"02:00:00\"",
                &["dst-mac", "02:00:00", "02:00:00:00:00:01"],
            ),
            ("rate = \"fast\"", &["rate", "fast", "500Mbps"]),
            ("size-mode = \"zigzag\"", &["size-mode", "zigzag", "imix"]),
            (
                "vary = [\"src-port:up:1-2\"]",
                &["vary", "src-port:up:1-2", "inc, dec"],
            ),
            ("tcp-flags = \"SX\"", &["tcp-flags", "SX"]),
            ("payload = \"fixed:300\"", &["payload", "fixed:300"]),
        ] {
            let err = err(body);
            assert!(words.iter().all(|w| err.contains(w)), "{body}: {err}");
        }
        // An address of the other IP version is refused with the stream, not the file.
        let s = StreamSpec {
            src_ip: Some("2001:2::1".parse().unwrap()),
            ..StreamSpec::default()
        };
        let err = s.resolve(&Limits::default()).unwrap_err().to_string();
        assert!(
            err.contains("2001:2::1") && err.contains("ipv6 = true"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_address_still_means_the_port_decides() {
        let file = SpecFile::parse(
            "[[stream]]\nsrc-mac = \"\"\nsrc-ip = \"\"\ndst-ip = \"10.0.0.2\"\n",
            "t.toml",
        )
        .unwrap();
        let s = &file.streams[0];
        assert_eq!((s.src_mac, s.src_ip), (None, None));
        assert_eq!(s.dst_ip, Some("10.0.0.2".parse().unwrap()));
    }

    #[test]
    fn a_spec_written_out_reads_back_the_same() {
        let file = SpecFile::parse(
            "[[stream]]\nsrc-mac = \"02:00:00:00:00:07\"\ndst-ip = \"10.0.0.2\"\nproto = \"tcp\"\ntcp-flags = \"syn,ack\"\npayload = \"pattern:abcd\"\nsize-mode = \"inc:64-128:8\"\nvary = [\"src-port:inc:1-9:2,mask=0xf\", \"dst-ip:random:10.0.0.1-10.0.0.9\"]\nrate = \"1.5Mpps\"\n",
            "t.toml",
        )
        .unwrap();
        let text = toml::to_string(&file).unwrap();
        assert_eq!(
            SpecFile::parse(&text, "again.toml").unwrap(),
            file,
            "{text}"
        );
    }

    #[test]
    fn two_vary_on_the_same_bits_are_refused() {
        let resolve = |vary: &[&str]| {
            StreamSpec {
                vary: vary.iter().map(|v| v.parse().unwrap()).collect(),
                ..StreamSpec::default()
            }
            .resolve(&Limits::default())
        };
        // Untagged IPv4/UDP: the source port is bytes 34 and 35.
        for clash in [
            &["src-port:inc:1-9", "src-port:inc:100-200"][..],
            &["src-port:inc:1-9", "byte@35/1:inc:0-3"],
            &["dst-ip:inc:10.0.0.1-10.0.0.9", "byte@32/2:random:0-9"],
            &["byte@34/1:inc:0-3,mask=0x18", "byte@34/1:inc:0-3,mask=0x0c"],
        ] {
            let err = resolve(clash).unwrap_err().to_string();
            assert!(err.contains("both change byte 3"), "{clash:?}: {err}");
        }
        for apart in [
            &["src-port:inc:1-9", "dst-port:inc:1-9"][..],
            &[
                "src-ip:inc:10.0.0.1-10.0.0.9",
                "dst-ip:inc:10.0.0.1-10.0.0.9",
                "ip-id:inc:0-9",
            ],
            &["byte@34/1:inc:0-3,mask=0xf0", "byte@34/1:inc:0-3,mask=0x0f"],
        ] {
            assert!(resolve(apart).is_ok(), "{apart:?}");
        }
    }
}

#[cfg(test)]
mod limit_tests {
    use super::*;
    use crate::Plan;

    fn jumbo(size: usize, vary: &[&str], count: Option<u64>) -> StreamSpec {
        StreamSpec {
            size,
            vary: vary.iter().map(|v| v.parse().unwrap()).collect(),
            count,
            ..StreamSpec::default()
        }
    }

    fn check(streams: &[StreamSpec]) -> Result<(), StreamError> {
        let limits = Limits {
            mtu: 65535,
            ..Limits::default()
        };
        let resolved = streams
            .iter()
            .map(|s| s.resolve(&limits))
            .collect::<Result<Vec<_>, _>>()?;
        check_plan_size(streams, &resolved)
    }

    #[test]
    fn pre_built_bytes_are_counted_before_building() {
        // 4096 distinct frames (the port counts 1..4096) of 65553 bytes: 256 MiB.
        let err = check(&[jumbo(65553, &["src-port:inc:1-4096"], None)]).unwrap_err();
        assert!(err.to_string().contains("64 MiB"), "{err}");
        // The same cycle of 9018-byte frames is 35 MiB; a field that moves at random is patched,
        // not pre-built.
        check(&[jumbo(9018, &["src-port:inc:1-4096"], None)]).unwrap();
        check(&[jumbo(65553, &["src-port:random:1-4096"], None)]).unwrap();
        // A sequence pre-builds every counted frame: 4 × 4096 × 9014 bytes is 141 MiB.
        let sequence: Vec<_> = (0..4).map(|_| jumbo(9018, &[], Some(4096))).collect();
        assert!(check(&sequence).is_err());
        let standard: Vec<_> = (0..4).map(|_| jumbo(1518, &[], Some(4096))).collect();
        check(&standard).unwrap();
    }

    #[test]
    fn too_many_streams_are_refused_before_they_are_resolved() {
        let many = vec![
            StreamSpec {
                mode: Mode::Interleaved,
                rate: "1k".parse().unwrap(),
                ..StreamSpec::default()
            };
            MAX_STREAMS + 1
        ];
        let err = Plan::compile(&many, &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("4097 streams"), "{err}");
    }

    #[test]
    fn a_huge_stream_file_is_refused_before_toml_reads_it() {
        let tables = "[[stream]]\n".repeat(MAX_STREAMS + 1);
        let err = SpecFile::parse(&tables, "t.toml").unwrap_err().to_string();
        assert!(err.contains("4097 [[stream]] tables"), "{err}");
        let inline = format!("stream = [{}]\n", "{},".repeat(MAX_STREAMS + 1));
        let err = SpecFile::parse(&inline, "t.toml").unwrap_err().to_string();
        assert!(err.contains("4097 streams"), "{err}");
        let padding = "#".repeat(MAX_FILE_BYTES as usize);
        let err = SpecFile::parse(&format!("[[stream]]\n{padding}\n"), "big.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("larger than {MAX_FILE_BYTES} bytes")),
            "{err}"
        );
    }
}

#[cfg(test)]
mod mode_tests {
    use super::*;

    #[test]
    fn the_file_mode_reaches_every_stream() {
        let file = SpecFile::parse(
            "mode = \"interleaved\"\n[[stream]]\nname = \"a\"\nrate = \"1k\"\n[[stream]]\nname = \"b\"\nrate = \"2k\"\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(file.mode, Mode::Interleaved);
        assert!(file.streams.iter().all(|s| s.mode == Mode::Interleaved));
        let plain = SpecFile::parse("[[stream]]\n", "t.toml").unwrap();
        assert_eq!(plain.streams[0].mode, Mode::Sequence);
    }

    #[test]
    fn mode_is_a_key_of_the_file_not_of_a_stream() {
        let err = SpecFile::parse("[[stream]]\nmode = \"interleaved\"\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("mode") && err.contains("line 2"), "{err}");
        let err = SpecFile::parse("mode = \"parallel\"\n[[stream]]\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("parallel"), "{err}");
    }
}
