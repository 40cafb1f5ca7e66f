//! The OSPFv3 part of the models (v1.60.0): `Device.ospfv3` and what get_metrics and get_states
//! say of it, as snappi 1.60.0 writes and reads them. Only what linerate maps is a typed field;
//! every other key lands in `rest` and is refused by path.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Rest;
use crate::bgp::RouteAddress;

/// Device.Ospfv3Router: the router ID and the instances (no name of its own: the instances are
/// the "routers" the requests and answers name).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DeviceOspfv3 {
    pub router_id: Option<Ospfv3RouterId>,
    #[serde(default)]
    pub instances: Vec<Ospfv3Instance>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3.RouterId: `auto` (the default: the device's first IPv4 address) or `custom`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3RouterId {
    pub choice: Option<String>,
    /// Dotted.
    pub custom: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3.RouterInstance
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3Instance {
    pub name: String,
    /// Seconds.
    pub lsa_retransmit_time: Option<Value>,
    /// Seconds.
    pub lsa_refresh_time: Option<Value>,
    /// Milliseconds between flood LSU bursts.
    pub inter_burst_lsu_interval: Option<Value>,
    pub graceful_restart: Option<Ospfv3GracefulRestart>,
    /// What get_states keeps: the LSAs learned from neighbours.
    pub store_lsa: Option<bool>,
    pub capabilities: Option<Ospfv3Capabilities>,
    #[serde(default)]
    pub interfaces: Vec<Ospfv3Interface>,
    #[serde(default)]
    pub v6_routes: Vec<Ospfv3V6RouteRange>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3.GracefulRestart
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3GracefulRestart {
    pub helper_mode: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3.Capabilities: the router LSA's B and E bits.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3Capabilities {
    pub lsa_b_bit: Option<bool>,
    pub lsa_e_bit: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3.Interface
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3Interface {
    pub name: String,
    /// The Device.Ipv6 the interface runs on.
    pub ipv6_name: Option<String>,
    pub area: Option<Ospfv3InterfaceArea>,
    pub network_type: Option<Ospfv3InterfaceNetworkType>,
    pub advanced: Option<Ospfv3InterfaceAdvanced>,
    pub options: Option<Ospfv3InterfaceOptions>,
    /// The packets' Instance ID (0 to 255).
    pub instance_id: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3Interface.Area: `id` (the default, a 32-bit number) or `ip` (dotted).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3InterfaceArea {
    pub choice: Option<String>,
    pub id: Option<Value>,
    pub ip: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3Interface.NetworkType: `broadcast` (the default, with its DR priority) or
/// `point_to_point`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3InterfaceNetworkType {
    pub choice: Option<String>,
    pub broadcast: Option<Ospfv3InterfaceBroadcast>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3Interface.Broadcast
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3InterfaceBroadcast {
    /// The (Backup) Designated Router priority; 0 (the default): never DR.
    pub priority: Option<Value>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3Interface.Advanced
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3InterfaceAdvanced {
    /// Seconds.
    pub hello_interval: Option<Value>,
    /// Seconds.
    pub dead_interval: Option<Value>,
    /// The interface's cost.
    pub link_metric: Option<Value>,
    pub validate_received_mtu: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3Interface.Options: the Options bits of the interface's Hellos, DDs and LSAs
/// (RFC 5340 A.2).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3InterfaceOptions {
    pub dc_bit: Option<bool>,
    pub r_bit: Option<bool>,
    pub n_bit: Option<bool>,
    pub e_bit: Option<bool>,
    pub v6_bit: Option<bool>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3.V6RouteRange
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3V6RouteRange {
    pub name: String,
    #[serde(default)]
    pub addresses: Vec<RouteAddress>,
    pub metric: Option<Value>,
    pub route_origin: Option<Ospfv3RouteOrigin>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3V6RR.RouteOrigin: `intra_area`, `inter_area` (the default), `external_type_1`,
/// `external_type_2` or `nssa_external`; only the last has a sub-object.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3RouteOrigin {
    pub choice: Option<String>,
    pub nssa_external: Option<Ospfv3NssaExternal>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3V6RR.NssaExternal
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3NssaExternal {
    pub capabilities: Option<Ospfv3NssaCapabilities>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3V6RR.Capabilities
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3NssaCapabilities {
    /// The P bit: translate into AS-external LSAs at the area border.
    pub propagation: Option<bool>,
    pub forwarding_address: Option<Ospfv3ForwardingAddress>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3V6RR.ForwardingAddress: `interface_ip` (the default) or `custom` (an IPv6 address).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3ForwardingAddress {
    pub choice: Option<String>,
    pub custom: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3.Metrics.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3MetricsRequest {
    /// Instance names; empty: every OSPFv3 instance.
    #[serde(default)]
    pub router_names: Vec<String>,
    #[serde(default)]
    pub column_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3Lsas.State.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ospfv3LsasStateRequest {
    /// Instance names; empty: every OSPFv3 instance.
    #[serde(default)]
    pub router_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Ospfv3.Metric (one per instance)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3Metric {
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
    pub router_lsa_sent: u64,
    pub router_lsa_received: u64,
    pub network_lsa_sent: u64,
    pub network_lsa_received: u64,
    pub inter_area_prefix_lsa_sent: u64,
    pub inter_area_prefix_lsa_received: u64,
    pub inter_area_router_lsa_sent: u64,
    pub inter_area_router_lsa_received: u64,
    pub external_lsa_sent: u64,
    pub external_lsa_received: u64,
    pub nssa_lsa_sent: u64,
    pub nssa_lsa_received: u64,
    pub link_lsa_sent: u64,
    pub link_lsa_received: u64,
    pub intra_area_prefix_lsa_sent: u64,
    pub intra_area_prefix_lsa_received: u64,
}

/// Ospfv3Lsa.State: what one instance learned, by LSA type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3LsaState {
    pub router_name: String,
    /// Type 1.
    pub router_lsas: Vec<Ospfv3RouterLsa>,
    /// Type 2.
    pub network_lsas: Vec<Ospfv3NetworkLsa>,
    /// Type 3.
    pub inter_area_prefix_lsas: Vec<Ospfv3InterAreaPrefixLsa>,
    /// Type 4.
    pub inter_area_router_lsas: Vec<Ospfv3InterAreaRouterLsa>,
    /// Type 5.
    pub external_as_lsas: Vec<Ospfv3ExternalAsLsa>,
    /// Type 7.
    pub nssa_lsas: Vec<Ospfv3NssaLsa>,
    /// Type 8.
    pub link_lsas: Vec<Ospfv3LinkLsa>,
    /// Type 9.
    pub intra_area_prefix_lsas: Vec<Ospfv3IntraAreaPrefixLsa>,
}

/// Ospfv3.LsaHeader (no options: OSPFv3 carries them in the LSA bodies)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3LsaHeader {
    /// Dotted: the link state ID.
    pub lsa_id: String,
    pub advertising_router_id: String,
    pub sequence_number: u32,
    /// Seconds.
    pub age: u32,
}

/// Ospfv3.RouterLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3RouterLsa {
    pub header: Ospfv3LsaHeader,
    /// Dotted: the neighbour the LSA describes (one, whatever the links).
    pub neighbor_router_id: String,
    pub links: Vec<Ospfv3Link>,
}

/// Ospfv3.Link
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3Link {
    /// `point_to_point`, `transit`, `stub` or `virtual`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The interface's cost.
    pub metric: u32,
}

/// Ospfv3.NetworkLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3NetworkLsa {
    pub header: Ospfv3LsaHeader,
    pub attached_router_ids: Vec<String>,
}

/// Ospfv3.InterAreaPrefixLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3InterAreaPrefixLsa {
    pub header: Ospfv3LsaHeader,
    pub address_prefix: String,
    pub prefix_length: u32,
    pub metric: u32,
}

/// Ospfv3.InterAreaRouterLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3InterAreaRouterLsa {
    pub header: Ospfv3LsaHeader,
    pub metric: u32,
    /// Dotted.
    pub destination_router_id: String,
}

/// Ospfv3.ExternalAsLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3ExternalAsLsa {
    pub header: Ospfv3LsaHeader,
    pub address_prefix: String,
    pub prefix_length: u32,
    pub metric: u32,
    /// 0: no referenced LSA.
    pub referenced_ls_type: u32,
    /// IPv6.
    pub forwarding_address: String,
    /// Dotted (the schema's format for the 32-bit tag).
    pub route_tag: String,
}

/// Ospfv3.NssaLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3NssaLsa {
    pub header: Ospfv3LsaHeader,
    pub address_prefix: String,
    pub prefix_length: u32,
    pub metric: u32,
    /// IPv6.
    pub forwarding_address: String,
    /// Dotted (the schema's format for the 32-bit tag).
    pub route_tag: String,
}

/// Ospfv3.LinkLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3LinkLsa {
    pub header: Ospfv3LsaHeader,
    pub address_prefix: String,
    pub prefix_length: u32,
    pub link_local_address: String,
}

/// Ospfv3.IntraAreaPrefixLsa
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ospfv3IntraAreaPrefixLsa {
    pub header: Ospfv3LsaHeader,
    pub address_prefix: String,
    pub prefix_length: u32,
    pub metric: u32,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::{Device, MetricsRequest, MetricsResponse, StatesRequest, StatesResponse};

    /// Every `rest` of a router, by path, for the "nothing snappi writes is left over" checks.
    fn rests(o: &DeviceOspfv3) -> Vec<(String, &Rest)> {
        let mut all = vec![("ospfv3".to_string(), &o.rest)];
        let mut add = |path: String, rest: &'static str, r| all.push((format!("{path}{rest}"), r));
        if let Some(r) = &o.router_id {
            add("ospfv3.router_id".into(), "", &r.rest);
        }
        for (k, inst) in o.instances.iter().enumerate() {
            let q = format!("ospfv3.instances[{k}]");
            add(q.clone(), "", &inst.rest);
            if let Some(g) = &inst.graceful_restart {
                add(q.clone(), ".graceful_restart", &g.rest);
            }
            if let Some(c) = &inst.capabilities {
                add(q.clone(), ".capabilities", &c.rest);
            }
            for (n, i) in inst.interfaces.iter().enumerate() {
                let p = format!("{q}.interfaces[{n}]");
                add(p.clone(), "", &i.rest);
                if let Some(a) = &i.area {
                    add(p.clone(), ".area", &a.rest);
                }
                if let Some(t) = &i.network_type {
                    add(p.clone(), ".network_type", &t.rest);
                    if let Some(b) = &t.broadcast {
                        add(p.clone(), ".network_type.broadcast", &b.rest);
                    }
                }
                if let Some(a) = &i.advanced {
                    add(p.clone(), ".advanced", &a.rest);
                }
                if let Some(x) = &i.options {
                    add(p.clone(), ".options", &x.rest);
                }
            }
            for (n, r) in inst.v6_routes.iter().enumerate() {
                let p = format!("{q}.v6_routes[{n}]");
                add(p.clone(), "", &r.rest);
                for (m, a) in r.addresses.iter().enumerate() {
                    add(format!("{p}.addresses[{m}]"), "", &a.rest);
                }
                let Some(o) = &r.route_origin else { continue };
                add(p.clone(), ".route_origin", &o.rest);
                let Some(x) = &o.nssa_external else { continue };
                add(p.clone(), ".route_origin.nssa_external", &x.rest);
                let Some(c) = &x.capabilities else { continue };
                let p = format!("{p}.route_origin.nssa_external.capabilities");
                add(p.clone(), "", &c.rest);
                if let Some(f) = &c.forwarding_address {
                    add(p, ".forwarding_address", &f.rest);
                }
            }
        }
        all
    }

    fn assert_no_rest(o: &DeviceOspfv3) {
        for (path, rest) in rests(o) {
            assert!(rest.is_empty(), "{path} kept {rest:?}");
        }
    }

    /// Device `dtx` of the conformance test feature/b2b/ospfv3/test_ospfv3_p2p_lsa.py, as
    /// snappi 1.60.0 serialises it (its defaults included).
    fn p2p_lsa_device() -> Value {
        json!({
            "ethernets": [{
                "connection": {"choice": "port_name", "port_name": "ptx"},
                "ipv6_addresses": [{
                    "address": "::1:1:1:1", "gateway": "::1:1:1:2", "name": "dtx_ipv6",
                    "prefix": 64
                }],
                "mac": "00:00:01:01:01:01",
                "mtu": 1500,
                "name": "dtx_eth"
            }],
            "name": "dtx",
            "ospfv3": {
                "instances": [{
                    "inter_burst_lsu_interval": 1000,
                    "interfaces": [{
                        "advanced": {
                            "dead_interval": 40,
                            "hello_interval": 10,
                            "link_metric": 20,
                            "validate_received_mtu": true
                        },
                        "instance_id": 0,
                        "ipv6_name": "dtx_ipv6",
                        "name": "dtx_ospfv3_int",
                        "network_type": {"choice": "point_to_point"}
                    }],
                    "lsa_refresh_time": 1800,
                    "lsa_retransmit_time": 5,
                    "name": "dtx_ospfv3",
                    "store_lsa": true,
                    "v6_routes": [{
                        "addresses": [{
                            "address": "4:4:4:0:0:0:0:1", "count": 1, "prefix": 64, "step": 1
                        }],
                        "metric": 10,
                        "name": "dtx_ospfv3_rr6"
                    }]
                }],
                "router_id": {"choice": "custom", "custom": "5.5.5.5"}
            }
        })
    }

    #[test]
    fn ospfv3_p2p_lsa_device_is_read_whole() {
        let device: Device = serde_json::from_value(p2p_lsa_device()).unwrap();
        assert!(device.rest.is_empty(), "{:?}", device.rest);
        assert!(device.ethernets[0].rest.is_empty());
        assert!(device.ethernets[0].ipv6_addresses[0].rest.is_empty());
        let o = device.ospfv3.as_ref().expect("ospfv3 is a typed field");
        assert_no_rest(o);
        let router_id = o.router_id.as_ref().unwrap();
        assert_eq!(router_id.choice.as_deref(), Some("custom"));
        assert_eq!(router_id.custom.as_deref(), Some("5.5.5.5"));

        let inst = &o.instances[0];
        assert_eq!(inst.name, "dtx_ospfv3");
        assert_eq!(inst.store_lsa, Some(true));
        assert_eq!(inst.lsa_retransmit_time, Some(json!(5)));
        assert_eq!(inst.lsa_refresh_time, Some(json!(1800)));
        assert_eq!(inst.inter_burst_lsu_interval, Some(json!(1000)));
        assert!(inst.graceful_restart.is_none() && inst.capabilities.is_none());

        let i = &inst.interfaces[0];
        assert_eq!(i.name, "dtx_ospfv3_int");
        assert_eq!(i.ipv6_name.as_deref(), Some("dtx_ipv6"));
        assert_eq!(i.instance_id, Some(json!(0)));
        let network_type = i.network_type.as_ref().unwrap();
        assert_eq!(network_type.choice.as_deref(), Some("point_to_point"));
        assert!(network_type.broadcast.is_none());
        let advanced = i.advanced.as_ref().unwrap();
        assert_eq!(advanced.link_metric, Some(json!(20)));
        assert_eq!(advanced.hello_interval, Some(json!(10)));
        assert_eq!(advanced.dead_interval, Some(json!(40)));
        assert_eq!(advanced.validate_received_mtu, Some(true));
        // Untouched in the test, so snappi writes no area (the default: id 0) and no options.
        assert!(i.area.is_none() && i.options.is_none());

        let r = &inst.v6_routes[0];
        assert_eq!(r.name, "dtx_ospfv3_rr6");
        assert_eq!(r.metric, Some(json!(10)));
        assert_eq!(r.addresses[0].address.as_deref(), Some("4:4:4:0:0:0:0:1"));
        assert_eq!(r.addresses[0].prefix, Some(json!(64)));
        // Untouched, so snappi writes no route_origin: the default choice, inter_area.
        assert!(r.route_origin.is_none());
    }

    /// A router with every sub-object touched in snappi 1.60.0, so it writes all its defaults
    /// (and each choice of router_id, area, network_type, route_origin and forwarding_address),
    /// as it serialises it.
    fn every_default_router() -> Value {
        let route = |n: u8, origin: Value| {
            json!({
                "addresses": [{"address": "2001:db8::", "count": 1, "prefix": 64, "step": 1}],
                "metric": 0,
                "name": format!("rr{n}"),
                "route_origin": origin
            })
        };
        let nssa = |forwarding_address: Value| {
            json!({"choice": "nssa_external", "nssa_external": {"capabilities": {
                "forwarding_address": forwarding_address, "propagation": false
            }}})
        };
        json!({
            "instances": [{
                "capabilities": {"lsa_b_bit": false, "lsa_e_bit": false},
                "graceful_restart": {"helper_mode": false},
                "inter_burst_lsu_interval": 1000,
                "interfaces": [
                    {
                        "advanced": {
                            "dead_interval": 40, "hello_interval": 10, "link_metric": 10,
                            "validate_received_mtu": true
                        },
                        "area": {"choice": "id", "id": 0},
                        "instance_id": 0,
                        "ipv6_name": "ip",
                        "name": "i",
                        "network_type": {"broadcast": {"priority": 0}, "choice": "broadcast"},
                        "options": {
                            "dc_bit": false, "e_bit": true, "n_bit": false, "r_bit": true,
                            "v6_bit": true
                        }
                    },
                    {
                        "area": {"choice": "ip", "ip": "0.0.0.1"},
                        "instance_id": 0,
                        "ipv6_name": "ip",
                        "name": "i2",
                        "network_type": {"choice": "point_to_point"}
                    }
                ],
                "lsa_refresh_time": 1800,
                "lsa_retransmit_time": 5,
                "name": "r",
                "store_lsa": false,
                "v6_routes": [
                    route(0, json!({"choice": "intra_area"})),
                    route(1, json!({"choice": "inter_area"})),
                    route(2, json!({"choice": "external_type_1"})),
                    route(3, json!({"choice": "external_type_2"})),
                    route(4, nssa(json!({"choice": "interface_ip"}))),
                    {
                        "metric": 0,
                        "name": "rr5",
                        "route_origin": nssa(json!({"choice": "custom", "custom": "2001:db8::1"}))
                    }
                ]
            }],
            "router_id": {"choice": "auto"}
        })
    }

    #[test]
    fn ospfv3_every_snappi_default_is_modelled() {
        let o: DeviceOspfv3 = serde_json::from_value(every_default_router()).unwrap();
        assert_no_rest(&o);
        assert_eq!(
            o.router_id.as_ref().unwrap().choice.as_deref(),
            Some("auto")
        );
        let inst = &o.instances[0];
        let i = &inst.interfaces;
        assert_eq!(i[0].area.as_ref().unwrap().id, Some(json!(0)));
        let network_type = i[0].network_type.as_ref().unwrap();
        assert_eq!(
            network_type.broadcast.as_ref().unwrap().priority,
            Some(json!(0))
        );
        assert_eq!(i[0].options.as_ref().unwrap().v6_bit, Some(true));
        assert_eq!(i[1].area.as_ref().unwrap().ip.as_deref(), Some("0.0.0.1"));
        let origin = inst.v6_routes[5].route_origin.as_ref().unwrap();
        let capabilities = origin
            .nssa_external
            .as_ref()
            .unwrap()
            .capabilities
            .as_ref()
            .unwrap();
        assert_eq!(capabilities.propagation, Some(false));
        let forwarding_address = capabilities.forwarding_address.as_ref().unwrap();
        assert_eq!(forwarding_address.choice.as_deref(), Some("custom"));
        assert_eq!(forwarding_address.custom.as_deref(), Some("2001:db8::1"));
        assert_eq!(
            inst.v6_routes[2]
                .route_origin
                .as_ref()
                .unwrap()
                .choice
                .as_deref(),
            Some("external_type_1")
        );
    }

    /// An unmodelled key stays in `rest`, for the refusal by path (OSPFv2's keys included).
    #[test]
    fn ospfv3_unknown_keys_stay_in_rest() {
        let o: DeviceOspfv3 = serde_json::from_value(json!({
            "name": "r",
            "instances": [{
                "name": "r",
                "max_flood_lsu_per_burst": 1,
                "interfaces": [{
                    "name": "i", "ipv6_name": "ip", "advanced": {"routing_metric": 2},
                    "authentication": {}
                }],
                "v6_routes": [{"name": "rr", "route_origin": {"intra_area": {"flags": {}}}}]
            }]
        }))
        .unwrap();
        let kept: Vec<String> = rests(&o)
            .into_iter()
            .flat_map(|(path, rest)| rest.keys().map(move |k| format!("{path}.{k}")))
            .collect();
        assert_eq!(
            kept,
            [
                "ospfv3.name",
                "ospfv3.instances[0].max_flood_lsu_per_burst",
                "ospfv3.instances[0].interfaces[0].authentication",
                "ospfv3.instances[0].interfaces[0].advanced.routing_metric",
                "ospfv3.instances[0].v6_routes[0].route_origin.intra_area"
            ]
        );
    }

    /// What snappi 1.60.0 writes for get_metrics `ospfv3` and get_states `ospfv3_lsas`.
    #[test]
    fn ospfv3_requests_are_read() {
        let m: MetricsRequest = serde_json::from_value(
            json!({"choice": "ospfv3", "ospfv3": {"router_names": ["dtx_ospfv3"]}}),
        )
        .unwrap();
        assert!(m.rest.is_empty());
        let asked = m.ospfv3.unwrap();
        assert_eq!(asked.router_names, ["dtx_ospfv3"]);
        assert!(asked.column_names.is_empty() && asked.rest.is_empty());

        let m: MetricsRequest = serde_json::from_value(json!({
            "choice": "ospfv3",
            "ospfv3": {"column_names": ["full_state_count", "link_lsa_received"]}
        }))
        .unwrap();
        let asked = m.ospfv3.unwrap();
        assert_eq!(
            asked.column_names,
            ["full_state_count", "link_lsa_received"]
        );
        assert!(asked.router_names.is_empty());

        let s: StatesRequest = serde_json::from_value(
            json!({"choice": "ospfv3_lsas", "ospfv3_lsas": {"router_names": ["dtx_ospfv3"]}}),
        )
        .unwrap();
        assert!(s.rest.is_empty());
        let asked = s.ospfv3_lsas.unwrap();
        assert_eq!(asked.router_names, ["dtx_ospfv3"]);
        assert!(asked.rest.is_empty());

        let s: StatesRequest =
            serde_json::from_value(json!({"choice": "ospfv3_lsas", "ospfv3_lsas": {}})).unwrap();
        assert!(s.ospfv3_lsas.unwrap().router_names.is_empty());
    }

    /// The keys of Ospfv3.Metric: every one, always (snappi 1.60.0 reads this body back whole).
    #[test]
    fn ospfv3_metric_keys() {
        let response = MetricsResponse {
            choice: "ospfv3_metrics".into(),
            ospfv3_metrics: Some(vec![Ospfv3Metric {
                name: "dtx_ospfv3".into(),
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
                "choice": "ospfv3_metrics",
                "ospfv3_metrics": [{
                    "name": "dtx_ospfv3",
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
                    "router_lsa_sent": 0,
                    "router_lsa_received": 0,
                    "network_lsa_sent": 0,
                    "network_lsa_received": 0,
                    "inter_area_prefix_lsa_sent": 0,
                    "inter_area_prefix_lsa_received": 0,
                    "inter_area_router_lsa_sent": 0,
                    "inter_area_router_lsa_received": 0,
                    "external_lsa_sent": 0,
                    "external_lsa_received": 0,
                    "nssa_lsa_sent": 0,
                    "nssa_lsa_received": 0,
                    "link_lsa_sent": 0,
                    "link_lsa_received": 0,
                    "intra_area_prefix_lsa_sent": 0,
                    "intra_area_prefix_lsa_received": 0
                }]
            })
        );
    }

    /// The LSAs the conformance test checks (as dtx_ospfv3 learns them from drx_ospfv3), and
    /// one of every other type.
    fn lsa_state() -> Ospfv3LsaState {
        let header = |lsa_id: &str| Ospfv3LsaHeader {
            lsa_id: lsa_id.into(),
            advertising_router_id: "7.7.7.7".into(),
            sequence_number: 0x8000_0001,
            age: 3,
        };
        Ospfv3LsaState {
            router_name: "dtx_ospfv3".into(),
            router_lsas: vec![Ospfv3RouterLsa {
                header: header("0.0.0.0"),
                neighbor_router_id: "5.5.5.5".into(),
                links: vec![Ospfv3Link {
                    kind: "point_to_point".into(),
                    metric: 19,
                }],
            }],
            network_lsas: vec![Ospfv3NetworkLsa {
                header: header("0.0.0.1"),
                attached_router_ids: vec!["5.5.5.5".into(), "7.7.7.7".into()],
            }],
            inter_area_prefix_lsas: vec![Ospfv3InterAreaPrefixLsa {
                header: header("0.0.0.2"),
                address_prefix: "6:6:6::".into(),
                prefix_length: 64,
                metric: 9,
            }],
            inter_area_router_lsas: vec![Ospfv3InterAreaRouterLsa {
                header: header("0.0.0.3"),
                metric: 9,
                destination_router_id: "8.8.8.8".into(),
            }],
            external_as_lsas: vec![Ospfv3ExternalAsLsa {
                header: header("0.0.0.4"),
                address_prefix: "7:7:7::".into(),
                prefix_length: 64,
                metric: 9,
                referenced_ls_type: 0,
                forwarding_address: "::1:1:1:2".into(),
                route_tag: "0.0.0.0".into(),
            }],
            nssa_lsas: vec![Ospfv3NssaLsa {
                header: header("0.0.0.5"),
                address_prefix: "8:8:8::".into(),
                prefix_length: 64,
                metric: 9,
                forwarding_address: "::1:1:1:2".into(),
                route_tag: "0.0.0.7".into(),
            }],
            link_lsas: vec![Ospfv3LinkLsa {
                header: header("0.0.0.6"),
                address_prefix: "::".into(),
                prefix_length: 64,
                link_local_address: "fe80::200:1ff:fe01:102".into(),
            }],
            intra_area_prefix_lsas: vec![Ospfv3IntraAreaPrefixLsa {
                header: header("0.0.0.7"),
                address_prefix: "::".into(),
                prefix_length: 64,
                metric: 19,
            }],
        }
    }

    /// The keys of Ospfv3Lsa.State and its LSAs (snappi 1.60.0 reads this body back whole).
    #[test]
    fn ospfv3_lsa_state_keys() {
        let response = StatesResponse {
            choice: "ospfv3_lsas".into(),
            ospfv3_lsas: Some(vec![lsa_state()]),
            ..Default::default()
        };
        let header = |lsa_id: &str| {
            json!({
                "lsa_id": lsa_id,
                "advertising_router_id": "7.7.7.7",
                "sequence_number": 0x8000_0001_u32,
                "age": 3
            })
        };
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            json!({
                "choice": "ospfv3_lsas",
                "ospfv3_lsas": [{
                    "router_name": "dtx_ospfv3",
                    "router_lsas": [{
                        "header": header("0.0.0.0"),
                        "neighbor_router_id": "5.5.5.5",
                        "links": [{"type": "point_to_point", "metric": 19}]
                    }],
                    "network_lsas": [{
                        "header": header("0.0.0.1"),
                        "attached_router_ids": ["5.5.5.5", "7.7.7.7"]
                    }],
                    "inter_area_prefix_lsas": [{
                        "header": header("0.0.0.2"),
                        "address_prefix": "6:6:6::",
                        "prefix_length": 64,
                        "metric": 9
                    }],
                    "inter_area_router_lsas": [{
                        "header": header("0.0.0.3"),
                        "metric": 9,
                        "destination_router_id": "8.8.8.8"
                    }],
                    "external_as_lsas": [{
                        "header": header("0.0.0.4"),
                        "address_prefix": "7:7:7::",
                        "prefix_length": 64,
                        "metric": 9,
                        "referenced_ls_type": 0,
                        "forwarding_address": "::1:1:1:2",
                        "route_tag": "0.0.0.0"
                    }],
                    "nssa_lsas": [{
                        "header": header("0.0.0.5"),
                        "address_prefix": "8:8:8::",
                        "prefix_length": 64,
                        "metric": 9,
                        "forwarding_address": "::1:1:1:2",
                        "route_tag": "0.0.0.7"
                    }],
                    "link_lsas": [{
                        "header": header("0.0.0.6"),
                        "address_prefix": "::",
                        "prefix_length": 64,
                        "link_local_address": "fe80::200:1ff:fe01:102"
                    }],
                    "intra_area_prefix_lsas": [{
                        "header": header("0.0.0.7"),
                        "address_prefix": "::",
                        "prefix_length": 64,
                        "metric": 19
                    }]
                }]
            })
        );
        // And back: what linerate writes is what it reads.
        let back: StatesResponse =
            serde_json::from_value(serde_json::to_value(&response).unwrap()).unwrap();
        assert_eq!(back, response);
    }
}
