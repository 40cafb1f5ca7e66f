//! The lab's rtnetlink client: links, addresses, neighbours, routes, the bridge and qdiscs as
//! netlink messages (netlink-packet-route) on a plain blocking socket (netlink-sys).
//!
//! Synchronous on purpose, not the `rtnetlink` crate: that one is async and needs a tokio
//! runtime (only `linerate serve` runs one; the lab is used from plain threads by every command
//! and test), while the lab sends a few dozen requests once per `lab up`, one at a time, each
//! waiting for its acknowledgement — a send and a receive loop. Neither crate describes the tbf
//! or pfifo options, so those are encoded here from the kernel's uapi `pkt_sched.h`
//! ([`tbf_options`], [`pfifo_options`]).
//!
//! A netlink socket acts in the network namespace it was created in, whatever thread uses it
//! later: [`Rtnl::open`] creates it on a short-lived thread that entered the namespace with
//! setns(2), and the lab's thread keeps its own namespace.

use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::{AsRawFd, BorrowedFd};

use netlink_packet_core::{
    DefaultNla, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST, NetlinkHeader,
    NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressMessage};
use netlink_packet_route::link::{
    InfoBridge, InfoData, InfoKind, InfoMacVlan, InfoVeth, LinkAttribute, LinkFlags, LinkInfo,
    LinkMessage, MacVlanMode,
};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcMessage};
use netlink_packet_route::{AddressFamily, neighbour::NeighbourHeader};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

use super::in_netns;
use crate::LabError;

/// `TCA_OPTIONS` of `enum { TCA_UNSPEC, TCA_KIND, TCA_OPTIONS, … }` (rtnetlink.h).
const TCA_OPTIONS: u16 = 2;
/// `enum { TCA_TBF_UNSPEC, TCA_TBF_PARMS, TCA_TBF_RTAB, TCA_TBF_PTAB, TCA_TBF_RATE64,
/// TCA_TBF_PRATE64, TCA_TBF_BURST, … }` (pkt_sched.h).
const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RATE64: u16 = 4;
const TCA_TBF_BURST: u16 = 6;
/// `TC_LINKLAYER_ETHERNET` (pkt_sched.h).
const TC_LINKLAYER_ETHERNET: u8 = 1;
/// The kernel's packet scheduler tick: `PSCHED_SHIFT` = 6, one tick is 64 ns (pkt_sched.h).
const PSCHED_TICK_NS: u128 = 64;
/// `NLMSGERR_ATTR_MSG` (netlink.h): the extended acknowledgement's text.
const NLMSGERR_ATTR_MSG: u16 = 1;

/// What tbf is asked for, in the kernel's units: bytes per second and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tbf {
    /// Bytes per second.
    pub rate: u64,
    /// Bytes that may leave at once (the bucket).
    pub burst: u32,
    /// Bytes the queue holds.
    pub limit: u32,
}

/// The `TCA_OPTIONS` payload of a tbf qdisc: `TCA_TBF_PARMS` (`struct tc_tbf_qopt`),
/// `TCA_TBF_BURST` and, for rates of 2^32 bytes/s and more, `TCA_TBF_RATE64`, as tc sends them.
///
/// No rate table (`TCA_TBF_RTAB`): the kernel reads one only for a rate of link layer
/// `TC_LINKLAYER_UNAWARE`; with `TC_LINKLAYER_ETHERNET` (what tc sets) it computes the time of
/// each length itself (`psched_ratecfg_precompute`), and with `TCA_TBF_BURST` it derives the
/// bucket from the burst in bytes. So the table's fields of the ratespec (`cell_log`,
/// `cell_align`) stay zero.
pub(crate) fn tbf_options(tbf: Tbf) -> Vec<u8> {
    let mut parms = Vec::with_capacity(36);
    // struct tc_ratespec rate: cell_log, linklayer, overhead, cell_align, mpu, rate.
    parms.push(0);
    parms.push(TC_LINKLAYER_ETHERNET);
    parms.extend(0u16.to_ne_bytes());
    parms.extend(0i16.to_ne_bytes());
    parms.extend(0u16.to_ne_bytes());
    parms.extend(u32::try_from(tbf.rate).unwrap_or(u32::MAX).to_ne_bytes());
    // struct tc_ratespec peakrate: none.
    parms.extend([0; 12]);
    parms.extend(tbf.limit.to_ne_bytes());
    // The bucket as the time the burst takes at the rate, in scheduler ticks.
    let buffer_ns = u128::from(tbf.burst) * 1_000_000_000 / u128::from(tbf.rate.max(1));
    let buffer = u32::try_from(buffer_ns / PSCHED_TICK_NS).unwrap_or(u32::MAX);
    parms.extend(buffer.to_ne_bytes());
    // mtu: the peak rate's bucket, none.
    parms.extend(0u32.to_ne_bytes());
    let mut options = nla(TCA_TBF_PARMS, &parms);
    options.extend(nla(TCA_TBF_BURST, &tbf.burst.to_ne_bytes()));
    if tbf.rate >= 1 << 32 {
        options.extend(nla(TCA_TBF_RATE64, &tbf.rate.to_ne_bytes()));
    }
    options
}

