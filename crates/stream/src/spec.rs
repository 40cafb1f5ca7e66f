use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use linerate_wire::{
    FrameSpec, IpSpec, L4Spec, MacAddr, Payload, TcpFlags, VlanTag, parse_mac, units,
};
use serde::{Deserialize, Serialize};

use crate::{Rate, SizeMode, StreamError, VarySpec};

/// Layer 4 of the template frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    #[default]
    Udp,
    Tcp,
    Icmp,
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
    pub frames: u64,
    pub per_second: f64,
}

/// One stream as a person writes it. CLI flags and a `[[stream]]` table of a TOML file fill
/// the same struct, so both go through the same validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct StreamSpec {
    pub name: String,
    /// Empty: the port's own MAC, else 02:00:00:00:00:01.
    pub src_mac: String,
    /// Empty: the port fills it in (the lab's peer MAC), else broadcast.
    pub dst_mac: String,
    pub vlan: Option<u16>,
    pub vlan_pcp: u8,
    pub ipv6: bool,
    /// Empty: the lab's addresses on a lab, else 198.18.0.1 / 198.18.0.2 and 2001:2::1 /
    /// 2001:2::2 (the RFC 2544 / RFC 5180 benchmarking ranges).
    pub src_ip: String,
    pub dst_ip: String,
    pub ttl: u8,
    pub ip_id: u16,
    pub dscp: u8,
    pub proto: Proto,
    pub src_port: u16,
    pub dst_port: u16,
    pub tcp_flags: String,
    pub payload: String,
    /// Frame size, FCS included.
    pub size: usize,
    /// `fixed`, `inc:MIN-MAX[:STEP]`, `random:MIN-MAX`, `imix`, `imix:SIZExWEIGHT,…`.
    pub size_mode: String,
    /// `FIELD:MODE:START-END[:STEP][,mask=M]`, applied in order.
    pub vary: Vec<String>,
    /// Frames this stream sends before `next`; none means it never ends by itself.
    pub count: Option<u64>,
    pub next: Next,
    /// How many times `goto-first` loops before stopping (none: forever).
    pub loops: Option<u64>,
    pub bursts: Option<Bursts>,
    /// `max`, `1.5M` (frames/s), `500Mbps` (L2), `1Gbps-l1` (L1), `50%` (of line rate).
    pub rate: String,
    /// Seed for random payloads, random sizes and random fields.
    pub seed: u64,
    /// Stamp the receive side's signature (flow id, sequence, transmit time) into the last 18
    /// bytes of every frame (`linerate_wire::signature`).
    pub signature: bool,
    /// Copied from the file's top-level `mode`; not a key of a `[[stream]]` table.
    #[serde(skip)]
    pub mode: Mode,
}

impl Default for StreamSpec {
    fn default() -> Self {
        Self {
            name: "stream0".into(),
            src_mac: String::new(),
            dst_mac: String::new(),
            vlan: None,
            vlan_pcp: 0,
            ipv6: false,
            src_ip: String::new(),
            dst_ip: String::new(),
            ttl: 64,
            ip_id: 0,
            dscp: 0,
            proto: Proto::Udp,
            src_port: 49152,
            dst_port: 9,
            tcp_flags: "S".into(),
            payload: "inc".into(),
            size: 64,
            size_mode: "fixed".into(),
            vary: Vec::new(),
            count: None,
            next: Next::Stop,
            loops: None,
            bursts: None,
            rate: "max".into(),
            seed: 1,
            signature: false,
            mode: Mode::Sequence,
        }
    }
}

impl StreamSpec {
    /// The seed stream: Ethernet II, IPv4, UDP, incrementing payload, 10 distinct frames (the IP
    /// identification counts 0..9), then back to the first.
    pub fn seed() -> Self {
        Self {
            vary: vec!["ip-id:inc:0-9".into()],
            ..Self::default()
        }
    }

