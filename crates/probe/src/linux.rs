//! Loading `bpf/stamp.bpf.c`, attaching it, reading its stamps.

use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder};
use linerate_xdp::{AttachMode, XdpLink};

use crate::ProbeError;

/// Most stamps one probe keeps: 8 MiB of map.
pub const MAX_STAMPS: u32 = 1 << 20;

/// The stamp program on an interface; detached on drop.
#[derive(Debug)]
pub struct Probe {
    // Before the object: detached first.
    _link: XdpLink,
    object: Object,
    capacity: u32,
}

impl Probe {
    /// Attaches a probe that keeps the first `capacity` arrivals on `iface` (in `netns`, None:
    /// ours), in native mode.
    pub fn attach(iface: &str, netns: Option<&str>, capacity: u32) -> Result<Probe, ProbeError> {
        if capacity == 0 || capacity > MAX_STAMPS {
            return Err(ProbeError::Capacity {
                asked: capacity,
                max: MAX_STAMPS,
            });
        }
        let load = |e: libbpf_rs::Error| ProbeError::Load(e.to_string());
        let mut open = ObjectBuilder::default()
            .open_memory(linerate_xdp::stamp_object())
            .map_err(load)?;
        for mut map in open.maps_mut() {
            if map.name() == "stamps" {
                map.set_max_entries(capacity).map_err(load)?;
            }
        }
        let object = open.load().map_err(load)?;
        let link =
            linerate_xdp::attach_object(&object, iface, netns, AttachMode::Drv).map_err(|e| {
                ProbeError::Attach {
                    iface: iface.to_owned(),
                    why: e.to_string(),
                }
            })?;
        Ok(Probe {
            _link: link,
            object,
            capacity,
        })
    }

    /// UDP frames seen so far, stamped or not.
    pub fn seen(&self) -> Result<u64, ProbeError> {
        let map = self.map("seen")?;
        let value = map
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| ProbeError::Read(e.to_string()))?
            .ok_or_else(|| ProbeError::Read("no counter".into()))?;
        Ok(u64::from_ne_bytes(
            value[..8].try_into().expect("an 8-byte value"),
        ))
    }

    /// The arrival stamps (ns, CLOCK_MONOTONIC) of the frames seen so far, in arrival order, as
    /// many as the probe keeps.
    pub fn stamps(&self) -> Result<Vec<u64>, ProbeError> {
        let kept = self.seen()?.min(u64::from(self.capacity)) as usize;
        let map = self.map("stamps")?;
        let mut stamps = vec![0u64; self.capacity as usize];
        let batch = map
            .lookup_batch(4096, MapFlags::ANY, MapFlags::ANY)
            .map_err(|e| ProbeError::Read(e.to_string()))?;
        for (key, value) in batch {
            let at = u32::from_ne_bytes(key[..4].try_into().expect("a 4-byte key")) as usize;
            stamps[at] = u64::from_ne_bytes(value[..8].try_into().expect("an 8-byte value"));
        }
        stamps.truncate(kept);
        Ok(stamps)
    }

    fn map(&self, name: &str) -> Result<libbpf_rs::Map<'_>, ProbeError> {
        self.object
            .maps()
            .find(|m| m.name() == name)
            .ok_or_else(|| ProbeError::Read(format!("no map {name}")))
    }
}