/// The `TCA_OPTIONS` payload of a pfifo qdisc: `struct tc_fifo_qopt { __u32 limit; }` in frames,
/// bare (not an attribute: fifo_init reads the option's data as the struct).
pub(crate) fn pfifo_options(limit: u32) -> Vec<u8> {
    limit.to_ne_bytes().to_vec()
}

/// One netlink attribute: length, type, value, padded to 4 bytes.
fn nla(kind: u16, value: &[u8]) -> Vec<u8> {
    let len = 4 + value.len();
    let mut out = Vec::with_capacity(len.next_multiple_of(4));
    out.extend(
        u16::try_from(len)
            .expect("attribute under 64 KiB")
            .to_ne_bytes(),
    );
    out.extend(kind.to_ne_bytes());
    out.extend(value);
    out.resize(len.next_multiple_of(4), 0);
    out
}

/// What the kernel answered to a refused request.
#[derive(Debug)]
struct Refusal {
    errno: i32,
    /// The extended acknowledgement's text ("Error: Unknown device type."), when it sent one.
    message: Option<String>,
}

impl Refusal {
    fn io(e: &io::Error) -> Refusal {
        Refusal {
            errno: e.raw_os_error().unwrap_or(libc::EIO),
            message: None,
        }
    }

    /// The lab's error for this refusal of `what`; `missing` says what to do when the errno
    /// means the kernel lacks the feature asked for.
    fn into_error(self, what: String, missing: Option<(i32, String)>) -> LabError {
        if matches!(self.errno, libc::EPERM | libc::EACCES) {
            return LabError::NotRoot { what };
        }
        let errno = nix::errno::Errno::from_raw(self.errno);
        // The kernel's sentence with the errno's name, or the errno's description alone.
        let said = match self.message {
            Some(m) => format!("{} ({errno:?})", m.trim_end_matches('.')),
            None => errno.desc().to_owned(),
        };
        let reason = match missing {
            Some((errno, hint)) if errno == self.errno => format!("{said}: {hint}"),
            _ => said,
        };
        LabError::Netlink { what, reason }
    }
}

/// A route netlink socket bound to one network namespace.
#[derive(Debug)]
pub(crate) struct Rtnl {
    socket: Socket,
    sequence: u32,
    /// For messages: " in <netns>" or nothing.
    place: String,
}

impl Rtnl {
    /// A socket acting in `netns` (None: the caller's namespace).
    pub(crate) fn open(netns: Option<&str>) -> Result<Rtnl, LabError> {
        let place = netns.map(|ns| format!(" in {ns}")).unwrap_or_default();
        let what = format!("opening a route netlink socket{place}");
        let make = || -> Result<Socket, LabError> {
            let fail = |e: io::Error| LabError::Io {
                what: what.clone(),
                source: e,
            };
            let mut socket = Socket::new(NETLINK_ROUTE).map_err(fail)?;
            socket.bind_auto().map_err(fail)?;
            socket.connect(&SocketAddr::new(0, 0)).map_err(fail)?;
            // Errors carry the kernel's own sentence, and echo only the request's header.
            let _ = socket.set_ext_ack(true);
            let _ = socket.set_cap_ack(true);
            Ok(socket)
        };
        let socket = match netns {
            None => make()?,
            Some(ns) => in_netns(ns, make)?,
        };
        Ok(Rtnl {
            socket,
            sequence: 0,
            place,
        })
    }

