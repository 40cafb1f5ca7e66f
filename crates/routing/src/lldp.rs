//! LLDP (IEEE 802.1AB) through lldpd: the configuration an agent's `lldpd` reads (`lldpcli`
//! commands) and what `lldpcli … -f json` answers, read into linerate's terms. Pure text both
//! ways, so it is tested without a daemon.
//!
//! An agent is a device of its own (`Device::lldp`): a namespace with a macvlan of its port
//! whose MAC is the agent's, and lldpd on it. The chassis id of subtype MAC is that MAC (lldpd
//! takes it from the interface `-C` names); a local chassis id is lldpd's `chassisid`.

use std::fmt::Write as _;

use serde_json::Value;

/// The group LLDP frames go to: the nearest bridge (IEEE 802.1AB §7.1), which no bridge
/// forwards.
pub const LLDP_GROUP: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e];

/// One LLDP agent on a port.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct Lldp {
    /// What metrics and states call it (OTG's `lldp[].name`).
    pub name: String,
    /// The name of its link in its namespace: what a port id of subtype interface name says
    /// (the port's own interface name unless the config gives one).
    pub interface: String,
    /// None: the chassis id is the agent's MAC (subtype 4); else a local one (subtype 7).
    pub chassis_local: Option<String>,
    pub port_id: PortId,
    /// None: lldpd's own (the namespace's host name, the machine's).
    pub system_name: Option<String>,
    /// Seconds between LLDPDUs.
    pub interval: u16,
    /// The TTL sent: a multiple of the interval (lldpd sends interval × hold).
    pub hold_time: u16,
    /// Organizationally specific TLVs sent (type 127), in order.
    pub org_infos: Vec<OrgInfo>,
}

/// An organizationally specific TLV (IEEE 802.1AB §8.6): an OUI, its subtype and the
/// information string that follows them.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub struct OrgInfo {
    pub oui: [u8; 3],
    pub subtype: u8,
    /// At most [`ORG_INFO_MAX`] bytes.
    pub info: Vec<u8>,
}

/// The longest information string of an organizationally specific TLV: its 511-byte value less
/// the OUI and the subtype.
pub const ORG_INFO_MAX: usize = 507;

/// Bytes as lldpcli writes and reads them: two hex digits each, comma-separated.
fn commas(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The port id an agent sends.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
pub enum PortId {
    /// The agent's MAC (subtype 3).
    Mac,
    /// The interface's name (subtype 5).
    InterfaceName,
    /// A locally assigned id (subtype 7).
    Local(String),
}

/// lldpcli reads its words space-separated: a value with a space or a quote would be two.
fn word(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_whitespace() || c == '"' {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// The `lldpcli` commands lldpd runs at start (its `-O` file).
pub fn lldpd_config(l: &Lldp) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "configure lldp tx-interval {}", l.interval);
    let _ = writeln!(
        out,
        "configure lldp tx-hold {}",
        (l.hold_time / l.interval.max(1)).max(1)
    );
    if let Some(name) = &l.system_name {
        let _ = writeln!(out, "configure system hostname {}", word(name));
    }
    if let Some(id) = &l.chassis_local {
        let _ = writeln!(out, "configure system chassisid {}", word(id));
    }
    match &l.port_id {
        PortId::Mac => out.push_str("configure lldp portidsubtype macaddress\n"),
        PortId::InterfaceName => out.push_str("configure lldp portidsubtype ifname\n"),
        PortId::Local(v) => {
            let _ = writeln!(out, "configure lldp portidsubtype local {}", word(v));
        }
    }
    for o in &l.org_infos {
        let _ = write!(
            out,
            "configure lldp custom-tlv add oui {} subtype {}",
            commas(&o.oui),
            o.subtype
        );
        if !o.info.is_empty() {
            let _ = write!(out, " oui-info {}", commas(&o.info));
        }
        out.push('\n');
    }
    out
}

/// An agent as linerate reads it: its counters and neighbours (none while stopped).
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct LldpState {
    pub name: String,
    pub counts: LldpCounts,
    pub neighbours: Vec<Neighbour>,
}

/// An agent's counters (`show statistics -f json`), summed over its interfaces.
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Copy, Default, PartialEq, Eq)]
pub struct LldpCounts {
    pub tx: u64,
    pub rx: u64,
    pub discarded: u64,
    pub unrecognized: u64,
    pub ageouts: u64,
}

/// lldpcli's JSON puts one of a kind as an object and several as a list of objects: every
/// `(key, value)` of `v` either way.
fn entries(v: Option<&Value>) -> Vec<(&str, &Value)> {
    match v {
        Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.as_str(), v)).collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_object)
            .flat_map(|m| m.iter().map(|(k, v)| (k.as_str(), v)))
            .collect(),
        _ => Vec::new(),
    }
}

