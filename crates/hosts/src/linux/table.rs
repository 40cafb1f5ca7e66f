//! The hosts' maps of a loaded program that includes `bpf/hosts.h`: which hosts it answers for,
//! which neighbours it learned, what it counted.

use std::net::IpAddr;

use libbpf_rs::{MapCore, MapFlags, MapHandle, Object};

use crate::abi::{self, COUNTERS, HOSTS_V4, HOSTS_V6, NEIGH_V4, NEIGH_V6, Neigh};
use crate::{Host, HostCounters, HostError, MacAddr, Neighbour};

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
        })
    }

    /// Answers for `host` from now on: its IPv4 address, its IPv6 address and its link-local
    /// one, on its VLAN.
    pub fn add(&self, host: &Host) -> Result<(), HostError> {
        host.validate()?;
        let value = abi::host_mac(host.mac);
        for (addr, map, name) in self.addresses(host) {
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

    /// Forgets every host and every learned neighbour (counters stay): for a port whose hosts
    /// are declared anew.
    pub fn clear(&self) -> Result<(), HostError> {
        for (map, name) in [
            (&self.hosts_v4, HOSTS_V4),
            (&self.hosts_v6, HOSTS_V6),
            (&self.neigh_v4, NEIGH_V4),
            (&self.neigh_v6, NEIGH_V6),
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

    /// The MAC learned for `addr` on `vlan`, if any.
    pub fn neighbour(&self, addr: IpAddr, vlan: Option<u16>) -> Result<Option<MacAddr>, HostError> {
        Ok(self.learned(addr, vlan)?.map(|n| n.mac))
    }

    /// Every neighbour learned, IPv4 first, sorted.
    pub fn neighbours(&self) -> Result<Vec<Neighbour>, HostError> {
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
                all.push(Neighbour {
                    addr,
                    vlan,
                    mac: n.mac,
                });
            }
        }
        all.sort();
        Ok(all)
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

    /// The entry learned for `addr` on `vlan`, with when it was last written.
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