    /// Sends one request and returns the messages the kernel answered before its acknowledgement.
    fn call(
        &mut self,
        message: RouteNetlinkMessage,
        flags: u16,
    ) -> Result<Vec<RouteNetlinkMessage>, Refusal> {
        self.sequence = self.sequence.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        header.sequence_number = self.sequence;
        let mut packet = NetlinkMessage::new(header, NetlinkPayload::from(message));
        packet.finalize();
        let mut buf = vec![0; packet.buffer_len()];
        packet.serialize(&mut buf);
        self.socket.send(&buf, 0).map_err(|e| Refusal::io(&e))?;
        let mut replies = Vec::new();
        loop {
            let (data, _) = self.socket.recv_from_full().map_err(|e| Refusal::io(&e))?;
            let mut offset = 0;
            while offset + 16 <= data.len() {
                let length = u32::from_ne_bytes(data[offset..offset + 4].try_into().expect("4"));
                let length = length as usize;
                if length < 16 || offset + length > data.len() {
                    break;
                }
                let chunk = &data[offset..offset + length];
                offset += length.next_multiple_of(4);
                let reply =
                    NetlinkMessage::<RouteNetlinkMessage>::deserialize(chunk).map_err(|e| {
                        Refusal {
                            errno: libc::EBADMSG,
                            message: Some(format!("unreadable netlink answer: {e}")),
                        }
                    })?;
                if reply.header.sequence_number != self.sequence {
                    continue;
                }
                match reply.payload {
                    NetlinkPayload::Error(e) => {
                        return match e.code {
                            None => Ok(replies),
                            Some(code) => Err(Refusal {
                                errno: -code.get(),
                                message: ext_ack_message(&e.header),
                            }),
                        };
                    }
                    NetlinkPayload::Done(_) => return Ok(replies),
                    NetlinkPayload::InnerMessage(m) => replies.push(m),
                    _ => {}
                }
            }
        }
    }

    /// The kernel's description of link `name`.
    fn link(&mut self, name: &str) -> Result<LinkMessage, LabError> {
        let mut request = LinkMessage::default();
        request.attributes.push(LinkAttribute::IfName(name.into()));
        let what = format!("looking up interface {name}{}", self.place);
        let replies = self
            .call(RouteNetlinkMessage::GetLink(request), 0)
            .map_err(|r| r.into_error(what.clone(), None))?;
        replies
            .into_iter()
            .find_map(|m| match m {
                RouteNetlinkMessage::NewLink(link) => Some(link),
                _ => None,
            })
            .ok_or_else(|| LabError::Netlink {
                what,
                reason: "the kernel answered without the link".into(),
            })
    }

    /// The index of link `name`.
    pub(crate) fn ifindex(&mut self, name: &str) -> Result<u32, LabError> {
        Ok(self.link(name)?.header.index)
    }

    /// The MAC address of link `name`.
    pub(crate) fn mac(&mut self, name: &str) -> Result<[u8; 6], LabError> {
        let link = self.link(name)?;
        link.attributes
            .iter()
            .find_map(|a| match a {
                LinkAttribute::Address(mac) => <[u8; 6]>::try_from(mac.as_slice()).ok(),
                _ => None,
            })
            .ok_or_else(|| LabError::Netlink {
                what: format!("reading the MAC address of {name}{}", self.place),
                reason: "the link has no Ethernet address".into(),
            })
    }