    /// Checks everything that can be checked without a port, and turns the text fields into
    /// the wire crate's values.
    pub(crate) fn resolve(&self, limits: &Limits) -> Result<Resolved, StreamError> {
        let invalid = |why: String| StreamError::Invalid {
            stream: self.name.clone(),
            why,
        };
        let src_mac = match (self.src_mac.as_str(), limits.default_src_mac) {
            ("", Some(mac)) => mac,
            ("", None) => [0x02, 0, 0, 0, 0, 0x01],
            (text, _) => parse_mac(text)?,
        };
        let dst_mac = match (self.dst_mac.as_str(), limits.default_dst_mac) {
            ("", Some(mac)) => mac,
            ("", None) => [0xff; 6],
            (text, _) => parse_mac(text)?,
        };
        let ip = if self.ipv6 {
            IpSpec::V6 {
                src: parse_ip6(
                    &self.src_ip,
                    Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 1),
                    "src-ip",
                )?,
                dst: parse_ip6(
                    &self.dst_ip,
                    Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 2),
                    "dst-ip",
                )?,
                hop_limit: self.ttl,
                flow_label: 0,
            }
        } else {
            IpSpec::V4 {
                src: parse_ip4(&self.src_ip, limits.default_ipv4.0, "src-ip")?,
                dst: parse_ip4(&self.dst_ip, limits.default_ipv4.1, "dst-ip")?,
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
                flags: TcpFlags::parse(&self.tcp_flags)?,
                window: 65535,
            },
            Proto::Icmp => L4Spec::IcmpEcho {
                id: self.src_port,
                seq: 0,
            },
        };
        let vlan = self.vlan.map(|id| VlanTag {
            id,
            pcp: self.vlan_pcp,
        });
        if self.vlan.is_some_and(|id| id > 4095) {
            return Err(invalid(format!(
                "VLAN id {} is over 4095",
                self.vlan.unwrap_or(0)
            )));
        }
        let frame = FrameSpec {
            src_mac,
            dst_mac,
            vlan,
            ip,
            l4,
            payload: Payload::parse(&self.payload)?,
        };
        let sizes = SizeMode::parse(&self.size_mode, self.size)?;
        let min = frame.min_frame_size();
        if sizes.min() < min {
            return Err(StreamError::SizeTooSmall {
                size: sizes.min(),
                min,
            });
        }
        let max = units::max_frame_size(limits.mtu, usize::from(self.vlan.is_some()));
        if sizes.max() > max {
            return Err(StreamError::SizeOverMtu {
                size: sizes.max(),
                max,
                mtu: limits.mtu,
                hint: limits.mtu_hint,
            });
        }
        let vary = self
            .vary
            .iter()
            .map(|v| VarySpec::parse(v, self.ipv6))
            .collect::<Result<Vec<_>, _>>()?;
        crate::vary::check_overlaps(&vary, &frame.layout(sizes.min())).map_err(invalid)?;
        if self.count == Some(0) {
            return Err(invalid(
                "count 0 sends nothing; leave it out to send until stopped".into(),
            ));
        }
        if self.loops == Some(0) {
            return Err(invalid("loops 0 sends nothing".into()));
        }
        let rate = Rate::parse(&self.rate)?;
        if let Some(b) = self.bursts
            && (b.frames == 0 || b.per_second <= 0.0 || !b.per_second.is_finite())
        {
            return Err(invalid("bursts need frames ≥ 1 and per-second > 0".into()));
        }
        if let Some(b) = self.bursts
            && b.frames > crate::CACHE_LIMIT
        {
            return Err(invalid(format!(
                "a burst of {} frames is over the {} a schedule holds",
                b.frames,
                crate::CACHE_LIMIT
            )));
        }
        Ok(Resolved {
            frame,
            sizes,
            vary,
            rate,
        })
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
    pub frame: FrameSpec,
    pub sizes: SizeMode,
    pub vary: Vec<VarySpec>,
    pub rate: Rate,
}

/// What the port imposes on a stream.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub mtu: u32,
    /// Said after a too-large size, e.g. how to raise the limit for this backend.
    pub mtu_hint: &'static str,
    /// Source MAC when the spec leaves it empty (the port's own).
    pub default_src_mac: Option<MacAddr>,
    /// Destination MAC when the spec leaves it empty (a lab's peer).
    pub default_dst_mac: Option<MacAddr>,
    /// IPv4 source and destination when the spec leaves them empty.
    pub default_ipv4: (Ipv4Addr, Ipv4Addr),
    /// The link's speed in Mbit/s, when known: rates in % need it, and no rate may exceed it.
    pub link_mbps: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            mtu: 1500,
            mtu_hint: "",
            default_src_mac: None,
            default_dst_mac: None,
            default_ipv4: (Ipv4Addr::new(198, 18, 0, 1), Ipv4Addr::new(198, 18, 0, 2)),
            link_mbps: None,
        }
    }
}

fn parse_ip4(text: &str, default: Ipv4Addr, what: &str) -> Result<Ipv4Addr, StreamError> {
    if text.is_empty() {
        return Ok(default);
    }
    match text.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => Ok(a),
        Ok(IpAddr::V6(_)) => Err(StreamError::Invalid {
            stream: what.into(),
            why: format!("'{text}' is IPv6 but the stream is IPv4: add --ipv6"),
        }),
        Err(_) => Err(StreamError::Invalid {
            stream: what.into(),
            why: format!("'{text}' is not an IPv4 address (form: 198.18.0.1)"),
        }),
    }
}

fn parse_ip6(text: &str, default: Ipv6Addr, what: &str) -> Result<Ipv6Addr, StreamError> {
    if text.is_empty() {
        return Ok(default);
    }
    text.parse::<Ipv6Addr>().map_err(|_| StreamError::Invalid {
        stream: what.into(),
        why: format!("'{text}' is not an IPv6 address (form: 2001:2::1)"),
    })
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
            why: e.message().to_owned()
                + &e.span()
                    .map(|s| format!(" (at line {})", line_of(text, s.start)))
                    .unwrap_or_default(),
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
        Ok(file)
    }

    pub fn load(path: &Path) -> Result<Self, StreamError> {
        use std::io::Read;
        let fail = |why: String| StreamError::File {
            path: path.display().to_string(),
            why,
        };
        let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
        // One byte past the limit is enough to refuse, whatever the file (a pipe has no length).
        let mut text = String::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| fail(e.to_string()))?;
        Self::parse(&text, &path.display().to_string())
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn bad_addresses_say_what_form_is_expected() {
        let s = StreamSpec {
            src_ip: "300.1.1.1".into(),
            ..StreamSpec::default()
        };
        let err = s.resolve(&Limits::default()).unwrap_err().to_string();
        assert!(
            err.contains("300.1.1.1") && err.contains("198.18.0.1"),
            "{err}"
        );
        let s = StreamSpec {
            dst_mac: "02:00:00".into(),
            ..StreamSpec::default()
        };
        assert!(s.resolve(&Limits::default()).is_err());
    }

    #[test]
    fn two_vary_on_the_same_bits_are_refused() {
        let resolve = |vary: &[&str]| {
            StreamSpec {
                vary: vary.iter().map(|v| v.to_string()).collect(),
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
            vary: vary.iter().map(|v| v.to_string()).collect(),
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
                rate: "1k".into(),
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
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.toml");
        let padding = "#".repeat(MAX_FILE_BYTES as usize);
        std::fs::write(&path, format!("[[stream]]\n{padding}\n")).unwrap();
        let err = SpecFile::load(&path).unwrap_err().to_string();
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
