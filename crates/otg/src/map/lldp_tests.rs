use linerate_routing::lldp::{OrgInfo, PortId};
use serde_json::{Value, json};

use super::bgp_tests::{map, refused_at};

/// The OTG project's b2b LLDP test's config (conformance feature/b2b/lldp), as snappi 1.60.0
/// writes it: two agents, one a port, no devices.
fn b2b() -> Value {
    let agent = |name: &str, port: &str, mac: &str| {
        json!({"name": name, "hold_time": 120, "advertisement_interval": 5,
            "connection": {"choice": "port_name", "port_name": port},
            "chassis_id": {"choice": "mac_address_subtype",
                "mac_address_subtype": {"choice": "value", "value": mac}}})
    };
    json!({
        "ports": [{"name": "ptx", "location": "lr0"}, {"name": "prx", "location": "lr1@lr-sink"}],
        "lldp": [agent("lldp_tx", "ptx", "00:00:01:01:01:01"), agent("lldp_rx", "prx", "00:00:01:01:01:02")]
    })
}

#[test]
fn each_agent_is_a_device_on_its_port_with_its_chassis_mac() {
    let m = map(&b2b()).unwrap();
    assert_eq!(m.routers.len(), 2);
    let d = &m.routers[1];
    assert_eq!(d.name, "lldp_rx");
    assert_eq!(d.links[0].port, "lr1@lr-sink");
    assert_eq!(d.links[0].mac, [0, 0, 1, 1, 1, 2]);
    assert!(d.links[0].addrs.is_empty());
    let l = d.lldp.as_ref().unwrap();
    assert_eq!((l.interval, l.hold_time), (5, 120));
    // The port id defaults to the interface's name: the port's own.
    assert_eq!(
        (l.port_id.clone(), l.interface.as_str()),
        (PortId::InterfaceName, "lr1")
    );
    assert_eq!(l.system_name.as_deref(), Some("lldp_rx"));
    assert_eq!(l.chassis_local, None);
    // No host on the port: nothing to pass through a hosts' table.
    assert!(m.routed_hosts().is_empty());
}

#[test]
fn what_lldpd_cannot_send_is_refused_by_path() {
    let mut c = b2b();
    c["lldp"][0]["hold_time"] = json!(121);
    assert!(refused_at(&c, "lldp[0]").contains("multiple of advertisement_interval"));
    let mut c = b2b();
    c["lldp"][0]["chassis_id"] =
        json!({"choice": "interface_name_subtype", "interface_name_subtype": "x"});
    assert!(refused_at(&c, "lldp[0].chassis_id.choice").contains("MAC or local"));
    let mut c = b2b();
    c["lldp"][0]["port_id"] =
        json!({"choice": "mac_address_subtype", "mac_address_subtype": "00:00:00:00:00:09"});
    assert!(refused_at(&c, "lldp[0].port_id.mac_address_subtype").contains("the agent's own"));
    // An agent's port without a device is not set up there.
    let mut c = b2b();
    c["ports"][0]["location"] = json!("192.0.2.1:9000/d12");
    assert!(refused_at(&c, "lldp[0].connection.port_name").contains("needs a device"));
    let mut c = b2b();
    c["lldp"][0]["connection"]["port_name"] = json!("nosuch");
    assert!(refused_at(&c, "lldp[0].connection.port_name").contains("no port is named"));
    let mut c = b2b();
    c["lldp"][0]["org_infos"] = json!([{"oui": "0080C", "subtype": 1}]);
    assert!(refused_at(&c, "lldp[0].org_infos[0].oui").contains("six hex digits"));
    c["lldp"][0]["org_infos"] = json!([{"oui": "0080C2", "subtype": 128}]);
    assert!(refused_at(&c, "lldp[0].org_infos[0].subtype").contains("1 to 127"));
    c["lldp"][0]["org_infos"] = json!([{"information": {"choice": "info", "info": "abc"}}]);
    assert!(refused_at(&c, "lldp[0].org_infos[0].information.info").contains("507 bytes"));
    c["lldp"][0]["org_infos"] =
        json!([{"information": {"choice": "info", "info": "ab".repeat(508)}}]);
    assert!(refused_at(&c, "lldp[0].org_infos[0].information.info").contains("507 bytes"));
    let mut c = b2b();
    c["flows"] = json!([{"name": "f", "tx_rx": {"choice": "port", "port": {"tx_name": "ptx", "rx_names": ["prx"]}},
        "packet": [{"choice": "ethernet", "ethernet": {}}, {"choice": "ipv4", "ipv4": {}},
            {"choice": "udp", "udp": {}}]}]);
    assert!(refused_at(&c, "lldp[0].connection.port_name").contains("port flows"));
}

#[test]
fn local_ids_and_a_named_system_are_mapped() {
    let mut c = b2b();
    c["lldp"][0]["chassis_id"] = json!({"choice": "local_subtype", "local_subtype": "box-1"});
    c["lldp"][0]["port_id"] = json!({"choice": "local_subtype", "local_subtype": "p-1"});
    c["lldp"][0]["system_name"] = json!({"choice": "value", "value": "tx box"});
    let m = map(&c).unwrap();
    let l = m.routers[0].lldp.as_ref().unwrap();
    assert_eq!(l.chassis_local.as_deref(), Some("box-1"));
    assert_eq!(l.port_id, PortId::Local("p-1".into()));
    assert_eq!(l.system_name.as_deref(), Some("tx box"));
    // Its MAC is a locally administered one of its own.
    assert_eq!(m.routers[0].links[0].mac[0], 0x02);
    assert!(l.org_infos.is_empty());
}

#[test]
fn organizationally_specific_tlvs_are_mapped_with_otgs_defaults() {
    let mut c = b2b();
    c["lldp"][0]["org_infos"] = json!([
        {"oui": "334455", "subtype": 44, "information": {"choice": "info", "info": "0aFF"}},
        {}
    ]);
    let m = map(&c).unwrap();
    let l = m.routers[0].lldp.as_ref().unwrap();
    assert_eq!(
        l.org_infos,
        [
            OrgInfo {
                oui: [0x33, 0x44, 0x55],
                subtype: 44,
                info: vec![0x0a, 0xff]
            },
            OrgInfo {
                oui: [0x00, 0x80, 0xc2],
                subtype: 1,
                info: Vec::new()
            }
        ]
    );
}
