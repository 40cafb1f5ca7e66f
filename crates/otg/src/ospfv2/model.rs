//! The OSPFv2 part of the models (v1.60.0): `Device.ospfv2` and what get_metrics and get_states
//! say of it, as snappi 1.60.0 writes and reads them. Only what linerate maps is a typed field;
//! every other key lands in `rest` and is refused by path.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Rest;
use crate::bgp::RouteAddress;

/// Device.Ospfv2Router
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DeviceOspfv2 {
    pub name: String,
    pub router_id: Option<Ospfv2RouterId>,
    /// Seconds.
    pub lsa_retransmit_time: Option<Value>,
    /// Seconds.
    pub lsa_refresh_time: Option<Value>,
    /// Milliseconds between flood LSU bursts.
    pub inter_burst_lsu_interval: Option<Value>,
    pub max_flood_lsu_per_burst: Option<Value>,
    pub graceful_restart: Option<Ospfv2GracefulRestart>,
    /// What get_states keeps: the LSAs learned from neighbours.
    pub store_lsa: Option<bool>,
    pub capabilities: Option<Ospfv2Options>,
    #[serde(default)]
    pub interfaces: Vec<Ospfv2Interface>,
    #[serde(default)]
    pub v4_routes: Vec<Ospfv2V4RouteRange>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2.RouterId: `interface_ip` (the default) or `custom`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2RouterId {
    pub choice: Option<String>,
    pub custom: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2.GracefulRestart
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2GracefulRestart {
    pub helper_mode: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2.Options: the router's option bits (and the router LSA's B and E bits).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2Options {
    pub t_bit: Option<bool>,
    pub e_bit: Option<bool>,
    pub mc_bit: Option<bool>,
    pub np_bit: Option<bool>,
    pub ea_bit: Option<bool>,
    pub dc_bit: Option<bool>,
    pub o_bit: Option<bool>,
    pub unused_bit: Option<bool>,
    pub lsa_b_bit: Option<bool>,
    pub lsa_e_bit: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2.Interface
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2Interface {
    pub name: String,
    /// The Device.Ipv4 the interface runs on.
    pub ipv4_name: Option<String>,
    pub area: Option<Ospfv2InterfaceArea>,
    pub network_type: Option<Ospfv2InterfaceNetworkType>,
    #[serde(default)]
    pub traffic_engineering: Vec<LinkStateTe>,
    pub authentication: Option<Ospfv2InterfaceAuthentication>,
    pub advanced: Option<Ospfv2InterfaceAdvanced>,
    pub link_protection: Option<Ospfv2InterfaceLinkProtection>,
    #[serde(default)]
    pub srlg_values: Vec<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2Interface.Area: `id` (the default, a 32-bit number) or `ip` (dotted).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2InterfaceArea {
    pub choice: Option<String>,
    pub id: Option<Value>,
    pub ip: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2Interface.NetworkType: `broadcast` (the default), `point_to_point` or
/// `point_to_multipoint` (with its neighbours).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2InterfaceNetworkType {
    pub choice: Option<String>,
    #[serde(default)]
    pub point_to_multipoint: Vec<Ospfv2InterfaceNeighbor>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2Interface.Neighbor
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2InterfaceNeighbor {
    pub neighbor_ip: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// LinkState.TE (`max_bandwith` is the schema's spelling)
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LinkStateTe {
    /// Hex, 4 bytes.
    pub administrative_group: Option<String>,
    pub metric_level: Option<Value>,
    pub max_bandwith: Option<Value>,
    pub max_reservable_bandwidth: Option<Value>,
    pub priority_bandwidths: Option<LinkStatePriorityBandwidths>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// LinkState.priorityBandwidths
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LinkStatePriorityBandwidths {
    pub pb0: Option<Value>,
    pub pb1: Option<Value>,
    pub pb2: Option<Value>,
    pub pb3: Option<Value>,
    pub pb4: Option<Value>,
    pub pb5: Option<Value>,
    pub pb6: Option<Value>,
    pub pb7: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2Interface.Authentication: `clear_text` (the default) or `md5s`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2InterfaceAuthentication {
    pub choice: Option<String>,
    #[serde(default)]
    pub md5s: Vec<Ospfv2AuthenticationMd5>,
    pub clear_text: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2Authentication.Md5
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2AuthenticationMd5 {
    pub key_id: Option<Value>,
    pub key: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2Interface.Advanced
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2InterfaceAdvanced {
    /// Seconds.
    pub hello_interval: Option<Value>,
    /// Seconds.
    pub dead_interval: Option<Value>,
    /// The interface's cost.
    pub routing_metric: Option<Value>,
    pub priority: Option<Value>,
    pub validate_received_mtu: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2Interface.LinkProtection
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2InterfaceLinkProtection {
    pub extra_traffic: Option<bool>,
    pub unprotected: Option<bool>,
    pub shared: Option<bool>,
    pub dedicated_1_to_1: Option<bool>,
    pub dedicated_1_plus_1: Option<bool>,
    pub enhanced: Option<bool>,
    pub reserved_40: Option<bool>,
    pub reserved_80: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2.V4RouteRange
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2V4RouteRange {
    pub name: String,
    #[serde(default)]
    pub addresses: Vec<RouteAddress>,
    pub metric: Option<Value>,
    pub route_origin: Option<Ospfv2RouteOrigin>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2V4RR.RouteOrigin: `intra_area`, `inter_area` (the default), `external_type_1`,
/// `external_type_2` or `nssa_external`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2RouteOrigin {
    pub choice: Option<String>,
    pub intra_area: Option<Ospfv2RouteOriginFlags>,
    pub inter_area: Option<Ospfv2RouteOriginFlags>,
    pub external_type_1: Option<Ospfv2RouteOriginFlags>,
    pub external_type_2: Option<Ospfv2RouteOriginFlags>,
    pub nssa_external: Option<Ospfv2NssaExternal>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2V4RR.IntraArea, Ospfv2V4RR.InterArea, Ospfv2V4RR.ExternalType1 and
/// Ospfv2V4RR.ExternalType2 (the same key).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2RouteOriginFlags {
    pub flags: Option<Ospfv2PrefixFlags>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2V4RR.NssaExternal
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2NssaExternal {
    pub flags: Option<Ospfv2PrefixFlags>,
    pub propagation: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2V4RR.ExtdPrefixFlags (RFC 7684)
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2PrefixFlags {
    pub a_flag: Option<bool>,
    pub n_flag: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2.Metrics.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2MetricsRequest {
    /// Empty: every OSPFv2 router.
    #[serde(default)]
    pub router_names: Vec<String>,
    #[serde(default)]
    pub column_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2Lsas.State.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv2LsasStateRequest {
    /// Empty: every OSPFv2 router.
    #[serde(default)]
    pub router_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv2.Metric
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv2Metric {
    pub name: String,
    pub full_state_count: u64,
    pub down_state_count: u64,
    pub sessions_flap: u64,
    pub hellos_sent: u64,
    pub hellos_received: u64,
    pub dbd_sent: u64,
    pub dbd_received: u64,
    pub ls_request_sent: u64,
    pub ls_request_received: u64,
    pub ls_update_sent: u64,
    pub ls_update_received: u64,
    pub ls_ack_sent: u64,
    pub ls_ack_received: u64,
    pub lsa_sent: u64,
    pub lsa_received: u64,
    pub lsa_ack_sent: u64,
    pub lsa_ack_received: u64,
    pub router_lsa_sent: u64,
    pub router_lsa_received: u64,
    pub network_lsa_sent: u64,
    pub network_lsa_received: u64,
    pub summary_lsa_sent: u64,
    pub summary_lsa_received: u64,
    pub external_lsa_sent: u64,
    pub external_lsa_received: u64,
    pub nssa_lsa_sent: u64,
    pub nssa_lsa_received: u64,
    pub opaque_local_sent: u64,
    pub opaque_local_received: u64,
    pub opaque_area_sent: u64,
    pub opaque_area_received: u64,
    pub opaque_domain_sent: u64,
    pub opaque_domain_received: u64,
}

/// Ospfv2Lsa.State: what one router learned, by LSA type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv2LsaState {
    pub router_name: String,
    /// Type 1.
    pub router_lsas: Vec<Ospfv2RouterLsa>,
    /// Type 2.
    pub network_lsas: Vec<Ospfv2NetworkLsa>,
    /// Type 3.
    pub network_summary_lsas: Vec<Ospfv2NetworkSummaryLsa>,
    /// Type 4.
    pub summary_as_lsas: Vec<Ospfv2SummaryAsLsa>,
    /// Type 5.
    pub external_as_lsas: Vec<Ospfv2ExternalAsLsa>,
    /// Type 7.
    pub nssa_lsas: Vec<Ospfv2NssaLsa>,
    /// Types 9, 10 and 11.
    pub opaque_lsas: Vec<Ospfv2OpaqueLsa>,
}

/// Ospfv2.LsaHeader
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv2LsaHeader {
    /// Dotted: the link state ID (the prefix of a summary or external LSA).
    pub lsa_id: String,
    pub advertising_router_id: String,
    pub sequence_number: u32,
    /// Seconds.
    pub age: u32,
    pub option_bits: u32,
}

/// Ospfv2.RouterLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv2RouterLsa {
    pub header: Ospfv2LsaHeader,
    pub links: Vec<Ospfv2Link>,
}

/// Ospfv2.Link
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv2Link {
    /// `point_to_point`, `transit`, `stub` or `virtual`.
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    /// The mask of a stub network, else the interface's address (or ifIndex when unnumbered).
    pub data: String,
    pub metric: u32,
}

/// Ospfv2.NetworkLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv2NetworkLsa {
    pub header: Ospfv2LsaHeader,
    pub network_mask: String,
    pub neighbor_router_ids: Vec<String>,
}

/// Ospfv2.NetworkSummaryLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv2NetworkSummaryLsa {
    pub header: Ospfv2LsaHeader,
    pub network_mask: String,
    pub metric: u32,
}

/// Ospfv2.SummaryAsLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv2SummaryAsLsa {
    pub header: Ospfv2LsaHeader,
    pub network_mask: String,
    pub metric: u32,
}

/// Ospfv2.ExternalAsLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv2ExternalAsLsa {
    pub header: Ospfv2LsaHeader,
    pub network_mask: String,
    pub metric: u32,
    /// 1 or 2.
    pub metric_type: u32,
}

/// Ospfv2.NssaLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv2NssaLsa {
    pub header: Ospfv2LsaHeader,
    pub network_mask: String,
    pub metric: u32,
    /// 1 or 2.
    pub metric_type: u32,
    pub forwarding_address: String,
}

/// Ospfv2.OpaqueLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv2OpaqueLsa {
    pub header: Ospfv2LsaHeader,
    /// `local`, `area` or `domain`.
    #[serde(rename = "type")]
    pub kind: String,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::{Device, MetricsRequest, MetricsResponse, StatesRequest, StatesResponse};

    /// Every `rest` of a router, by path, for the "nothing snappi writes is left over" checks.
    fn rests(o: &DeviceOspfv2) -> Vec<(String, &Rest)> {
        let mut all = vec![("ospfv2".to_string(), &o.rest)];
        let mut add = |path: String, rest: &'static str, r| all.push((format!("{path}{rest}"), r));
        if let Some(r) = &o.router_id {
            add("ospfv2.router_id".into(), "", &r.rest);
        }
        if let Some(g) = &o.graceful_restart {
            add("ospfv2.graceful_restart".into(), "", &g.rest);
        }
        if let Some(c) = &o.capabilities {
            add("ospfv2.capabilities".into(), "", &c.rest);
        }
        for (n, i) in o.interfaces.iter().enumerate() {
            let p = format!("ospfv2.interfaces[{n}]");
            add(p.clone(), "", &i.rest);
            if let Some(a) = &i.area {
                add(p.clone(), ".area", &a.rest);
            }
            if let Some(t) = &i.network_type {
                add(p.clone(), ".network_type", &t.rest);
                for (m, nb) in t.point_to_multipoint.iter().enumerate() {
                    add(
                        format!("{p}.network_type.point_to_multipoint[{m}]"),
                        "",
                        &nb.rest,
                    );
                }
            }
            for (m, te) in i.traffic_engineering.iter().enumerate() {
                add(format!("{p}.traffic_engineering[{m}]"), "", &te.rest);
                if let Some(b) = &te.priority_bandwidths {
                    let q = format!("{p}.traffic_engineering[{m}]");
                    add(q, ".priority_bandwidths", &b.rest);
                }
            }
            if let Some(a) = &i.authentication {
                add(p.clone(), ".authentication", &a.rest);
                for (m, k) in a.md5s.iter().enumerate() {
                    add(format!("{p}.authentication.md5s[{m}]"), "", &k.rest);
                }
            }
            if let Some(a) = &i.advanced {
                add(p.clone(), ".advanced", &a.rest);
            }
            if let Some(l) = &i.link_protection {
                add(p.clone(), ".link_protection", &l.rest);
            }
        }
        for (n, r) in o.v4_routes.iter().enumerate() {
            let p = format!("ospfv2.v4_routes[{n}]");
            add(p.clone(), "", &r.rest);
            for (m, a) in r.addresses.iter().enumerate() {
                add(format!("{p}.addresses[{m}]"), "", &a.rest);
            }
            let Some(o) = &r.route_origin else { continue };
            add(p.clone(), ".route_origin", &o.rest);
            let flagged = [
                ("intra_area", &o.intra_area),
                ("inter_area", &o.inter_area),
                ("external_type_1", &o.external_type_1),
                ("external_type_2", &o.external_type_2),
            ];
            for (key, f) in flagged {
                let Some(f) = f else { continue };
                add(format!("{p}.route_origin.{key}"), "", &f.rest);
                if let Some(flags) = &f.flags {
                    add(format!("{p}.route_origin.{key}"), ".flags", &flags.rest);
                }
            }
            if let Some(x) = &o.nssa_external {
                add(p.clone(), ".route_origin.nssa_external", &x.rest);
                if let Some(flags) = &x.flags {
                    add(p.clone(), ".route_origin.nssa_external.flags", &flags.rest);
                }
            }
        }
        all
    }

    fn assert_no_rest(o: &DeviceOspfv2) {
        for (path, rest) in rests(o) {
            assert!(rest.is_empty(), "{path} kept {rest:?}");
        }
    }

    /// Device `dtx` of the conformance test feature/b2b/ospfv2/test_ospfv2_p2p_lsa.py, as
    /// snappi 1.60.0 serialises it (its defaults included).
    fn p2p_lsa_device() -> Value {
        json!({
            "ethernets": [{
                "connection": {"choice": "port_name", "port_name": "ptx"},
                "ipv4_addresses": [{
                    "address": "1.1.1.1", "gateway": "1.1.1.2", "name": "dtx_ip", "prefix": 24
                }],
                "mac": "00:00:01:01:01:01",
                "mtu": 1500,
                "name": "dtx_eth"
            }],
            "name": "dtx",
            "ospfv2": {
                "inter_burst_lsu_interval": 33,
                "interfaces": [{
                    "advanced": {
                        "dead_interval": 40,
                        "hello_interval": 10,
                        "priority": 0,
                        "routing_metric": 2,
                        "validate_received_mtu": true
                    },
                    "ipv4_name": "dtx_ip",
                    "name": "dtx_ospfv2_int",
                    "network_type": {"choice": "point_to_point"}
                }],
                "lsa_refresh_time": 1800,
                "lsa_retransmit_time": 5,
                "max_flood_lsu_per_burst": 1,
                "name": "dtx_ospfv2",
                "store_lsa": true,
                "v4_routes": [{
                    "addresses": [{"address": "10.10.10.1", "count": 1, "prefix": 32, "step": 1}],
                    "metric": 10,
                    "name": "dtx_ospfv2_rr4"
                }]
            }
        })
    }

    #[test]
    fn ospfv2_p2p_lsa_device_is_read_whole() {
        let device: Device = serde_json::from_value(p2p_lsa_device()).unwrap();
        assert!(device.rest.is_empty(), "{:?}", device.rest);
        assert!(device.ethernets[0].rest.is_empty());
        assert!(device.ethernets[0].ipv4_addresses[0].rest.is_empty());
        let o = device.ospfv2.as_ref().expect("ospfv2 is a typed field");
        assert_no_rest(o);
        assert_eq!(o.name, "dtx_ospfv2");
        assert_eq!(o.store_lsa, Some(true));
        assert_eq!(o.lsa_retransmit_time, Some(json!(5)));
        assert_eq!(o.lsa_refresh_time, Some(json!(1800)));
        assert_eq!(o.inter_burst_lsu_interval, Some(json!(33)));
        assert_eq!(o.max_flood_lsu_per_burst, Some(json!(1)));
        assert!(o.router_id.is_none());

        let i = &o.interfaces[0];
        assert_eq!(i.name, "dtx_ospfv2_int");
        assert_eq!(i.ipv4_name.as_deref(), Some("dtx_ip"));
        let network_type = i.network_type.as_ref().unwrap();
        assert_eq!(network_type.choice.as_deref(), Some("point_to_point"));
        assert!(network_type.point_to_multipoint.is_empty());
        let advanced = i.advanced.as_ref().unwrap();
        assert_eq!(advanced.routing_metric, Some(json!(2)));
        assert_eq!(advanced.hello_interval, Some(json!(10)));
        assert_eq!(advanced.dead_interval, Some(json!(40)));
        assert_eq!(advanced.priority, Some(json!(0)));
        assert_eq!(advanced.validate_received_mtu, Some(true));
        // Untouched in the test, so snappi writes no area (the default: id 0).
        assert!(i.area.is_none());

        let r = &o.v4_routes[0];
        assert_eq!(r.name, "dtx_ospfv2_rr4");
        assert_eq!(r.metric, Some(json!(10)));
        assert_eq!(r.addresses[0].address.as_deref(), Some("10.10.10.1"));
        assert_eq!(r.addresses[0].prefix, Some(json!(32)));
        // Untouched, so snappi writes no route_origin: the default choice, inter_area.
        assert!(r.route_origin.is_none());
    }

    /// Every sub-object of a router touched in snappi 1.60.0, so it writes all its defaults
    /// (and each choice of network_type, area, authentication and route_origin).
    #[test]
    fn ospfv2_every_snappi_default_is_modelled() {
        let flags = || json!({"flags": {"a_flag": false, "n_flag": false}});
        let route = |n: u8, origin: Value| {
            json!({
                "addresses": [{"address": "10.0.0.0", "count": 1, "prefix": 24, "step": 1}],
                "metric": 0,
                "name": format!("rr{n}"),
                "route_origin": origin
            })
        };
        let o: DeviceOspfv2 = serde_json::from_value(json!({
            "capabilities": {
                "dc_bit": false, "e_bit": false, "ea_bit": false, "lsa_b_bit": false,
                "lsa_e_bit": false, "mc_bit": false, "np_bit": false, "o_bit": false,
                "t_bit": false, "unused_bit": false
            },
            "graceful_restart": {"helper_mode": false},
            "inter_burst_lsu_interval": 33,
            "interfaces": [
                {
                    "advanced": {
                        "dead_interval": 40, "hello_interval": 10, "priority": 0,
                        "routing_metric": 10, "validate_received_mtu": true
                    },
                    "area": {"choice": "id", "id": 0},
                    "authentication": {"choice": "clear_text", "clear_text": "otg"},
                    "ipv4_name": "ip",
                    "link_protection": {
                        "dedicated_1_plus_1": false, "dedicated_1_to_1": false,
                        "enhanced": false, "extra_traffic": false, "reserved_40": false,
                        "reserved_80": false, "shared": false, "unprotected": false
                    },
                    "name": "i",
                    "network_type": {"choice": "broadcast"},
                    "srlg_values": [1, 2],
                    "traffic_engineering": [{
                        "administrative_group": "00000000",
                        "max_bandwith": 125000000,
                        "max_reservable_bandwidth": 125000000,
                        "metric_level": 0,
                        "priority_bandwidths": {
                            "pb0": 125000000, "pb1": 125000000, "pb2": 125000000,
                            "pb3": 125000000, "pb4": 125000000, "pb5": 125000000,
                            "pb6": 125000000, "pb7": 125000000
                        }
                    }]
                },
                {
                    "area": {"choice": "ip", "ip": "0.0.0.1"},
                    "authentication": {"choice": "md5s", "md5s": [{"key": "k", "key_id": 1}]},
                    "ipv4_name": "ip",
                    "name": "i2",
                    "network_type": {
                        "choice": "point_to_multipoint",
                        "point_to_multipoint": [{"neighbor_ip": "1.1.1.3"}]
                    }
                }
            ],
            "lsa_refresh_time": 1800,
            "lsa_retransmit_time": 5,
            "max_flood_lsu_per_burst": 1,
            "name": "r",
            "router_id": {"choice": "custom", "custom": "9.9.9.9"},
            "store_lsa": false,
            "v4_routes": [
                route(0, json!({"choice": "intra_area", "intra_area": flags()})),
                route(1, json!({"choice": "inter_area", "inter_area": {}})),
                route(2, json!({"choice": "external_type_1", "external_type_1": flags()})),
                route(3, json!({"choice": "external_type_2", "external_type_2": flags()})),
                route(4, json!({"choice": "nssa_external", "nssa_external": {
                    "flags": {"a_flag": false, "n_flag": false}, "propagation": false
                }}))
            ]
        }))
        .unwrap();
        assert_no_rest(&o);
        let i = &o.interfaces;
        assert_eq!(i[0].area.as_ref().unwrap().id, Some(json!(0)));
        assert_eq!(i[0].srlg_values, [json!(1), json!(2)]);
        assert_eq!(i[0].traffic_engineering.len(), 1);
        let auth = i[1].authentication.as_ref().unwrap();
        assert_eq!(auth.md5s[0].key.as_deref(), Some("k"));
        let network_type = i[1].network_type.as_ref().unwrap();
        assert_eq!(network_type.choice.as_deref(), Some("point_to_multipoint"));
        assert_eq!(
            network_type.point_to_multipoint[0].neighbor_ip.as_deref(),
            Some("1.1.1.3")
        );
        let origin = o.v4_routes[4].route_origin.as_ref().unwrap();
        assert_eq!(
            origin.nssa_external.as_ref().unwrap().propagation,
            Some(false)
        );
        assert!(
            o.v4_routes[1]
                .route_origin
                .as_ref()
                .unwrap()
                .inter_area
                .is_some()
        );
    }

    /// An unmodelled key stays in `rest`, for the refusal by path.
    #[test]
    fn ospfv2_unknown_keys_stay_in_rest() {
        let o: DeviceOspfv2 = serde_json::from_value(json!({
            "name": "r",
            "interfaces": [{"name": "i", "ipv4_name": "ip", "advanced": {"bfd": true}}],
            "segment_routing": {}
        }))
        .unwrap();
        let kept: Vec<String> = rests(&o)
            .into_iter()
            .flat_map(|(path, rest)| rest.keys().map(move |k| format!("{path}.{k}")))
            .collect();
        assert_eq!(
            kept,
            [
                "ospfv2.segment_routing",
                "ospfv2.interfaces[0].advanced.bfd"
            ]
        );
    }

    /// What snappi 1.60.0 writes for get_metrics `ospfv2` and get_states `ospfv2_lsas`.
    #[test]
    fn ospfv2_requests_are_read() {
        let m: MetricsRequest = serde_json::from_value(
            json!({"choice": "ospfv2", "ospfv2": {"router_names": ["dtx_ospfv2"]}}),
        )
        .unwrap();
        assert!(m.rest.is_empty());
        let asked = m.ospfv2.unwrap();
        assert_eq!(asked.router_names, ["dtx_ospfv2"]);
        assert!(asked.column_names.is_empty() && asked.rest.is_empty());

        let s: StatesRequest = serde_json::from_value(
            json!({"choice": "ospfv2_lsas", "ospfv2_lsas": {"router_names": ["dtx_ospfv2"]}}),
        )
        .unwrap();
        assert!(s.rest.is_empty());
        let asked = s.ospfv2_lsas.unwrap();
        assert_eq!(asked.router_names, ["dtx_ospfv2"]);
        assert!(asked.rest.is_empty());

        let s: StatesRequest =
            serde_json::from_value(json!({"choice": "ospfv2_lsas", "ospfv2_lsas": {}})).unwrap();
        assert!(s.ospfv2_lsas.unwrap().router_names.is_empty());
    }

    /// The keys of Ospfv2.Metric: every one, always (snappi 1.60.0 reads this body back whole).
    #[test]
    fn ospfv2_metric_keys() {
        let response = MetricsResponse {
            choice: "ospfv2_metrics".into(),
            ospfv2_metrics: Some(vec![Ospfv2Metric {
                name: "dtx_ospfv2".into(),
                full_state_count: 1,
                lsa_sent: 2,
                lsa_received: 3,
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            json!({
                "choice": "ospfv2_metrics",
                "ospfv2_metrics": [{
                    "name": "dtx_ospfv2",
                    "full_state_count": 1,
                    "down_state_count": 0,
                    "sessions_flap": 0,
                    "hellos_sent": 0,
                    "hellos_received": 0,
                    "dbd_sent": 0,
                    "dbd_received": 0,
                    "ls_request_sent": 0,
                    "ls_request_received": 0,
                    "ls_update_sent": 0,
                    "ls_update_received": 0,
                    "ls_ack_sent": 0,
                    "ls_ack_received": 0,
                    "lsa_sent": 2,
                    "lsa_received": 3,
                    "lsa_ack_sent": 0,
                    "lsa_ack_received": 0,
                    "router_lsa_sent": 0,
                    "router_lsa_received": 0,
                    "network_lsa_sent": 0,
                    "network_lsa_received": 0,
                    "summary_lsa_sent": 0,
                    "summary_lsa_received": 0,
                    "external_lsa_sent": 0,
                    "external_lsa_received": 0,
                    "nssa_lsa_sent": 0,
                    "nssa_lsa_received": 0,
                    "opaque_local_sent": 0,
                    "opaque_local_received": 0,
                    "opaque_area_sent": 0,
                    "opaque_area_received": 0,
                    "opaque_domain_sent": 0,
                    "opaque_domain_received": 0
                }]
            })
        );
    }

    /// The keys of Ospfv2Lsa.State and its LSAs (snappi 1.60.0 reads this body back whole).
    #[test]
    fn ospfv2_lsa_state_keys() {
        let header = |lsa_id: &str| Ospfv2LsaHeader {
            lsa_id: lsa_id.into(),
            advertising_router_id: "1.1.1.2".into(),
            sequence_number: 0x8000_0001,
            age: 3,
            option_bits: 2,
        };
        let mask = || "255.255.255.255".to_string();
        let response = StatesResponse {
            choice: "ospfv2_lsas".into(),
            ospfv2_lsas: Some(vec![Ospfv2LsaState {
                router_name: "dtx_ospfv2".into(),
                router_lsas: vec![Ospfv2RouterLsa {
                    header: header("1.1.1.2"),
                    links: vec![Ospfv2Link {
                        kind: "point_to_point".into(),
                        id: "1.1.1.1".into(),
                        data: "1.1.1.2".into(),
                        metric: 2,
                    }],
                }],
                network_lsas: vec![Ospfv2NetworkLsa {
                    header: header("1.1.1.2"),
                    network_mask: "255.255.255.0".into(),
                    neighbor_router_ids: vec!["1.1.1.1".into()],
                }],
                network_summary_lsas: vec![Ospfv2NetworkSummaryLsa {
                    header: header("20.20.20.1"),
                    network_mask: mask(),
                    metric: 10,
                }],
                summary_as_lsas: vec![Ospfv2SummaryAsLsa {
                    header: header("2.2.2.2"),
                    network_mask: "0.0.0.0".into(),
                    metric: 10,
                }],
                external_as_lsas: vec![Ospfv2ExternalAsLsa {
                    header: header("30.30.30.1"),
                    network_mask: mask(),
                    metric: 10,
                    metric_type: 2,
                }],
                nssa_lsas: vec![Ospfv2NssaLsa {
                    header: header("40.40.40.1"),
                    network_mask: mask(),
                    metric: 10,
                    metric_type: 1,
                    forwarding_address: "1.1.1.2".into(),
                }],
                opaque_lsas: vec![Ospfv2OpaqueLsa {
                    header: header("1.0.0.1"),
                    kind: "area".into(),
                }],
            }]),
            ..Default::default()
        };
        let header = |lsa_id: &str| {
            json!({
                "lsa_id": lsa_id,
                "advertising_router_id": "1.1.1.2",
                "sequence_number": 0x8000_0001_u32,
                "age": 3,
                "option_bits": 2
            })
        };
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            json!({
                "choice": "ospfv2_lsas",
                "ospfv2_lsas": [{
                    "router_name": "dtx_ospfv2",
                    "router_lsas": [{
                        "header": header("1.1.1.2"),
                        "links": [{
                            "type": "point_to_point", "id": "1.1.1.1", "data": "1.1.1.2",
                            "metric": 2
                        }]
                    }],
                    "network_lsas": [{
                        "header": header("1.1.1.2"),
                        "network_mask": "255.255.255.0",
                        "neighbor_router_ids": ["1.1.1.1"]
                    }],
                    "network_summary_lsas": [{
                        "header": header("20.20.20.1"),
                        "network_mask": "255.255.255.255",
                        "metric": 10
                    }],
                    "summary_as_lsas": [{
                        "header": header("2.2.2.2"),
                        "network_mask": "0.0.0.0",
                        "metric": 10
                    }],
                    "external_as_lsas": [{
                        "header": header("30.30.30.1"),
                        "network_mask": "255.255.255.255",
                        "metric": 10,
                        "metric_type": 2
                    }],
                    "nssa_lsas": [{
                        "header": header("40.40.40.1"),
                        "network_mask": "255.255.255.255",
                        "metric": 10,
                        "metric_type": 1,
                        "forwarding_address": "1.1.1.2"
                    }],
                    "opaque_lsas": [{"header": header("1.0.0.1"), "type": "area"}]
                }]
            })
        );
        // And back: what linerate writes is what it reads.
        let back: StatesResponse =
            serde_json::from_value(serde_json::to_value(&response).unwrap()).unwrap();
        assert_eq!(back, response);
    }
}