/// A number lldpcli writes as a string, under `key.key` (`"tx": {"tx": "1"}`) or `key`.
fn count(v: &Value, key: &str) -> u64 {
    let inner = v.get(key).map(|x| x.get(key).unwrap_or(x));
    match inner {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0),
        _ => 0,
    }
}

/// `show statistics -f json`.
pub fn statistics(json: &Value) -> LldpCounts {
    let mut c = LldpCounts::default();
    for (_, i) in entries(json.get("lldp").and_then(|l| l.get("interface"))) {
        c.tx += count(i, "tx");
        c.rx += count(i, "rx");
        c.discarded += count(i, "rx_discarded_cnt");
        c.unrecognized += count(i, "rx_unrecognized_cnt");
        c.ageouts += count(i, "ageout_cnt");
    }
    c
}

/// A neighbour as lldpd holds it (`show neighbors details -f json`).
#[derive(Debug, serde::Serialize, serde::Deserialize, Clone, Default, PartialEq, Eq)]
pub struct Neighbour {
    pub interface: String,
    /// lldpd's number for the neighbour (`rid`).
    pub id: String,
    /// Seconds since it was first heard.
    pub age: u32,
    pub system_name: Option<String>,
    pub system_description: Option<String>,
    /// lldpd's words: `mac`, `local`, `ifname`, `ip`, `ifalias`, …
    pub chassis_id_type: String,
    pub chassis_id: String,
    pub port_id_type: String,
    pub port_id: String,
    pub port_description: Option<String>,
    pub ttl: u32,
    pub management_address: Option<String>,
    /// (capability, enabled)
    pub capabilities: Vec<(String, bool)>,
    /// Organizationally specific TLVs lldpd did not decode itself (its "unknown TLVs": not
    /// the 802.1, 802.3 or LLDP-MED ones it knows).
    pub org_infos: Vec<OrgInfo>,
}

/// lldpcli's `00,80,C2`: the bytes, or None when a part is not a hex byte.
fn uncommas(text: &str) -> Option<Vec<u8>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    text.split(',')
        .map(|b| u8::from_str_radix(b.trim(), 16).ok())
        .collect()
}

