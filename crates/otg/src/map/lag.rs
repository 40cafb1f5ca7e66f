//! `lags[]`: each LAG becomes a [`LagSpec`] that linerate's own LACP runs (`linerate-lacp`),
//! and a port flow whose `tx_name` or `rx_names` names a LAG runs on one of its members, chosen
//! by a hash of the flow's name. What LACP here does not do is refused by path.

use std::time::Duration;

use linerate_lacp::{LagSpec, MemberLacp, MemberSpec, Protocol};
use serde_json::Value;

use super::{Cx, HostPlan, PortPlan, int};
use crate::lag::*;
use crate::model::Flow;

pub(super) fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let parts: Vec<u8> = text
        .split([':', '-'])
        .map(|p| {
            let hex = p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit());
            if hex {
                u8::from_str_radix(p, 16).ok()
            } else {
                None
            }
        })
        .collect::<Option<_>>()?;
    parts.try_into().ok()
}

/// Which of `n` members a flow named `flow` runs on: FNV-1a of its name, so a flow keeps its
/// member from one set_config to the next.
pub(super) fn member_of(flow: &str, n: usize) -> usize {
    let h = flow.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (h % n.max(1) as u64) as usize
}

/// The member of each LAG of `ends` a flow named `flow` runs on, by index: of LAGs of as many
/// members, an index in all of them whose members are none of `out` (two LAGs wired member to
/// member keep a flow on one link); else one of each LAG's own members in; else any member.
pub(super) fn members_for(flow: &str, ends: &[&LagSpec], out: &[String]) -> Vec<usize> {
    let is_in = |l: &LagSpec, i: usize| !out.contains(&l.members[i].port);
    let n = ends.first().map_or(0, |l| l.members.len());
    let common: Vec<usize> = if ends.iter().all(|l| l.members.len() == n) {
        (0..n)
            .filter(|&i| ends.iter().all(|l| is_in(l, i)))
            .collect()
    } else {
        Vec::new()
    };
    ends.iter()
        .map(|lag| {
            let n = lag.members.len();
            let own: Vec<usize> = (0..n).filter(|&i| is_in(lag, i)).collect();
            let from = [common.clone(), own, (0..n).collect()]
                .into_iter()
                .find(|c| !c.is_empty())
                .unwrap_or_default();
            from[member_of(flow, from.len())]
        })
        .collect()
}