    /// `ip link add NAME [numtxqueues Q numrxqueues Q] type veth peer name PEER [netns NS] …`:
    /// the peer is created in the namespace `peer_netns` is a handle of (None: this socket's).
    pub(crate) fn add_veth(
        &mut self,
        name: &str,
        peer: &str,
        queues: Option<u32>,
        peer_netns: Option<BorrowedFd<'_>>,
    ) -> Result<(), LabError> {
        let with_queues = |mut attributes: Vec<LinkAttribute>| {
            if let Some(q) = queues {
                attributes.extend([LinkAttribute::NumTxQueues(q), LinkAttribute::NumRxQueues(q)]);
            }
            attributes
        };
        let mut peer_message = LinkMessage::default();
        peer_message.attributes = with_queues(vec![LinkAttribute::IfName(peer.into())]);
        if let Some(fd) = peer_netns {
            peer_message
                .attributes
                .push(LinkAttribute::NetNsFd(fd.as_raw_fd()));
        }
        let mut request = LinkMessage::default();
        request.attributes = with_queues(vec![LinkAttribute::IfName(name.into())]);
        request.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Veth),
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer_message))),
        ]));
        self.call(
            RouteNetlinkMessage::NewLink(request),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map_err(|r| {
            r.into_error(
                format!("creating the veth pair {name} / {peer}{}", self.place),
                Some((
                    libc::EOPNOTSUPP,
                    "the kernel has no veth driver: load it (`modprobe veth`) or build it in (CONFIG_VETH)"
                        .into(),
                )),
            )
        })?;
        Ok(())
    }

    /// `ip link add link LOWER name NAME address MAC type macvlan mode vepa netns NS`: a macvlan
    /// of this socket's `lower`, made directly in the namespace `netns` is a handle of. VEPA:
    /// even a frame for another macvlan of the same port leaves by the wire, as a device's
    /// would.
    pub(crate) fn add_macvlan(
        &mut self,
        lower: &str,
        name: &str,
        mac: [u8; 6],
        netns: BorrowedFd<'_>,
    ) -> Result<(), LabError> {
        let index = self.ifindex(lower)?;
        let mut request = LinkMessage::default();
        request.attributes = vec![
            LinkAttribute::IfName(name.into()),
            LinkAttribute::Link(index),
            LinkAttribute::Address(mac.to_vec()),
            LinkAttribute::NetNsFd(netns.as_raw_fd()),
            LinkAttribute::LinkInfo(vec![
                LinkInfo::Kind(InfoKind::MacVlan),
                LinkInfo::Data(InfoData::MacVlan(vec![InfoMacVlan::Mode(
                    MacVlanMode::Vepa,
                )])),
            ]),
        ];
        self.call(
            RouteNetlinkMessage::NewLink(request),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map_err(|r| {
            r.into_error(
                format!("creating the macvlan {name} of {lower}{}", self.place),
                Some((
                    libc::EOPNOTSUPP,
                    "the kernel has no macvlan driver: load it (`modprobe macvlan`) or build it in (CONFIG_MACVLAN)"
                        .into(),
                )),
            )
        })?;
        Ok(())
    }

    /// `ip link add NAME type bridge mcast_snooping 0`.
    pub(crate) fn add_bridge_without_snooping(&mut self, name: &str) -> Result<(), LabError> {
        let mut request = LinkMessage::default();
        request.attributes = vec![
            LinkAttribute::IfName(name.into()),
            LinkAttribute::LinkInfo(vec![
                LinkInfo::Kind(InfoKind::Bridge),
                LinkInfo::Data(InfoData::Bridge(vec![InfoBridge::MulticastSnooping(false)])),
            ]),
        ];
        self.call(
            RouteNetlinkMessage::NewLink(request),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map_err(|r| {
            r.into_error(
                format!("creating the bridge {name}{}", self.place),
                Some((
                    libc::EOPNOTSUPP,
                    "the kernel has no bridge driver: load it (`modprobe bridge`) or build it in (CONFIG_BRIDGE)"
                        .into(),
                )),
            )
        })?;
        Ok(())
    }

    /// Changes link `name`: sets `attributes` and turns `flags` on (the change mask names only
    /// them, so other flags stay as they are), as `ip link set` does.
    fn set_link(
        &mut self,
        name: &str,
        what: String,
        attributes: Vec<LinkAttribute>,
        flags: LinkFlags,
    ) -> Result<(), LabError> {
        self.change_link(name, what, attributes, flags, flags)
    }

    /// Changes link `name`: sets `attributes`, and the `mask` flags to those of `flags`.
    fn change_link(
        &mut self,
        name: &str,
        what: String,
        attributes: Vec<LinkAttribute>,
        flags: LinkFlags,
        mask: LinkFlags,
    ) -> Result<(), LabError> {
        let mut request = LinkMessage::default();
        request.header.flags = flags;
        request.header.change_mask = mask;
        request.attributes = attributes;
        request.attributes.push(LinkAttribute::IfName(name.into()));
        self.call(RouteNetlinkMessage::NewLink(request), 0)
            .map_err(|r| r.into_error(what, None))?;
        Ok(())
    }

    /// `ip link set dev NAME alias ALIAS`.
    pub(crate) fn set_alias(&mut self, name: &str, alias: &str) -> Result<(), LabError> {
        let what = format!("setting the alias of {name}{}", self.place);
        self.set_link(
            name,
            what,
            vec![LinkAttribute::IfAlias(alias.into())],
            LinkFlags::empty(),
        )
    }

    /// `ip link set dev NAME up`.
    pub(crate) fn set_up(&mut self, name: &str) -> Result<(), LabError> {
        let what = format!("bringing {name} up{}", self.place);
        self.set_link(name, what, Vec::new(), LinkFlags::Up)
    }

    /// `ip link set dev NAME down`.
    pub(crate) fn set_down(&mut self, name: &str) -> Result<(), LabError> {
        let what = format!("taking {name} down{}", self.place);
        self.change_link(name, what, Vec::new(), LinkFlags::empty(), LinkFlags::Up)
    }

    /// `ip link set dev PORT master BRIDGE`.
    pub(crate) fn set_master(&mut self, port: &str, bridge: &str) -> Result<(), LabError> {
        let index = self.ifindex(bridge)?;
        let what = format!("adding {port} to the bridge {bridge}{}", self.place);
        self.set_link(
            port,
            what,
            vec![LinkAttribute::Controller(index)],
            LinkFlags::empty(),
        )
    }

    /// `ip link del dev NAME`.
    pub(crate) fn del_link(&mut self, name: &str) -> Result<(), LabError> {
        let mut request = LinkMessage::default();
        request.attributes.push(LinkAttribute::IfName(name.into()));
        self.call(RouteNetlinkMessage::DelLink(request), 0)
            .map_err(|r| r.into_error(format!("deleting {name}{}", self.place), None))?;
        Ok(())
    }

    /// `ip addr add ADDR/PREFIX dev NAME`.
    pub(crate) fn add_address(
        &mut self,
        name: &str,
        addr: Ipv4Addr,
        prefix: u8,
    ) -> Result<(), LabError> {
        self.add_ip(name, IpAddr::V4(addr), prefix)
    }

    /// `ip addr add ADDR/PREFIX dev NAME [nodad]`: an IPv6 address is usable at once, without
    /// duplicate address detection (the port's own hosts defend it).
    pub(crate) fn add_ip(&mut self, name: &str, addr: IpAddr, prefix: u8) -> Result<(), LabError> {
        let mut request = AddressMessage::default();
        request.header.family = match addr {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        };
        request.header.prefix_len = prefix;
        request.header.index = self.ifindex(name)?;
        request.attributes = match addr {
            IpAddr::V4(_) => vec![
                AddressAttribute::Local(addr),
                AddressAttribute::Address(addr),
            ],
            IpAddr::V6(_) => vec![
                AddressAttribute::Address(addr),
                AddressAttribute::Flags(AddressFlags::Nodad),
            ],
        };
        self.call(
            RouteNetlinkMessage::NewAddress(request),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map_err(|r| {
            r.into_error(
                format!("adding {addr}/{prefix} to {name}{}", self.place),
                None,
            )
        })?;
        Ok(())
    }

    /// `ip route add NET/PREFIX dev NAME scope link proto kernel src SRC`: the route the kernel
    /// adds itself for an address's subnet, but for one in 0.0.0.0/8, where it adds none
    /// (`fib_add_ifaddr` skips a zero network).
    pub(crate) fn add_subnet_route(
        &mut self,
        name: &str,
        net: Ipv4Addr,
        prefix: u8,
        src: Ipv4Addr,
    ) -> Result<(), LabError> {
        let mut request = RouteMessage::default();
        request.header.address_family = AddressFamily::Inet;
        request.header.destination_prefix_length = prefix;
        request.header.table = RouteHeader::RT_TABLE_MAIN;
        request.header.protocol = RouteProtocol::Kernel;
        request.header.scope = RouteScope::Link;
        request.header.kind = RouteType::Unicast;
        request.attributes = vec![
            RouteAttribute::Destination(RouteAddress::Inet(net)),
            RouteAttribute::Oif(self.ifindex(name)?),
            RouteAttribute::PrefSource(RouteAddress::Inet(src)),
        ];
        self.call(
            RouteNetlinkMessage::NewRoute(request),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map_err(|r| {
            r.into_error(
                format!("adding the route to {net}/{prefix} on {name}{}", self.place),
                None,
            )
        })?;
        Ok(())
    }

    /// `ip neigh replace ADDR lladdr MAC dev NAME nud permanent`.
    pub(crate) fn set_neighbour(
        &mut self,
        name: &str,
        addr: Ipv4Addr,
        mac: [u8; 6],
    ) -> Result<(), LabError> {
        let mut request = NeighbourMessage::default();
        request.header = NeighbourHeader {
            family: AddressFamily::Inet,
            ifindex: self.ifindex(name)?,
            state: NeighbourState::Permanent,
            ..Default::default()
        };
        request.attributes = vec![
            NeighbourAttribute::Destination(NeighbourAddress::Inet(addr)),
            NeighbourAttribute::LinkLayerAddress(mac.to_vec()),
        ];
        self.call(
            RouteNetlinkMessage::NewNeighbour(request),
            NLM_F_CREATE | NLM_F_REPLACE,
        )
        .map_err(|r| {
            r.into_error(
                format!("setting the neighbour {addr} on {name}{}", self.place),
                None,
            )
        })?;
        Ok(())
    }

    /// `tc qdisc replace dev NAME parent PARENT handle HANDLE KIND OPTIONS`: `options` is the
    /// `TCA_OPTIONS` payload ([`tbf_options`], [`pfifo_options`]).
    pub(crate) fn replace_qdisc(
        &mut self,
        name: &str,
        parent: TcHandle,
        handle: TcHandle,
        kind: &str,
        options: Vec<u8>,
    ) -> Result<(), LabError> {
        let mut request = TcMessage::default();
        request.header.index = self.ifindex(name)? as i32;
        request.header.parent = parent;
        request.header.handle = handle;
        request.attributes = vec![
            TcAttribute::Kind(kind.into()),
            TcAttribute::Other(DefaultNla::new(TCA_OPTIONS, options)),
        ];
        self.call(
            RouteNetlinkMessage::NewQueueDiscipline(request),
            NLM_F_CREATE | NLM_F_REPLACE,
        )
        .map_err(|r| {
            r.into_error(
                format!("setting the {kind} qdisc on {name}{}", self.place),
                Some((
                    libc::ENOENT,
                    format!(
                        "the kernel has no {kind} qdisc: load it (`modprobe sch_{kind}`) or build it in (CONFIG_NET_SCH_{})",
                        kind.to_uppercase()
                    ),
                )),
            )
        })?;
        Ok(())
    }

    /// `tc qdisc del dev NAME root`; Ok when only the default qdisc was there.
    pub(crate) fn del_root_qdisc(&mut self, name: &str) -> Result<(), LabError> {
        let mut request = TcMessage::default();
        request.header.index = self.ifindex(name)? as i32;
        request.header.parent = TcHandle::ROOT;
        match self.call(RouteNetlinkMessage::DelQueueDiscipline(request), 0) {
            // "Cannot delete qdisc with handle of zero": the default root qdisc, nothing of ours.
            Err(r) if r.errno == libc::ENOENT || r.errno == libc::EINVAL => Ok(()),
            Err(r) => Err(r.into_error(
                format!("removing the root qdisc of {name}{}", self.place),
                None,
            )),
            Ok(_) => Ok(()),
        }
    }
}

/// The text of an extended acknowledgement: the error's payload is the request's header
/// (`NETLINK_CAP_ACK`) followed by attributes, `NLMSGERR_ATTR_MSG` among them.
fn ext_ack_message(payload: &[u8]) -> Option<String> {
    let mut rest = payload.get(16..)?;
    while rest.len() >= 4 {
        let len = u16::from_ne_bytes([rest[0], rest[1]]) as usize;
        let kind = u16::from_ne_bytes([rest[2], rest[3]]);
        if len < 4 || len > rest.len() {
            return None;
        }
        if kind == NLMSGERR_ATTR_MSG {
            let text = &rest[4..len];
            let text = text.split(|&b| b == 0).next().unwrap_or_default();
            return Some(String::from_utf8_lossy(text).trim().to_owned());
        }
        rest = rest.get(len.next_multiple_of(4)..).unwrap_or_default();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::netns_path;

    fn words(bytes: &[u8]) -> Vec<u32> {
        bytes
            .chunks(4)
            .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn tbf_options_are_tc_tbf_qopt_and_burst() {
        // 10 Mbit/s = 1,250,000 bytes/s, burst 3036 bytes (two 1518-byte frames), the queue
        // 50 ms at the rate plus the burst = 65,536 bytes.
        let options = tbf_options(Tbf {
            rate: 1_250_000,
            burst: 3036,
            limit: 65_536,
        });
        assert_eq!(options.len(), 40 + 8, "PARMS (4 + 36) and BURST (4 + 4)");
        // TCA_TBF_PARMS: length 40, type 1.
        assert_eq!(
            &options[0..4],
            &[40u16.to_ne_bytes(), 1u16.to_ne_bytes()].concat()
        );
        // struct tc_ratespec rate: cell_log 0, linklayer ethernet, overhead 0, cell_align 0,
        // mpu 0, rate.
        assert_eq!(&options[4..12], &[0, 1, 0, 0, 0, 0, 0, 0]);
        let parms = words(&options[12..44]);
        assert_eq!(parms[0], 1_250_000, "rate in bytes/s");
        assert_eq!(&parms[1..4], &[0, 0, 0], "no peak rate");
        assert_eq!(parms[4], 65_536, "limit in bytes");
        // 3036 bytes at 1.25 MB/s take 2,428,800 ns = 37,950 ticks of 64 ns.
        assert_eq!(parms[5], 37_950, "buffer in ticks");
        assert_eq!(parms[6], 0, "no peak-rate mtu");
        // TCA_TBF_BURST: length 8, type 6, 3036.
        assert_eq!(words(&options[44..48]), vec![3036]);
        assert_eq!(
            &options[40..44],
            &[8u16.to_ne_bytes(), 6u16.to_ne_bytes()].concat()
        );
    }

    #[test]
    fn tbf_rates_past_32_bits_go_in_rate64() {
        // 100 Gbit/s = 12.5e9 bytes/s: past u32, so the ratespec says u32::MAX and RATE64
        // carries the rate, as tc does.
        let rate = 12_500_000_000u64;
        let options = tbf_options(Tbf {
            rate,
            burst: 12_500_000,
            limit: 637_500_000,
        });
        assert_eq!(options.len(), 40 + 8 + 12);
        assert_eq!(words(&options[12..16]), vec![u32::MAX]);
        // 12.5 MB at 12.5 GB/s = 1 ms = 15,625 ticks.
        assert_eq!(words(&options[32..36]), vec![15_625]);
        assert_eq!(
            &options[48..52],
            &[12u16.to_ne_bytes(), 4u16.to_ne_bytes()].concat()
        );
        assert_eq!(
            u64::from_ne_bytes(options[52..60].try_into().unwrap()),
            rate
        );
    }

    #[test]
    fn pfifo_options_are_the_bare_limit() {
        assert_eq!(pfifo_options(100), 100u32.to_ne_bytes().to_vec());
    }

    #[test]
    fn attributes_pad_to_four_bytes() {
        assert_eq!(nla(9, &[1, 2, 3]), {
            let mut v = [7u16.to_ne_bytes(), 9u16.to_ne_bytes()].concat();
            v.extend([1, 2, 3, 0]);
            v
        });
    }

    #[test]
    fn extended_acks_give_their_text() {
        let mut payload = vec![0u8; 16];
        payload.extend(nla(NLMSGERR_ATTR_MSG, b"Unknown device type\0"));
        assert_eq!(
            ext_ack_message(&payload).as_deref(),
            Some("Unknown device type")
        );
        assert_eq!(ext_ack_message(&[0u8; 16]), None);
        assert_eq!(ext_ack_message(&[0u8; 3]), None);
    }

    /// `tc -n NS ARGS…`'s output: tc as an independent reader of what the kernel holds.
    fn tc_show(netns: &str, args: &[&str]) -> String {
        let out = std::process::Command::new("tc")
            .args(["-n", netns])
            .args(args)
            .output()
            .expect("tc (iproute2) runs");
        assert!(out.status.success(), "tc {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Root: a namespace made and removed natively, a veth pair inside, tbf and pfifo as `tc`
    /// reads them back, and a qdisc the kernel lacks refused in one line that says what to do.
    #[test]
    fn qdiscs_as_tc_reads_them_and_a_missing_one_in_one_line() {
        if !crate::root_or_skip("qdiscs_as_tc_reads_them_and_a_missing_one_in_one_line") {
            return;
        }
        let ns = format!("{}-nl", crate::unique_name("q"));
        struct Remove(String);
        impl Drop for Remove {
            fn drop(&mut self) {
                let _ = super::super::netns::del(&self.0);
            }
        }
        super::super::netns::add(&ns).expect("netns add");
        let _remove = Remove(ns.clone());
        let mut rtnl = Rtnl::open(Some(&ns)).expect("netlink socket in the namespace");
        rtnl.add_veth("nla", "nlb", Some(2), None).expect("veth");
        rtnl.set_up("nla").expect("up");
        assert_ne!(rtnl.mac("nla").unwrap(), rtnl.mac("nlb").unwrap());
        rtnl.add_veth("nlc", "nld", Some(2), None).expect("veth");
        let root = TcHandle { major: 1, minor: 0 };
        let detailed = |dev: &str| tc_show(&ns, &["-d", "-r", "qdisc", "show", "dev", dev]);
        // What tc makes of the same figures, on the other pair, read back in detail (the
        // bucket in ticks, the limit, the link layer) must match what ours made, line for line.
        for (rate, burst, limit) in [
            (1_250_000u64, 3036u32, 65_536u32),
            (12_500_000_000, 12_500_000, 637_500_000),
        ] {
            rtnl.replace_qdisc(
                "nla",
                TcHandle::ROOT,
                root,
                "tbf",
                tbf_options(Tbf { rate, burst, limit }),
            )
            .expect("tbf");
            tc_show(
                &ns,
                &[
                    "qdisc",
                    "replace",
                    "dev",
                    "nlc",
                    "root",
                    "handle",
                    "1:",
                    "tbf",
                    "rate",
                    &format!("{}bit", rate * 8),
                    "burst",
                    &burst.to_string(),
                    "limit",
                    &limit.to_string(),
                ],
            );
            let (ours, theirs) = (detailed("nla"), detailed("nlc"));
            assert!(ours.contains("qdisc tbf 1:"), "{ours}");
            assert_eq!(ours, theirs, "rate {rate} B/s");
        }
        rtnl.replace_qdisc(
            "nla",
            TcHandle { major: 1, minor: 1 },
            TcHandle {
                major: 0x10,
                minor: 0,
            },
            "pfifo",
            pfifo_options(100),
        )
        .expect("pfifo under tbf");
        let shown = tc_show(&ns, &["qdisc", "show", "dev", "nla"]);
        assert!(
            shown.contains("qdisc pfifo 10: parent 1:1 limit 100p"),
            "{shown}"
        );
        rtnl.del_root_qdisc("nla").expect("del root");
        let shown = tc_show(&ns, &["qdisc", "show", "dev", "nla"]);
        assert!(
            !shown.contains("tbf") && !shown.contains("pfifo"),
            "{shown}"
        );
        rtnl.del_root_qdisc("nla")
            .expect("deleting the default root qdisc is no error");

        let err = rtnl
            .replace_qdisc("nla", TcHandle::ROOT, root, "nosuchq", Vec::new())
            .expect_err("no such qdisc");
        let text = err.to_string();
        assert!(matches!(err, LabError::Netlink { .. }), "{err:?}");
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("`modprobe sch_nosuchq`"), "{text}");
        assert!(text.contains("(ENOENT)"), "{text}");

        drop(rtnl);
        drop(_remove);
        assert!(!netns_path(&ns).exists(), "namespace {ns} left");
    }
}