/// `0 day, 00:00:02` in seconds.
fn age(text: &str) -> u32 {
    let (days, clock) = text.split_once(" day").unwrap_or(("0", text));
    let clock = clock.trim_start_matches(['s', ',', ' ']);
    let hms: Vec<u32> = clock
        .split(':')
        .filter_map(|p| p.trim().parse().ok())
        .collect();
    let days: u32 = days.trim().parse().unwrap_or(0);
    match hms[..] {
        [h, m, s] => days * 86_400 + h * 3600 + m * 60 + s,
        _ => 0,
    }
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// `show neighbors details -f json`.
pub fn neighbours(json: &Value) -> Vec<Neighbour> {
    let mut out = Vec::new();
    for (iface, n) in entries(json.get("lldp").and_then(|l| l.get("interface"))) {
        // A chassis with a system name is keyed by it; one without is the object itself.
        let chassis = n.get("chassis").cloned().unwrap_or_default();
        let (system_name, c) = if chassis.get("id").is_some() {
            (None, chassis)
        } else {
            entries(Some(&chassis))
                .first()
                .map_or((None, Value::Null), |(k, v)| {
                    (Some((*k).to_owned()), (*v).clone())
                })
        };
        let port = n.get("port").cloned().unwrap_or_default();
        let id = |v: &Value, key: &str| {
            v.get("id")
                .and_then(|i| i.get(key))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let mgmt = match c.get("mgmt-ip") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_owned),
            _ => None,
        };
        out.push(Neighbour {
            interface: iface.to_owned(),
            id: text(n, "rid").unwrap_or_default(),
            age: text(n, "age").map_or(0, |a| age(&a)),
            system_name,
            system_description: text(&c, "descr"),
            chassis_id_type: id(&c, "type"),
            chassis_id: id(&c, "value"),
            port_id_type: id(&port, "type"),
            port_id: id(&port, "value"),
            port_description: text(&port, "descr"),
            ttl: text(&port, "ttl").and_then(|t| t.parse().ok()).unwrap_or(0),
            management_address: mgmt,
            org_infos: entries(n.get("unknown-tlvs"))
                .into_iter()
                .flat_map(|(_, v)| match v {
                    Value::Array(a) => a.iter().collect::<Vec<_>>(),
                    other => vec![other],
                })
                .filter_map(|t| {
                    Some(OrgInfo {
                        oui: uncommas(&text(t, "oui")?)?.try_into().ok()?,
                        subtype: text(t, "subtype")?.parse().ok()?,
                        info: uncommas(&text(t, "value").unwrap_or_default())?,
                    })
                })
                .collect(),
            capabilities: c
                .get("capability")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|k| {
                    Some((
                        text(k, "type")?,
                        k.get("enabled").and_then(Value::as_bool).unwrap_or(false),
                    ))
                })
                .collect(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testdata(name: &str) -> Value {
        let path = format!("{}/src/frr/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn the_config_sets_timers_ids_and_name() {
        let l = Lldp {
            name: "lldp_tx".into(),
            interface: "veth-a".into(),
            chassis_local: Some("my chassis".into()),
            port_id: PortId::Local("p-1".into()),
            system_name: Some("tx".into()),
            interval: 5,
            hold_time: 120,
            org_infos: vec![
                OrgInfo {
                    oui: [0x33, 0x44, 0x55],
                    subtype: 44,
                    info: vec![0x0a, 0xff],
                },
                OrgInfo {
                    oui: [0x00, 0x80, 0xc2],
                    subtype: 7,
                    info: Vec::new(),
                },
            ],
        };
        assert_eq!(
            lldpd_config(&l),
            "configure lldp tx-interval 5\nconfigure lldp tx-hold 24\n\
             configure system hostname tx\nconfigure system chassisid my_chassis\n\
             configure lldp portidsubtype local p-1\n\
             configure lldp custom-tlv add oui 33,44,55 subtype 44 oui-info 0A,FF\n\
             configure lldp custom-tlv add oui 00,80,C2 subtype 7\n"
        );
    }

    #[test]
    fn a_neighbour_is_read_with_its_ids_and_ttl() {
        let n = neighbours(&testdata("lldp_neighbors.json"));
        assert_eq!(n.len(), 1);
        let n = &n[0];
        assert_eq!(n.interface, "ea");
        assert_eq!(n.system_name.as_deref(), Some("lldp_B"));
        assert_eq!(
            (n.chassis_id_type.as_str(), n.chassis_id.as_str()),
            ("mac", "00:00:01:01:01:02")
        );
        assert_eq!(
            (n.port_id_type.as_str(), n.port_id.as_str()),
            ("mac", "00:00:01:01:01:02")
        );
        assert_eq!(n.ttl, 120);
        assert_eq!((n.id.as_str(), n.age), ("1", 64));
        assert_eq!(age("2 days, 01:02:03"), 2 * 86_400 + 3723);
        assert_eq!(n.port_description.as_deref(), Some("eb"));
        assert!(n.capabilities.contains(&("Station".into(), true)));
        assert!(n.org_infos.is_empty());
        // lldpd 1.0.16's own answer for two custom TLVs (one of them as a list, as it writes
        // several).
        let custom = serde_json::json!({"lldp": {"interface": {"llb": {
        "rid": "1", "chassis": {"id": {"type": "mac", "value": "32:8e:fc:43:e1:bb"}},
        "port": {"id": {"type": "mac", "value": "32:8e:fc:43:e1:bb"}, "ttl": "4"},
        "unknown-tlvs": {"unknown-tlv": [
            {"oui": "00,80,C2", "subtype": "7", "len": "3", "value": "41,42,43"},
            {"oui": "33,44,55", "subtype": "44", "len": "2", "value": "55,55"}
        ]}}}}});
        let n = &neighbours(&custom)[0];
        assert_eq!(
            n.org_infos,
            [
                OrgInfo {
                    oui: [0x00, 0x80, 0xc2],
                    subtype: 7,
                    info: b"ABC".to_vec()
                },
                OrgInfo {
                    oui: [0x33, 0x44, 0x55],
                    subtype: 44,
                    info: vec![0x55, 0x55]
                }
            ]
        );
        let local = &neighbours(&testdata("lldp_neighbors_local.json"))[0];
        assert_eq!(
            (local.chassis_id_type.as_str(), local.chassis_id.as_str()),
            ("local", "my-chassis")
        );
        assert_eq!(local.port_id, "port-7");
        assert_eq!(
            local.management_address.as_deref(),
            Some("fe80::200:1ff:fe01:102")
        );
    }

    #[test]
    fn statistics_are_summed() {
        let c = statistics(&testdata("lldp_statistics.json"));
        assert_eq!((c.tx, c.rx, c.discarded, c.unrecognized), (15, 14, 0, 0));
        // Several interfaces come as a list.
        let two = serde_json::json!({"lldp": {"interface": [
            {"eth0": {"tx": {"tx": "3"}, "rx": {"rx": "2"}}},
            {"eth1": {"tx": {"tx": "4"}, "rx": {"rx": "1"}}}
        ]}});
        let c = statistics(&two);
        assert_eq!((c.tx, c.rx), (7, 3));
    }
}
