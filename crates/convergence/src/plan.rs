//! The benchmark's topology on a BGP lab, as the OTG config `linerate serve` would take: a
//! source device on the sending port, and on the receiving port two BGP devices advertising
//! the same prefixes to the DUT — the preferred egress (the shorter AS path) and the
//! next-best (its AS prepended twice) — and the flows from the source to those prefixes.
//! Built as OTG JSON so the devices, sessions, route ranges and device flows are mapped by
//! the one mapping serve uses.

use std::net::Ipv4Addr;

use serde_json::{Value, json};

use crate::ConvergenceError;

/// The most flows one run holds: a plan's stream limit (linerate_stream::MAX_STREAMS).
pub const MAX_FLOWS: u32 = 4096;
/// The first prefix advertised (RFC 6598's shared space, as tests/otg/bgp_router.py): /24s
/// from here, so 65,536 fit before 101.64.0.0.
pub const FIRST_PREFIX: Ipv4Addr = Ipv4Addr::new(100, 64, 0, 0);
/// The most prefixes: the /24s of 100.64.0.0/10.
pub const MAX_PREFIXES: u32 = 1 << 14;

/// The names the config gives its parts (the run finds them by these).
pub const PREFERRED: &str = "preferred";
pub const BACKUP: &str = "backup";
pub const PREFERRED_ROUTES: &str = "preferred_routes";
pub const BACKUP_ROUTES: &str = "backup_routes";
const SOURCE_IP: &str = "source_ip";

/// The devices' private AS numbers (RFC 6996); the DUT's is the lab's.
pub const PREFERRED_AS: u32 = 65101;
pub const BACKUP_AS: u32 = 65102;

/// The lab's addresses the topology uses: each (the device's, its gateway on the DUT).
#[derive(Debug, Clone)]
pub struct Topology {
    /// The sending port (`IFACE[@NETNS]`) and the receiving one.
    pub tx_port: String,
    pub rx_port: String,
    pub source: (Ipv4Addr, Ipv4Addr),
    pub preferred: (Ipv4Addr, Ipv4Addr),
    pub backup: (Ipv4Addr, Ipv4Addr),
}

/// How the prefixes are spread over flows: flow `i` goes to prefixes `first(i)..` (each a
/// /24), `per_flow` of them (the last flow may have fewer), stepping over them frame by frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flows {
    pub prefixes: u32,
    pub per_flow: u32,
    pub count: u32,
}

impl Flows {
    /// One flow a prefix up to [`MAX_FLOWS`]; beyond, each flow takes the fewest equal groups
    /// of neighbouring prefixes that fit.
    pub fn of(prefixes: u32) -> Result<Flows, ConvergenceError> {
        if prefixes == 0 || prefixes > MAX_PREFIXES {
            return Err(ConvergenceError::Usage(format!(
                "--prefixes {prefixes}: give 1 to {MAX_PREFIXES} (/24s of 100.64.0.0/10)"
            )));
        }
        let per_flow = prefixes.div_ceil(MAX_FLOWS);
        Ok(Flows {
            prefixes,
            per_flow,
            count: prefixes.div_ceil(per_flow),
        })
    }

    /// Prefixes of flow `i`.
    pub fn prefixes_of(&self, i: u32) -> u32 {
        self.per_flow.min(self.prefixes - i * self.per_flow)
    }

    /// Flow `i`'s first prefix.
    pub fn first(&self, i: u32) -> Ipv4Addr {
        nth_prefix(i * self.per_flow)
    }
}

/// The `n`-th /24 advertised.
pub fn nth_prefix(n: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(FIRST_PREFIX) + (n << 8))
}

