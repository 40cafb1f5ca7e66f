//! The template flags of `tx` (and the commands that send one stream): each one a key of the
//! stream spec, laid over the seed stream.

use std::net::{IpAddr, Ipv4Addr};

use clap::Args;
use linerate_stream::{ArpOp, Encap, Proto, SizeMode, StreamSpec, Vary};
use linerate_wire::{Mac, Payload, TcpFlags};

use super::ProtoArg;

/// The template flags. Each one is the stream-spec key of the same name (`--src-ip` is
/// `src-ip`, a test checks it), parsed by clap straight into the spec's typed value (the
/// value's `FromStr`, as a stream file reads it); [`TemplateFlags::spec`] lays the given ones
/// over the seed stream.
#[derive(Debug, Default, Args, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct TemplateFlags {
    /// Frame size in bytes, FCS included (64 puts 60 bytes on the wire buffer) [default: 64].
    #[arg(short, long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    /// fixed | inc:MIN-MAX[:STEP] | random:MIN-MAX | imix | imix:SIZExWEIGHT,… [default: fixed]
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_mode: Option<SizeMode>,
    /// Source MAC (default: the port's on an interface, else 02:00:00:00:00:01).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src_mac: Option<Mac>,
    /// Destination MAC (default: the lab's peer on a lab interface, else broadcast).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dst_mac: Option<Mac>,
    /// Source address (default: the lab's on a lab interface, else 198.18.0.1; 2001:2::1 with
    /// --ipv6).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src_ip: Option<IpAddr>,
    /// Destination address (default: the lab's peer on a lab interface, else 198.18.0.2;
    /// 2001:2::2 with --ipv6).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dst_ip: Option<IpAddr>,
    /// UDP or TCP source port; the ICMP echo id [default: 49152].
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src_port: Option<u16>,
    /// UDP or TCP destination port [default: 9].
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<u16>,
    /// 802.1Q VLAN id.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
    /// IPv6 instead of IPv4.
    #[arg(long)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ipv6: bool,
    /// Stamp the receive side's signature (flow, sequence, transmit time) into the last 18
    /// bytes of every frame; on by itself with --rx (docs/receive.md).
    #[arg(long)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub signature: bool,
    /// The header after IP [default: udp].
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proto: Option<ProtoArg>,
    /// TCP flags, e.g. SA or syn,ack (with --proto tcp) [default: S].
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_flags: Option<TcpFlags>,
    /// ARP operation, request or reply (with --proto arp) [default: request].
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arp_op: Option<ArpOp>,
    /// ARP sender hardware address (with --proto arp) [default: the source MAC].
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arp_sender_mac: Option<Mac>,
    /// ARP sender IPv4 address (with --proto arp) [default: the source address].
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arp_sender_ip: Option<Ipv4Addr>,
    /// ARP target hardware address (with --proto arp) [default: zeros in a request, the
    /// destination MAC in a reply].
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arp_target_mac: Option<Mac>,
    /// ARP target IPv4 address (with --proto arp) [default: the destination address].
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arp_target_ip: Option<Ipv4Addr>,
    /// fixed:0xAB | inc | random[:SEED] | pattern:HEX | raw:HEX [default: inc]
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Payload>,
    /// FIELD:inc|dec|random:START-END[:STEP][,mask=M] (repeatable). Fields: src-mac, dst-mac,
    /// vlan-id, src-ip, dst-ip, ip-id, ttl, src-port, dst-port, arp-sender-mac, arp-sender-ip,
    /// arp-target-mac, arp-target-ip, byte@OFFSET[/WIDTH]. Default: ip-id:inc:0-9 (ten
    /// distinct frames) when no field varies and the stream is IPv4 over UDP, TCP or ICMP.
    #[arg(long)]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vary: Vec<Vary>,
    /// Send the stream inside a tunnel: its outer headers, outermost first, e.g.
    /// ethernet/ipv4:dst=192.0.2.2/udp/vxlan:vni=100 (headers: ethernet, vlan, mpls, ipv4, ipv6,
    /// gre, nvgre, udp, vxlan, gtpv1u; docs/usage.md). The other flags describe the inner frame.
    #[arg(long, value_name = "HEADER[:KEY=VALUE,…]/…")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encap: Option<Encap>,
}

/// Flags that do not go together; a usage error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FlagsError(pub &'static str);

impl TemplateFlags {
    /// The flags given, by name.
    pub fn given(&self) -> Vec<String> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// The one stream the flags describe: the seed stream (or, when a field varies or the stream
    /// is IPv6, the plain default) with every given flag set on its key.
    pub fn spec(&self) -> Result<StreamSpec, FlagsError> {
        if self.tcp_flags.is_some() && self.proto != Some(ProtoArg::Tcp) {
            return Err(FlagsError(
                "--tcp-flags sets the flags of a TCP header: add --proto tcp",
            ));
        }
        // The seed's ten distinct frames come from the IPv4 identification; IPv6 has none, so
        // an IPv6, ARP or Ethernet-only stream without --vary repeats one frame.
        let no_ip = matches!(self.proto, Some(ProtoArg::Arp | ProtoArg::Ethernet));
        let base = if self.vary.is_empty() && !self.ipv6 && !no_ip {
            StreamSpec::seed()
        } else {
            StreamSpec::default()
        };
        let proto = self.proto.map(|p| match p {
            ProtoArg::Udp => Proto::Udp,
            ProtoArg::Tcp => Proto::Tcp,
            ProtoArg::Icmp => Proto::Icmp,
            ProtoArg::Arp => Proto::Arp,
            ProtoArg::Ip => Proto::Ip,
            ProtoArg::Ethernet => Proto::Ethernet,
        });
        Ok(StreamSpec {
            size: self.size.unwrap_or(base.size),
            size_mode: self.size_mode.clone().unwrap_or(base.size_mode),
            src_mac: self.src_mac.or(base.src_mac),
            dst_mac: self.dst_mac.or(base.dst_mac),
            src_ip: self.src_ip.or(base.src_ip),
            dst_ip: self.dst_ip.or(base.dst_ip),
            src_port: self.src_port.unwrap_or(base.src_port),
            dst_port: self.dst_port.unwrap_or(base.dst_port),
            vlan: self.vlan.or(base.vlan),
            ipv6: self.ipv6 || base.ipv6,
            signature: self.signature || base.signature,
            proto: proto.unwrap_or(base.proto),
            tcp_flags: self.tcp_flags.unwrap_or(base.tcp_flags),
            arp_op: self.arp_op.unwrap_or(base.arp_op),
            arp_sender_mac: self.arp_sender_mac.or(base.arp_sender_mac),
            arp_sender_ip: self.arp_sender_ip.or(base.arp_sender_ip),
            arp_target_mac: self.arp_target_mac.or(base.arp_target_mac),
            arp_target_ip: self.arp_target_ip.or(base.arp_target_ip),
            payload: self.payload.clone().unwrap_or(base.payload),
            vary: if self.vary.is_empty() {
                base.vary
            } else {
                self.vary.clone()
            },
            encap: self.encap.clone().or(base.encap),
            ..base
        })
    }
}
