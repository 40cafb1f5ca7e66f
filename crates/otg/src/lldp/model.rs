//! The LLDP part of the models (v1.60.0): the config's `lldp[]` and what get_metrics and
//! get_states say of it, as snappi 1.60.0 writes and reads them. Only what linerate maps is a
//! typed field; every other key lands in `rest` and is refused by path.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Rest;

/// Lldp: one LLDP agent, on a port.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Lldp {
    pub name: String,
    pub connection: Option<LldpConnection>,
    pub chassis_id: Option<LldpChassisId>,
    pub port_id: Option<LldpPortId>,
    pub system_name: Option<LldpSystemName>,
    /// Seconds a receiver keeps what the agent sends (the TTL; 10 to 65535, 120 by default).
    pub hold_time: Option<Value>,
    /// Seconds between LLDPDUs (5 to 65534, 30 by default).
    pub advertisement_interval: Option<Value>,
    /// The organizationally specific TLVs sent.
    #[serde(default)]
    pub org_infos: Vec<LldpOrgInfo>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lldp.Connection: `port_name` (the only choice).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LldpConnection {
    pub choice: Option<String>,
    pub port_name: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lldp.ChassisId: the Chassis ID TLV's subtype, `mac_address_subtype` (the default, with its
/// MAC), `interface_name_subtype` or `local_subtype` (each a string).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LldpChassisId {
    pub choice: Option<String>,
    pub mac_address_subtype: Option<LldpChassisMacSubType>,
    pub interface_name_subtype: Option<String>,
    pub local_subtype: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lldp.ChassisMacSubType: `auto` (the default: the implementation's) or `value` (a MAC); the
/// `auto` key is the MAC snappi echoes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LldpChassisMacSubType {
    pub choice: Option<String>,
    pub auto: Option<String>,
    pub value: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lldp.PortId: the Port ID TLV's subtype, `mac_address_subtype` (a MAC),
/// `interface_name_subtype` (the default, with its name) or `local_subtype` (a string).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LldpPortId {
    pub choice: Option<String>,
    pub mac_address_subtype: Option<String>,
    pub interface_name_subtype: Option<LldpPortInterfaceNameSubType>,
    pub local_subtype: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lldp.PortInterfaceNameSubType: `auto` (the default: the implementation's) or `value`; the
/// `auto` key is the name snappi echoes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LldpPortInterfaceNameSubType {
    pub choice: Option<String>,
    pub auto: Option<String>,
    pub value: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lldp.SystemName: the System Name TLV, `auto` (the default: "the OTG implementation must
/// provide a system generated value") or `value`; the `auto` key is the name snappi echoes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LldpSystemName {
    pub choice: Option<String>,
    pub auto: Option<String>,
    pub value: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lldp.OrgInfo: one Organizationally Specific TLV (type 127).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LldpOrgInfo {
    /// Six hex digits (`0080C2`, IEEE 802.1, by default).
    pub oui: Option<String>,
    /// 1 to 127 (1 by default).
    pub subtype: Option<Value>,
    pub information: Option<LldpOrgInfoType>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lldp.OrgInfoType: `info` (the only choice).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LldpOrgInfoType {
    pub choice: Option<String>,
    /// The information string's bytes, two hex digits each (1 to 507 bytes).
    pub info: Option<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lldp.Metrics.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LldpMetricsRequest {
    /// Agent names; empty: every LLDP agent.
    #[serde(default)]
    pub lldp_names: Vec<String>,
    #[serde(default)]
    pub column_names: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// LldpNeighbors.State.Request
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LldpNeighborsStateRequest {
    /// Agent names; empty: every LLDP agent.
    #[serde(default)]
    pub lldp_names: Vec<String>,
    /// `neighbor_id`s; empty: every neighbour.
    #[serde(default)]
    pub neighbor_id_filters: Vec<String>,
    #[serde(flatten)]
    pub rest: Rest,
}

/// Lldp.Metric (one per agent)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LldpMetric {
    pub name: String,
    pub frames_rx: u64,
    pub frames_tx: u64,
    pub frames_error_rx: u64,
    pub frames_discard: u64,
    pub tlvs_discard: u64,
    pub tlvs_unknown: u64,
}

/// LldpNeighbors.State: one neighbour an agent heard.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LldpNeighborsState {
    pub lldp_name: String,
    pub system_name: String,
    pub system_description: String,
    pub chassis_id: String,
    /// `port_component`, `network_address`, `chassis_component`, `mac_address`,
    /// `interface_name`, `local` or `interface_alias`; absent for any other subtype (snappi
    /// 1.60.0 refuses the whole answer for an empty or other value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chassis_id_type: Option<String>,
    pub neighbor_id: String,
    /// Seconds since discovery.
    pub age: u32,
    /// Seconds since the last update.
    pub last_update: u32,
    /// Seconds.
    pub ttl: u32,
    pub port_id: String,
    /// `port_component`, `network_address`, `agent_circuit_id`, `mac_address`,
    /// `interface_name`, `local` or `interface_alias`; absent for any other subtype (as
    /// `chassis_id_type`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_id_type: Option<String>,
    pub port_description: String,
    pub management_address: String,
    pub management_address_type: String,
    pub custom_tlvs: Vec<LldpCustomTlvState>,
    pub capabilities: Vec<LldpCapabilityState>,
}

/// LldpCustomTLV.State: an Organizationally Specific TLV (type 127) heard.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LldpCustomTlvState {
    pub custom_type: u32,
    pub oui: String,
    pub oui_subtype: u32,
    /// The bytes after the subtype, in lowercase hex.
    pub information: String,
}

/// LldpCapability.State
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LldpCapabilityState {
    /// `mac_bridge`, `two_port_mac_relay`, `repeater`, `docsis_cable_device`, `s_vlan`,
    /// `telephone`, `other`, `router`, `c_vlan`, `station_only` or `wlan_access_point` (snappi
    /// 1.60.0 refuses the whole answer for any other name).
    pub capability_name: String,
    pub capability_enabled: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::{Config, MetricsRequest, MetricsResponse, StatesRequest, StatesResponse};

    /// Every `rest` of an agent, by path, for the "nothing snappi writes is left over" checks.
    fn rests(k: usize, l: &Lldp) -> Vec<(String, &Rest)> {
        let p = format!("lldp[{k}]");
        let mut all = vec![(p.clone(), &l.rest)];
        if let Some(c) = &l.connection {
            all.push((format!("{p}.connection"), &c.rest));
        }
        if let Some(c) = &l.chassis_id {
            all.push((format!("{p}.chassis_id"), &c.rest));
            if let Some(m) = &c.mac_address_subtype {
                all.push((format!("{p}.chassis_id.mac_address_subtype"), &m.rest));
            }
        }
        if let Some(i) = &l.port_id {
            all.push((format!("{p}.port_id"), &i.rest));
            if let Some(n) = &i.interface_name_subtype {
                all.push((format!("{p}.port_id.interface_name_subtype"), &n.rest));
            }
        }
        if let Some(s) = &l.system_name {
            all.push((format!("{p}.system_name"), &s.rest));
        }
        for (n, o) in l.org_infos.iter().enumerate() {
            all.push((format!("{p}.org_infos[{n}]"), &o.rest));
            if let Some(i) = &o.information {
                all.push((format!("{p}.org_infos[{n}].information"), &i.rest));
            }
        }
        all
    }

    fn assert_no_rest(lldp: &[Lldp]) {
        for (k, l) in lldp.iter().enumerate() {
            for (path, rest) in rests(k, l) {
                assert!(rest.is_empty(), "{path} kept {rest:?}");
            }
        }
    }

    /// What snappi 1.60.0 writes for feature/b2b/lldp/test_lldp_neighbors.py's config (the
    /// test run up to set_config, as linerate's OTG ports).
    fn lldp_neighbors_config() -> Value {
        let agent = |name: &str, port: &str, mac: &str| {
            json!({
                "advertisement_interval": 5,
                "chassis_id": {
                    "choice": "mac_address_subtype",
                    "mac_address_subtype": {"choice": "value", "value": mac}
                },
                "connection": {"choice": "port_name", "port_name": port},
                "hold_time": 120,
                "name": name
            })
        };
        json!({
            "layer1": [{
                "mtu": 1500,
                "name": "ly",
                "port_names": ["ptx", "prx"],
                "promiscuous": true,
                "speed": "speed_1_gbps"
            }],
            "lldp": [
                agent("lldp_tx", "ptx", "00:00:01:01:01:01"),
                agent("lldp_rx", "prx", "00:00:01:01:01:02")
            ],
            "ports": [
                {"location": "lr0", "name": "ptx"},
                {"location": "lr1@lr-sink", "name": "prx"}
            ]
        })
    }

    #[test]
    fn lldp_neighbors_config_is_read_whole() {
        let config: Config = serde_json::from_value(lldp_neighbors_config()).unwrap();
        assert!(config.rest.is_empty(), "{:?}", config.rest);
        assert_no_rest(&config.lldp);
        assert_eq!(config.lldp.len(), 2);

        let l = &config.lldp[0];
        assert_eq!(l.name, "lldp_tx");
        let connection = l.connection.as_ref().unwrap();
        assert_eq!(connection.choice.as_deref(), Some("port_name"));
        assert_eq!(connection.port_name.as_deref(), Some("ptx"));
        let chassis_id = l.chassis_id.as_ref().unwrap();
        assert_eq!(chassis_id.choice.as_deref(), Some("mac_address_subtype"));
        assert!(chassis_id.interface_name_subtype.is_none() && chassis_id.local_subtype.is_none());
        let mac = chassis_id.mac_address_subtype.as_ref().unwrap();
        assert_eq!(mac.choice.as_deref(), Some("value"));
        assert_eq!(mac.value.as_deref(), Some("00:00:01:01:01:01"));
        assert!(mac.auto.is_none());
        assert_eq!(l.hold_time, Some(json!(120)));
        assert_eq!(l.advertisement_interval, Some(json!(5)));
        // Untouched in the test, so snappi writes no port_id (the default: interface_name_subtype,
        // auto), no system_name (auto) and no org_infos.
        assert!(l.port_id.is_none() && l.system_name.is_none() && l.org_infos.is_empty());

        let l = &config.lldp[1];
        assert_eq!(l.name, "lldp_rx");
        let connection = l.connection.as_ref().unwrap();
        assert_eq!(connection.port_name.as_deref(), Some("prx"));
        let chassis_id = l.chassis_id.as_ref().unwrap();
        let mac = chassis_id.mac_address_subtype.as_ref().unwrap();
        assert_eq!(mac.value.as_deref(), Some("00:00:01:01:01:02"));
    }

    /// Agents with every sub-object touched in snappi 1.60.0, so it writes all their defaults,
    /// and each choice of chassis_id (and of its MAC), port_id (and of its interface name) and
    /// system_name, one agent each, as it serialises them. Merely touching a MAC, an interface
    /// name or a system name makes snappi write the choice `value` (not the default, `auto`)
    /// with no value: l4.
    fn every_default_lldp() -> Value {
        let agent = |name: &str, mut more: Value| {
            let o = more.as_object_mut().unwrap();
            o.insert("advertisement_interval".into(), json!(30));
            o.insert(
                "connection".into(),
                json!({"choice": "port_name", "port_name": "p"}),
            );
            o.insert("hold_time".into(), json!(120));
            o.insert("name".into(), json!(name));
            more
        };
        json!([
            agent(
                "l0",
                json!({
                    "chassis_id": {
                        "choice": "mac_address_subtype",
                        "mac_address_subtype": {"choice": "auto"}
                    },
                    "org_infos": [
                        {
                            "information": {"choice": "info", "info": "abcd"},
                            "oui": "0080C2",
                            "subtype": 1
                        },
                        {"information": {"choice": "info"}, "oui": "0080C2", "subtype": 1},
                        {"oui": "0080C2", "subtype": 1}
                    ],
                    "port_id": {
                        "choice": "interface_name_subtype",
                        "interface_name_subtype": {"choice": "auto"}
                    },
                    "system_name": {"choice": "auto"}
                })
            ),
            agent(
                "l1",
                json!({
                    "chassis_id": {
                        "choice": "mac_address_subtype",
                        "mac_address_subtype": {"choice": "value", "value": "00:00:01:01:01:01"}
                    },
                    "org_infos": [{
                        "information": {"choice": "info", "info": "00ff"},
                        "oui": "001122",
                        "subtype": 3
                    }],
                    "port_id": {
                        "choice": "interface_name_subtype",
                        "interface_name_subtype": {"choice": "value", "value": "eth1"}
                    },
                    "system_name": {"choice": "value", "value": "linerate"}
                })
            ),
            agent(
                "l2",
                json!({
                    "chassis_id": {"choice": "interface_name_subtype", "interface_name_subtype": "eth0"},
                    "port_id": {"choice": "mac_address_subtype", "mac_address_subtype": "00:00:01:01:01:02"},
                    "system_name": {"choice": "value", "value": "sys"}
                })
            ),
            agent(
                "l3",
                json!({
                    "chassis_id": {"choice": "local_subtype", "local_subtype": "chassis"},
                    "port_id": {"choice": "local_subtype", "local_subtype": "port"}
                })
            ),
            agent(
                "l4",
                json!({
                    "chassis_id": {
                        "choice": "mac_address_subtype",
                        "mac_address_subtype": {"choice": "value"}
                    },
                    "port_id": {
                        "choice": "interface_name_subtype",
                        "interface_name_subtype": {"choice": "value"}
                    },
                    "system_name": {"choice": "value"}
                })
            )
        ])
    }

    #[test]
    fn lldp_every_snappi_default_is_modelled() {
        let lldp: Vec<Lldp> = serde_json::from_value(every_default_lldp()).unwrap();
        assert_no_rest(&lldp);
        for l in &lldp {
            assert_eq!(l.hold_time, Some(json!(120)));
            assert_eq!(l.advertisement_interval, Some(json!(30)));
            assert_eq!(
                l.connection.as_ref().unwrap().port_name.as_deref(),
                Some("p")
            );
        }
        let chassis_id = |k: usize| lldp[k].chassis_id.as_ref().unwrap();
        let port_id = |k: usize| lldp[k].port_id.as_ref().unwrap();
        let system_name = |k: usize| lldp[k].system_name.as_ref().unwrap();

        let mac = chassis_id(0).mac_address_subtype.as_ref().unwrap();
        assert_eq!(mac.choice.as_deref(), Some("auto"));
        assert!(mac.value.is_none());
        let name = port_id(0).interface_name_subtype.as_ref().unwrap();
        assert_eq!(name.choice.as_deref(), Some("auto"));
        assert_eq!(system_name(0).choice.as_deref(), Some("auto"));
        let org_infos = &lldp[0].org_infos;
        assert_eq!(org_infos.len(), 3);
        assert!(org_infos.iter().all(|o| o.oui.as_deref() == Some("0080C2")));
        assert!(org_infos.iter().all(|o| o.subtype == Some(json!(1))));
        let information = org_infos[0].information.as_ref().unwrap();
        assert_eq!(information.choice.as_deref(), Some("info"));
        assert_eq!(information.info.as_deref(), Some("abcd"));
        assert!(org_infos[1].information.as_ref().unwrap().info.is_none());
        assert!(org_infos[2].information.is_none());

        let mac = chassis_id(1).mac_address_subtype.as_ref().unwrap();
        assert_eq!(mac.choice.as_deref(), Some("value"));
        assert_eq!(mac.value.as_deref(), Some("00:00:01:01:01:01"));
        let name = port_id(1).interface_name_subtype.as_ref().unwrap();
        assert_eq!(name.choice.as_deref(), Some("value"));
        assert_eq!(name.value.as_deref(), Some("eth1"));
        assert_eq!(system_name(1).value.as_deref(), Some("linerate"));
        let org_info = &lldp[1].org_infos[0];
        assert_eq!(org_info.oui.as_deref(), Some("001122"));
        assert_eq!(org_info.subtype, Some(json!(3)));
        let information = org_info.information.as_ref().unwrap();
        assert_eq!(information.info.as_deref(), Some("00ff"));

        assert_eq!(
            chassis_id(2).choice.as_deref(),
            Some("interface_name_subtype")
        );
        assert_eq!(
            chassis_id(2).interface_name_subtype.as_deref(),
            Some("eth0")
        );
        assert_eq!(port_id(2).choice.as_deref(), Some("mac_address_subtype"));
        assert_eq!(
            port_id(2).mac_address_subtype.as_deref(),
            Some("00:00:01:01:01:02")
        );
        assert_eq!(system_name(2).choice.as_deref(), Some("value"));
        assert_eq!(system_name(2).value.as_deref(), Some("sys"));

        assert_eq!(chassis_id(3).choice.as_deref(), Some("local_subtype"));
        assert_eq!(chassis_id(3).local_subtype.as_deref(), Some("chassis"));
        assert_eq!(port_id(3).choice.as_deref(), Some("local_subtype"));
        assert_eq!(port_id(3).local_subtype.as_deref(), Some("port"));
        assert!(lldp[3].system_name.is_none());

        let mac = chassis_id(4).mac_address_subtype.as_ref().unwrap();
        assert_eq!(mac.choice.as_deref(), Some("value"));
        assert!(mac.value.is_none());
        let name = port_id(4).interface_name_subtype.as_ref().unwrap();
        assert_eq!(name.choice.as_deref(), Some("value"));
        assert!(name.value.is_none());
        assert_eq!(system_name(4).choice.as_deref(), Some("value"));
        assert!(system_name(4).value.is_none());
    }

    /// The `auto` keys (the values snappi echoes) are modelled; an unmodelled key stays in
    /// `rest`, for the refusal by path.
    #[test]
    fn lldp_unknown_keys_stay_in_rest() {
        let lldp: Vec<Lldp> = serde_json::from_value(json!([{
            "name": "l",
            "connection": {"choice": "port_name", "port_name": "p", "lag_name": "x"},
            "chassis_id": {"mac_address_subtype": {"auto": "00:00:01:01:01:01", "step": 1}},
            "port_id": {"interface_name_subtype": {"auto": "eth0"}},
            "system_name": {"auto": "linerate"},
            "management_address": "1.1.1.1",
            "org_infos": [{"information": {"subtlvs": []}}]
        }]))
        .unwrap();
        let mac = lldp[0]
            .chassis_id
            .as_ref()
            .unwrap()
            .mac_address_subtype
            .as_ref();
        assert_eq!(mac.unwrap().auto.as_deref(), Some("00:00:01:01:01:01"));
        let port_id = lldp[0].port_id.as_ref().unwrap();
        let name = port_id.interface_name_subtype.as_ref().unwrap();
        assert_eq!(name.auto.as_deref(), Some("eth0"));
        let system_name = lldp[0].system_name.as_ref().unwrap();
        assert_eq!(system_name.auto.as_deref(), Some("linerate"));
        let kept: Vec<String> = rests(0, &lldp[0])
            .into_iter()
            .flat_map(|(path, rest)| rest.keys().map(move |k| format!("{path}.{k}")))
            .collect();
        assert_eq!(
            kept,
            [
                "lldp[0].management_address",
                "lldp[0].connection.lag_name",
                "lldp[0].chassis_id.mac_address_subtype.step",
                "lldp[0].org_infos[0].information.subtlvs"
            ]
        );
    }

    /// What snappi 1.60.0 writes for get_metrics `lldp` and get_states `lldp_neighbors`.
    #[test]
    fn lldp_requests_are_read() {
        let m: MetricsRequest =
            serde_json::from_value(json!({"choice": "lldp", "lldp": {"lldp_names": ["lldp_tx"]}}))
                .unwrap();
        assert!(m.rest.is_empty());
        let asked = m.lldp.unwrap();
        assert_eq!(asked.lldp_names, ["lldp_tx"]);
        assert!(asked.column_names.is_empty() && asked.rest.is_empty());

        let m: MetricsRequest = serde_json::from_value(json!({
            "choice": "lldp",
            "lldp": {"column_names": ["frames_rx", "tlvs_unknown"]}
        }))
        .unwrap();
        let asked = m.lldp.unwrap();
        assert_eq!(asked.column_names, ["frames_rx", "tlvs_unknown"]);
        assert!(asked.lldp_names.is_empty());

        let m: MetricsRequest =
            serde_json::from_value(json!({"choice": "lldp", "lldp": {}})).unwrap();
        assert!(m.lldp.unwrap().lldp_names.is_empty());

        let s: StatesRequest = serde_json::from_value(json!({
            "choice": "lldp_neighbors",
            "lldp_neighbors": {"lldp_names": ["lldp_tx"], "neighbor_id_filters": ["n1"]}
        }))
        .unwrap();
        assert!(s.rest.is_empty());
        let asked = s.lldp_neighbors.unwrap();
        assert_eq!(asked.lldp_names, ["lldp_tx"]);
        assert_eq!(asked.neighbor_id_filters, ["n1"]);
        assert!(asked.rest.is_empty());

        let s: StatesRequest =
            serde_json::from_value(json!({"choice": "lldp_neighbors", "lldp_neighbors": {}}))
                .unwrap();
        let asked = s.lldp_neighbors.unwrap();
        assert!(asked.lldp_names.is_empty() && asked.neighbor_id_filters.is_empty());
        let s: StatesRequest = serde_json::from_value(json!({"choice": "lldp_neighbors"})).unwrap();
        assert!(s.lldp_neighbors.is_none());
    }

    /// The keys of Lldp.Metric: every one, always (snappi 1.60.0 reads this body back whole).
    #[test]
    fn lldp_metric_keys() {
        let response = MetricsResponse {
            choice: "lldp_metrics".into(),
            lldp_metrics: Some(vec![LldpMetric {
                name: "lldp_tx".into(),
                frames_rx: 2,
                frames_tx: 3,
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            json!({
                "choice": "lldp_metrics",
                "lldp_metrics": [{
                    "name": "lldp_tx",
                    "frames_rx": 2,
                    "frames_tx": 3,
                    "frames_error_rx": 0,
                    "frames_discard": 0,
                    "tlvs_discard": 0,
                    "tlvs_unknown": 0
                }]
            })
        );
        let back: MetricsResponse =
            serde_json::from_value(serde_json::to_value(&response).unwrap()).unwrap();
        assert_eq!(back, response);
    }

    /// The neighbour the conformance test checks (as lldp_rx hears lldp_tx, lldpd's way), and
    /// one with no subtypes, TLVs or capabilities.
    fn neighbors() -> Vec<LldpNeighborsState> {
        vec![
            LldpNeighborsState {
                lldp_name: "lldp_rx".into(),
                system_name: "lr".into(),
                system_description: "Linux".into(),
                chassis_id: "00:00:01:01:01:01".into(),
                chassis_id_type: Some("mac_address".into()),
                neighbor_id: "1".into(),
                age: 7,
                last_update: 2,
                ttl: 120,
                port_id: "ptx".into(),
                port_id_type: Some("interface_name".into()),
                port_description: "ptx".into(),
                management_address: "192.0.2.1".into(),
                management_address_type: "ipv4".into(),
                custom_tlvs: vec![LldpCustomTlvState {
                    custom_type: 127,
                    oui: "0080c2".into(),
                    oui_subtype: 1,
                    information: "00ff".into(),
                }],
                capabilities: vec![
                    LldpCapabilityState {
                        capability_name: "mac_bridge".into(),
                        capability_enabled: false,
                    },
                    LldpCapabilityState {
                        capability_name: "router".into(),
                        capability_enabled: true,
                    },
                ],
            },
            LldpNeighborsState {
                lldp_name: "lldp_tx".into(),
                chassis_id: "chassis".into(),
                port_id: "port".into(),
                ..Default::default()
            },
        ]
    }

    /// The keys of LldpNeighbors.State and its TLVs (snappi 1.60.0 reads this body back whole).
    #[test]
    fn lldp_neighbors_state_keys() {
        let response = StatesResponse {
            choice: "lldp_neighbors".into(),
            lldp_neighbors: Some(neighbors()),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            json!({
                "choice": "lldp_neighbors",
                "lldp_neighbors": [
                    {
                        "lldp_name": "lldp_rx",
                        "system_name": "lr",
                        "system_description": "Linux",
                        "chassis_id": "00:00:01:01:01:01",
                        "chassis_id_type": "mac_address",
                        "neighbor_id": "1",
                        "age": 7,
                        "last_update": 2,
                        "ttl": 120,
                        "port_id": "ptx",
                        "port_id_type": "interface_name",
                        "port_description": "ptx",
                        "management_address": "192.0.2.1",
                        "management_address_type": "ipv4",
                        "custom_tlvs": [{
                            "custom_type": 127,
                            "oui": "0080c2",
                            "oui_subtype": 1,
                            "information": "00ff"
                        }],
                        "capabilities": [
                            {"capability_name": "mac_bridge", "capability_enabled": false},
                            {"capability_name": "router", "capability_enabled": true}
                        ]
                    },
                    {
                        "lldp_name": "lldp_tx",
                        "system_name": "",
                        "system_description": "",
                        "chassis_id": "chassis",
                        "neighbor_id": "",
                        "age": 0,
                        "last_update": 0,
                        "ttl": 0,
                        "port_id": "port",
                        "port_description": "",
                        "management_address": "",
                        "management_address_type": "",
                        "custom_tlvs": [],
                        "capabilities": []
                    }
                ]
            })
        );
        // And back: what linerate writes is what it reads.
        let back: StatesResponse =
            serde_json::from_value(serde_json::to_value(&response).unwrap()).unwrap();
        assert_eq!(back, response);
    }
}