impl Cx {
    /// A device flow's pairs of hosts moved onto the LAG members it runs on: a host on a LAG
    /// (a device whose ethernet connects to one) stands for its sibling on each member, and
    /// the flow takes one member per LAG it leaves or arrives by, as a port flow naming the
    /// LAG does ([`members_for`]); each placement is recorded for the start's warnings.
    pub(super) fn pairs_over_lags<'h>(
        &mut self,
        flow: &str,
        pairs: Vec<(&'h HostPlan, &'h HostPlan)>,
        hosts: &'h [HostPlan],
    ) -> Vec<(&'h HostPlan, &'h HostPlan)> {
        let (from, to) = pairs[0];
        let lag = |h: &HostPlan| {
            let (name, _) = h.lag.as_ref()?;
            self.lag_specs
                .iter()
                .find(|l| &l.name == name && !l.members.is_empty())
                .cloned()
        };
        let sides: Vec<Option<LagSpec>> = vec![lag(from), lag(to)];
        let on: Vec<&LagSpec> = sides.iter().flatten().collect();
        if on.is_empty() {
            return pairs;
        }
        let mut chosen = members_for(flow, &on, &self.lag_out).into_iter();
        let mut member = [None, None];
        for (side, l) in sides.iter().enumerate() {
            if let Some(l) = l {
                let i = chosen.next().expect("one index a LAG");
                self.lag_flows.push(crate::LagFlow {
                    flow: flow.to_owned(),
                    lag: l.name.clone(),
                    port: l.members[i].port.clone(),
                });
                member[side] = Some(i);
            }
        }
        let sibling = |h: &'h HostPlan, at: Option<usize>| -> &'h HostPlan {
            let Some(i) = at else { return h };
            hosts
                .iter()
                .find(|o| {
                    o.ethernet == h.ethernet
                        && o.spec.ipv4 == h.spec.ipv4
                        && o.spec.ipv6 == h.spec.ipv6
                        && o.lag.as_ref().is_some_and(|(_, k)| *k == i)
                })
                .unwrap_or(h)
        };
        pairs
            .into_iter()
            .map(|(a, b)| (sibling(a, member[0]), sibling(b, member[1])))
            .collect()
    }

    /// An integer field of `lo..=hi` at `path`, `default` when absent.
    fn ranged(&mut self, path: String, v: &Option<Value>, default: u32, hi: u32) -> u32 {
        match v.as_ref().map(int) {
            None => default,
            Some(Some(n)) if n <= u128::from(hi) => n as u32,
            Some(_) => {
                self.refuse(path, format!("0 to {hi}"));
                default
            }
        }
    }

    /// The config's LAGs.
    pub(super) fn lags(&mut self, given: &[Lag], ports: &[PortPlan]) -> Vec<LagSpec> {
        let mut lags: Vec<LagSpec> = Vec::new();
        for (i, l) in given.iter().enumerate() {
            let path = format!("lags[{i}]");
            self.rest(&path, &l.rest);
            if l.name.is_empty() {
                self.refuse(format!("{path}.name"), "a LAG needs a name");
            } else if lags.iter().any(|m| m.name == l.name) {
                self.refuse(
                    format!("{path}.name"),
                    format!("LAG name '{}' is used twice", l.name),
                );
            } else if ports.iter().any(|p| p.name == l.name) {
                self.refuse(
                    format!("{path}.name"),
                    format!(
                        "'{}' is a port's name too: a flow naming it would be ambiguous",
                        l.name
                    ),
                );
            }
            let min_links = self.ranged(format!("{path}.min_links"), &l.min_links, 1, 32);
            let protocol = self.lag_protocol(&path, l.protocol.as_ref());
            if l.ports.is_empty() {
                self.refuse(format!("{path}.ports"), "a LAG needs at least one port");
            }
            let mut members = Vec::new();
            for (j, p) in l.ports.iter().enumerate() {
                let pp = format!("{path}.ports[{j}]");
                if let Some(m) = self.lag_member(&pp, p, ports, &lags, &members) {
                    members.push(m);
                }
            }
            let ns = |m: &MemberSpec| m.location.split_once('@').map(|(_, n)| n.to_owned());
            if let Some(first) = members.first()
                && let Some(j) = members.iter().position(|m| ns(m) != ns(first))
            {
                self.refuse(
                    format!("{path}.ports[{j}].port_name"),
                    "a LAG is one system's: its ports must be in one network namespace",
                );
            }
            if members.is_empty() {
                self.lags_unplaced.push(l.name.clone());
            }
            lags.push(LagSpec {
                name: l.name.clone(),
                min_links,
                members,
                protocol,
            });
        }
        lags
    }

    fn lag_protocol(&mut self, path: &str, p: Option<&LagProtocol>) -> Protocol {
        let p = p.cloned().unwrap_or_default();
        let path = format!("{path}.protocol");
        self.rest(&path, &p.rest);
        match p.choice.as_deref() {
            None | Some("lacp") => {
                let l = p.lacp.unwrap_or_default();
                let lp = format!("{path}.lacp");
                self.rest(&lp, &l.rest);
                let system_id = match l.actor_system_id.as_deref() {
                    None => [0; 6],
                    Some(text) => parse_mac(text).unwrap_or_else(|| {
                        self.refuse(
                            format!("{lp}.actor_system_id"),
                            format!("'{text}' is not a MAC (six hex bytes, 01:02:03:04:05:06)"),
                        );
                        [0; 6]
                    }),
                };
                Protocol::Lacp {
                    system_id,
                    system_priority: self.ranged(
                        format!("{lp}.actor_system_priority"),
                        &l.actor_system_priority,
                        0,
                        65535,
                    ) as u16,
                    key: self.ranged(format!("{lp}.actor_key"), &l.actor_key, 0, 65535) as u16,
                }
            }
            Some("static") => {
                let s = p.static_.unwrap_or_default();
                let sp = format!("{path}.static");
                self.rest(&sp, &s.rest);
                Protocol::Static {
                    lag_id: self.ranged(format!("{sp}.lag_id"), &s.lag_id, 0, 65535) as u16,
                }
            }
            Some(other) => {
                self.refuse(
                    format!("{path}.choice"),
                    format!("'{other}' is not lacp or static"),
                );
                Protocol::Static { lag_id: 0 }
            }
        }
    }

    fn lag_member(
        &mut self,
        path: &str,
        p: &LagPort,
        ports: &[PortPlan],
        lags: &[LagSpec],
        earlier: &[MemberSpec],
    ) -> Option<MemberSpec> {
        self.rest(path, &p.rest);
        let name = &p.port_name;
        let np = format!("{path}.port_name");
        let Some(port) = ports.iter().find(|q| &q.name == name) else {
            self.refuse(np, format!("no port is named '{name}'"));
            return None;
        };
        if let Some(other) = lags
            .iter()
            .find(|l| l.members.iter().any(|m| &m.port == name))
        {
            self.refuse(
                np,
                format!("port '{name}' is a member of LAG '{}' already", other.name),
            );
            return None;
        }
        if earlier.iter().any(|m| &m.port == name) {
            self.refuse(np, format!("port '{name}' is in this LAG twice"));
            return None;
        }
        if port.location.agent.is_some() {
            self.refuse(
                np,
                format!("port '{name}' is on an agent: LAGs run on this machine's ports only"),
            );
            return None;
        }
        let e = p.ethernet.clone().unwrap_or_default();
        let ep = format!("{path}.ethernet");
        self.rest(&ep, &e.rest);
        if !e.vlans.is_empty() {
            self.refuse(
                format!("{ep}.vlans"),
                "LACPDUs are untagged: a member's ethernet has no VLAN",
            );
        }
        if let Some(mtu) = &e.mtu
            && int(mtu) != Some(1500)
        {
            self.refuse(
                format!("{ep}.mtu"),
                "linerate does not set the MTU: it uses the interface's (set it with ip link)",
            );
        }
        let mac = match e.mac.as_deref() {
            None => None,
            Some(text) => match parse_mac(text) {
                Some(m) if m[0] & 1 == 0 => Some(m),
                _ => {
                    self.refuse(
                        format!("{ep}.mac"),
                        format!(
                            "'{text}' is not a unicast MAC (the member's LACPDUs leave from it)"
                        ),
                    );
                    None
                }
            },
        };
        let l = p.lacp.clone().unwrap_or_default();
        let lp = format!("{path}.lacp");
        self.rest(&lp, &l.rest);
        let active = match l.actor_activity.as_deref() {
            None | Some("active") => true,
            Some("passive") => false,
            Some(other) => {
                self.refuse(
                    format!("{lp}.actor_activity"),
                    format!("'{other}' is not active or passive"),
                );
                true
            }
        };
        let periodic = match self.ranged(
            format!("{lp}.lacpdu_periodic_time_interval"),
            &l.lacpdu_periodic_time_interval,
            0,
            65535,
        ) {
            0 => None,
            s => Some(Duration::from_secs(u64::from(s))),
        };
        let short_timeout = match l.lacpdu_timeout.as_ref().map(int) {
            // auto: short, so that a partner gone quiet is out of the LAG in seconds.
            None | Some(Some(0 | 3)) => true,
            Some(Some(90)) => false,
            Some(_) => {
                self.refuse(
                    format!("{lp}.lacpdu_timeout"),
                    "0 (auto: short), 3 (short) or 90 (long): 802.1AX has these two timeouts",
                );
                true
            }
        };
        Some(MemberSpec {
            port: name.clone(),
            location: port.location.local(),
            mac,
            lacp: MemberLacp {
                port_number: self.ranged(
                    format!("{lp}.actor_port_number"),
                    &l.actor_port_number,
                    0,
                    65535,
                ) as u16,
                port_priority: self.ranged(
                    format!("{lp}.actor_port_priority"),
                    &l.actor_port_priority,
                    1,
                    65535,
                ) as u16,
                active,
                periodic,
                short_timeout,
            },
        })
    }

    /// Why a flow's endpoint `name` is no port.
    pub(super) fn unknown_port(&self, name: &str) -> String {
        if self.lags_unplaced.iter().any(|l| l == name) {
            format!("LAG '{name}' has no port to run on (its ports are refused)")
        } else {
            format!("no port is named '{name}'")
        }
    }

    /// The flows with each LAG they name replaced by the member they run on: the same member
    /// index of every LAG a flow names (b2b LAGs wired member to member keep a flow on one
    /// link), by a hash of the flow's name over the indices whose members are in their LAGs
    /// (none of `self.lag_out`). A LAG with no member in it keeps every index: its flows stay
    /// where they would be, and the start's answer says they run off the LAG.
    pub(super) fn flows_over_lags(&mut self, flows: &[Flow], lags: &[LagSpec]) -> Vec<Flow> {
        let mut flows = flows.to_vec();
        if lags.is_empty() {
            return flows;
        }
        let out = self.lag_out.clone();
        let mut placed = Vec::new();
        for f in &mut flows {
            let name = f.name.clone();
            let Some(p) = f.tx_rx.as_mut().and_then(|t| t.port.as_mut()) else {
                continue;
            };
            // Each end that names a LAG with members, with its LAG.
            let ends: Vec<(&mut String, &LagSpec)> = std::iter::once(&mut p.tx_name)
                .chain(p.rx_name.as_mut())
                .chain(p.rx_names.iter_mut())
                .filter_map(|e| {
                    let lag = lags
                        .iter()
                        .find(|l| l.name == *e && !l.members.is_empty())?;
                    Some((e, lag))
                })
                .collect();
            let of: Vec<&LagSpec> = ends.iter().map(|(_, l)| *l).collect();
            let chosen = members_for(&name, &of, &out);
            for ((end, lag), i) in ends.into_iter().zip(chosen) {
                let port = lag.members[i].port.clone();
                placed.push(crate::LagFlow {
                    flow: name.clone(),
                    lag: lag.name.clone(),
                    port: port.clone(),
                });
                *end = port;
            }
        }
        self.lag_flows = placed;
        flows
    }
}
