//! The hosts' maps of a loaded program that includes `bpf/hosts.h`: which hosts it answers for,
//! which neighbours it learned, what it counted.

use std::net::IpAddr;

use libbpf_rs::{MapCore, MapFlags, MapHandle, Object};

use crate::abi::{self, COUNTERS, HOSTS_V4, HOSTS_V6, NEIGH_V4, NEIGH_V6, Neigh, STACK_MACS};
use crate::{AskedFor, Host, HostCounters, HostError, MacAddr, Neighbour, NeighbourReport};

/// The hosts' maps of one loaded program (`host.bpf.c` or `rx.bpf.c`). Holds its own handles
/// to the maps: it outlives neither the maps' use nor needs the `Object` to stay borrowed, and
/// the program keeps answering for its hosts until it is detached.
#[derive(Debug)]
pub struct HostTable {
    hosts_v4: MapHandle,
    hosts_v6: MapHandle,
    neigh_v4: MapHandle,
    neigh_v6: MapHandle,
    counters: MapHandle,
    stack_macs: MapHandle,
}

impl HostTable {
    /// The maps of `obj`, their key and value sizes checked against the Rust types.
    pub fn from_object(obj: &Object) -> Result<HostTable, HostError> {
        let maps: Vec<(String, u32, u32)> = obj
            .maps()
            .map(|m| {
                let name = m.name().to_string_lossy().into_owned();
                (name, m.key_size(), m.value_size())
            })
            .collect();
        linerate_xdp::check_abi("hosts", &maps, &abi::ABI)?;
        let handle = |name: &'static str| {
            let map = obj
                .maps()
                .find(|m| m.name() == name)
                .ok_or_else(|| map_error(name, "missing from the object"))?;
            MapHandle::try_from(&map).map_err(|e| map_error(name, e))
        };
        Ok(HostTable {
            hosts_v4: handle(HOSTS_V4)?,
            hosts_v6: handle(HOSTS_V6)?,
            neigh_v4: handle(NEIGH_V4)?,
            neigh_v6: handle(NEIGH_V6)?,
            counters: handle(COUNTERS)?,
            stack_macs: handle(STACK_MACS)?,
        })
    }

    /// Answers for `host` from now on: its IPv4 address, its IPv6 address and its link-local
    /// one, on its VLAN.
    pub fn add(&self, host: &Host) -> Result<(), HostError> {
        host.validate()?;
        let prefix4 = host.ipv4.map_or(0, |v4| v4.prefix);
        for (addr, map, name) in self.addresses(host) {
            let value = abi::host_value(host.mac, if addr.is_ipv4() { prefix4 } else { 0 });
            map.update(&abi::key(addr, host.vlan), &value, MapFlags::ANY)
                .map_err(|e| map_error(name, format!("adding host {}: {e}", host.name)))?;
        }
        Ok(())
    }

    /// No longer answers for `host` (addresses it does not hold are skipped).
    pub fn remove(&self, host: &Host) -> Result<(), HostError> {
        for (addr, map, name) in self.addresses(host) {
            if let Err(e) = map.delete(&abi::key(addr, host.vlan))
                && e.kind() != libbpf_rs::ErrorKind::NotFound
            {
                return Err(map_error(name, format!("removing host {}: {e}", host.name)));
            }
        }
        Ok(())
    }

    /// Forgets every host, every learned neighbour and every MAC passed to the stack (counters
    /// stay): for a port whose hosts are declared anew.
    pub fn clear(&self) -> Result<(), HostError> {
        for (map, name) in [
            (&self.hosts_v4, HOSTS_V4),
            (&self.hosts_v6, HOSTS_V6),
            (&self.neigh_v4, NEIGH_V4),
            (&self.neigh_v6, NEIGH_V6),
            (&self.stack_macs, STACK_MACS),
        ] {
            let keys: Vec<Vec<u8>> = map.keys().collect();
            for key in keys {
                if let Err(e) = map.delete(&key)
                    && e.kind() != libbpf_rs::ErrorKind::NotFound
                {
                    return Err(map_error(name, format!("clearing: {e}")));
                }
            }
        }
        Ok(())
    }

    /// Frames to `mac` that no host answers go on to the kernel's stack from now on (or, with
    /// `pass` false, no longer): the port of a host with a control plane, whose daemon sits
    /// behind a macvlan of that MAC.
    pub fn pass_to_stack(&self, mac: MacAddr, pass: bool) -> Result<(), HostError> {
        let key = abi::host_mac(mac);
        let done = if pass {
            self.stack_macs
                .update(&key, &1u32.to_ne_bytes(), MapFlags::ANY)
        } else {
            match self.stack_macs.delete(&key) {
                Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => Ok(()),
                done => done,
            }
        };
        done.map_err(|e| map_error(STACK_MACS, e))
    }

    /// The MAC learned for `addr` on `vlan`, if any (a bogus answer is none).
    pub fn neighbour(&self, addr: IpAddr, vlan: Option<u16>) -> Result<Option<MacAddr>, HostError> {
        Ok(self
            .learned(addr, vlan)?
            .filter(|n| !n.bogus())
            .map(|n| n.mac))
    }

    /// Every neighbour learned, IPv4 first, sorted; bogus answers are no neighbours.
    pub fn neighbours(&self) -> Result<Vec<Neighbour>, HostError> {
        Ok(self.heard()?.into_iter().map(|(n, _)| n).collect())
    }

    /// [`HostTable::neighbours`], each with whether the answers for its address named more
    /// than one MAC (a spoofer's among them, or a neighbour whose MAC changed).
    pub fn heard(&self) -> Result<Vec<(Neighbour, bool)>, HostError> {
        let mut all = Vec::new();
        for (map, name) in [(&self.neigh_v4, NEIGH_V4), (&self.neigh_v6, NEIGH_V6)] {
            for key in map.keys() {
                let Some((addr, vlan)) = abi::parse_key(&key) else {
                    return Err(map_error(name, format!("a {}-byte key", key.len())));
                };
                // Gone between the walk and the lookup: nothing to report.
                let Some(value) = map
                    .lookup(&key, MapFlags::ANY)
                    .map_err(|e| map_error(name, e))?
                else {
                    continue;
                };
                let n = Neigh::parse(&value)
                    .ok_or_else(|| map_error(name, format!("a {}-byte value", value.len())))?;
                if n.bogus() {
                    continue;
                }
                let neighbour = Neighbour {
                    addr,
                    vlan,
                    mac: n.mac,
                };
                all.push((neighbour, n.changed()));
            }
        }
        all.sort();
        Ok(all)
    }

    /// What the hosts' neighbours are as a report tells them: those the hosts asked for
    /// (`asked`: address, VLAN and the MAC their streams use), each with what the table holds
    /// now, and a count of the others (see [`NeighbourReport::of`]).
    pub fn report(&self, asked: &[AskedFor]) -> Result<NeighbourReport, HostError> {
        Ok(NeighbourReport::of(asked, &self.heard()?))
    }

    /// The counters so far, summed over CPUs.
    pub fn counters(&self) -> Result<HostCounters, HostError> {
        let cpus = self
            .counters
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| map_error(COUNTERS, e))?
            .ok_or_else(|| map_error(COUNTERS, "no entry 0"))?;
        let mut total = HostCounters::default();
        for cpu in cpus {
            let c = HostCounters::parse(&cpu)
                .ok_or_else(|| map_error(COUNTERS, format!("a {}-byte value", cpu.len())))?;
            total.add(&c);
        }
        Ok(total)
    }

    /// The entry learned for `addr` on `vlan`, with when it was last written, bogus or not.
    pub(crate) fn learned(
        &self,
        addr: IpAddr,
        vlan: Option<u16>,
    ) -> Result<Option<Neigh>, HostError> {
        let (map, name) = match addr {
            IpAddr::V4(_) => (&self.neigh_v4, NEIGH_V4),
            IpAddr::V6(_) => (&self.neigh_v6, NEIGH_V6),
        };
        let Some(value) = map
            .lookup(&abi::key(addr, vlan), MapFlags::ANY)
            .map_err(|e| map_error(name, e))?
        else {
            return Ok(None);
        };
        Neigh::parse(&value)
            .map(Some)
            .ok_or_else(|| map_error(name, format!("a {}-byte value", value.len())))
    }

    /// The addresses `host` answers for, each with its map.
    fn addresses(&self, host: &Host) -> Vec<(IpAddr, &MapHandle, &'static str)> {
        let mut out = Vec::new();
        if let Some(v4) = &host.ipv4 {
            out.push((v4.addr.into(), &self.hosts_v4, HOSTS_V4));
        }
        if let Some(v6) = &host.ipv6 {
            out.push((v6.addr.into(), &self.hosts_v6, HOSTS_V6));
            if v6.addr != host.link_local() {
                out.push((host.link_local().into(), &self.hosts_v6, HOSTS_V6));
            }
        }
        out
    }
}

fn map_error(map: &'static str, message: impl std::fmt::Display) -> HostError {
    HostError::Map {
        map,
        message: message.to_string(),
    }
}