/// The OTG config: the devices, both route ranges and `flows.count` flows at `pps` frames/s
/// each, `size`-byte frames, sent until stopped.
pub fn config(t: &Topology, flows: Flows, pps: u64, size: u32) -> Value {
    let device = |name: &str, port: &str, mac: &str, (addr, gw): (Ipv4Addr, Ipv4Addr)| {
        json!({
            "name": name,
            "ethernets": [{
                "name": format!("{name}_eth"),
                "connection": {"choice": "port_name", "port_name": port},
                "mac": mac,
                "ipv4_addresses": [{
                    "name": format!("{name}_ip"), "address": addr.to_string(),
                    "prefix": 30, "gateway": gw.to_string()
                }]
            }]
        })
    };
    let mut source = device("source", "tx", "02:00:00:00:0c:01", t.source);
    let mut preferred = device(PREFERRED, "rx", "02:00:00:00:0c:02", t.preferred);
    let mut backup = device(BACKUP, "rx", "02:00:00:00:0c:03", t.backup);
    source["ethernets"][0]["ipv4_addresses"][0]["name"] = json!(SOURCE_IP);
    let bgp =
        |name: &str, (addr, gw): (Ipv4Addr, Ipv4Addr), asn: u32, routes: &str, prepend: &[u32]| {
            let mut range = json!({
                "name": routes,
                "addresses": [{
                    "address": FIRST_PREFIX.to_string(), "prefix": 24,
                    "count": flows.prefixes, "step": 1
                }]
            });
            if !prepend.is_empty() {
                range["as_path"] = json!({
                    "as_set_mode": "include_as_seq",
                    "segments": [{"type": "as_seq", "as_numbers": prepend}]
                });
            }
            json!({
                "router_id": addr.to_string(),
                "ipv4_interfaces": [{
                    "ipv4_name": format!("{name}_ip"),
                    "peers": [{
                        "name": format!("{name}_peer"), "peer_address": gw.to_string(),
                        "as_type": "ebgp", "as_number": asn,
                        "advanced": {"hold_time_interval": 3, "keep_alive_interval": 1},
                        "v4_routes": [range]
                    }]
                }]
            })
        };
    preferred["bgp"] = bgp(PREFERRED, t.preferred, PREFERRED_AS, PREFERRED_ROUTES, &[]);
    // The next-best path: two more hops of AS path, so the DUT prefers the other while both
    // are there (RFC 4271 §9.1.2.2 b).
    backup["bgp"] = bgp(
        BACKUP,
        t.backup,
        BACKUP_AS,
        BACKUP_ROUTES,
        &[BACKUP_AS, BACKUP_AS],
    );
    let flows: Vec<Value> = (0..flows.count)
        .map(|i| {
            let n = flows.prefixes_of(i);
            let dst = if n == 1 {
                json!({"choice": "value", "value": flows.first(i).to_string()})
            } else {
                json!({"choice": "increment", "increment": {
                    "start": flows.first(i).to_string(), "step": "0.0.1.0", "count": n
                }})
            };
            json!({
                "name": flow_name(i),
                "tx_rx": {"choice": "device", "device": {
                    "tx_names": [SOURCE_IP], "rx_names": [PREFERRED_ROUTES]
                }},
                "packet": [
                    {"choice": "ethernet", "ethernet": {}},
                    {"choice": "ipv4", "ipv4": {"dst": dst}},
                    {"choice": "udp", "udp": {}}
                ],
                "size": {"choice": "fixed", "fixed": size},
                "rate": {"choice": "pps", "pps": pps},
                "duration": {"choice": "continuous", "continuous": {}},
                "metrics": {"enable": true}
            })
        })
        .collect();
    json!({
        "ports": [
            {"name": "tx", "location": t.tx_port},
            {"name": "rx", "location": t.rx_port}
        ],
        "devices": [source, preferred, backup],
        "flows": flows
    })
}

/// Flow `i`'s name.
pub fn flow_name(i: u32) -> String {
    format!("f{i:04}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_are_one_a_prefix_up_to_the_cap_then_equal_groups() {
        let f = Flows::of(1000).unwrap();
        assert_eq!((f.per_flow, f.count), (1, 1000));
        assert_eq!(f.first(999), Ipv4Addr::new(100, 67, 231, 0));
        let f = Flows::of(10_000).unwrap();
        assert_eq!((f.per_flow, f.count), (3, 3334));
        assert_eq!(f.prefixes_of(3332), 3);
        assert_eq!(f.prefixes_of(3333), 1);
        let sum: u32 = (0..f.count).map(|i| f.prefixes_of(i)).sum();
        assert_eq!(sum, 10_000);
        assert!(Flows::of(0).is_err());
        assert!(Flows::of(MAX_PREFIXES + 1).is_err());
        assert_eq!(
            nth_prefix(MAX_PREFIXES - 1),
            Ipv4Addr::new(100, 127, 255, 0)
        );
    }

    #[test]
    fn the_config_has_both_paths_and_a_flow_per_group() {
        let t = Topology {
            tx_port: "cv0".into(),
            rx_port: "cv1@cv-sink".into(),
            source: ([198, 18, 0, 1].into(), [198, 18, 0, 2].into()),
            preferred: ([198, 19, 0, 2].into(), [198, 19, 0, 1].into()),
            backup: ([198, 19, 128, 2].into(), [198, 19, 128, 1].into()),
        };
        let c = config(&t, Flows::of(5000).unwrap(), 10, 128);
        assert_eq!(c["flows"].as_array().unwrap().len(), 2500);
        assert_eq!(
            c["flows"][1]["packet"][1]["ipv4"]["dst"]["increment"]["start"],
            "100.64.2.0"
        );
        let backup = &c["devices"][2]["bgp"]["ipv4_interfaces"][0]["peers"][0];
        assert_eq!(
            backup["v4_routes"][0]["as_path"]["segments"][0]["as_numbers"][1],
            65102
        );
        assert_eq!(backup["peer_address"], "198.19.128.1");
    }
}
