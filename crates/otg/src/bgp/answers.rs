//! What the daemons report, in OTG's words: a session as a `Bgpv4.Metric`/`Bgpv6.Metric`, the
//! prefixes a peer sent as a `BgpPrefixesState`.

use linerate_routing::Origin;
use linerate_routing::frr::{Learned, Prefixes, Session};

use crate::{MetricsResponse, StatesResponse};

use super::{
    BgpMetric, BgpPrefixState, BgpPrefixesState, ResultBgpAsPath, ResultBgpAsPathSegment,
    ResultBgpCommunity,
};

/// get_metrics `bgpv4` / `bgpv6`: the sessions of the devices' peers of that family, all of
/// them when `peers` names none.
pub fn metrics_response(
    devices: &[linerate_routing::Device],
    sessions: &[(String, Session)],
    v6: bool,
    peers: &[String],
) -> MetricsResponse {
    let of_family = |name: &str| {
        devices
            .iter()
            .filter_map(|d| d.bgp.as_ref())
            .flat_map(|b| &b.peers)
            .any(|p| p.name == name && p.address.is_ipv6() == v6)
    };
    let list: Vec<BgpMetric> = sessions
        .iter()
        .filter(|(name, _)| of_family(name) && (peers.is_empty() || peers.contains(name)))
        .map(|(name, s)| metric(name, s))
        .collect();
    let mut response = MetricsResponse {
        choice: if v6 { "bgpv6_metrics" } else { "bgpv4_metrics" }.into(),
        ..Default::default()
    };
    if v6 {
        response.bgpv6_metrics = Some(list);
    } else {
        response.bgpv4_metrics = Some(list);
    }
    response
}

/// get_states `bgp_prefixes`: what each peer sent its device.
pub fn prefixes_response(states: Vec<BgpPrefixesState>) -> StatesResponse {
    StatesResponse {
        choice: "bgp_prefixes".into(),
        bgp_prefixes: Some(states),
        ..Default::default()
    }
}

/// Peer `name`'s session.
pub fn metric(name: &str, s: &Session) -> BgpMetric {
    let fsm = match s.state.as_str() {
        "Established" => "established",
        "OpenSent" => "opensent",
        "OpenConfirm" => "openconfirm",
        "Active" => "active",
        "Connect" => "connect",
        _ => "idle",
    };
    BgpMetric {
        name: name.to_owned(),
        session_state: if fsm == "established" { "up" } else { "down" }.into(),
        session_flap_count: s.flaps,
        routes_advertised: s.advertised,
        routes_received: s.received,
        updates_sent: s.updates_sent,
        updates_received: s.updates_received,
        opens_sent: s.opens_sent,
        opens_received: s.opens_received,
        keepalives_sent: s.keepalives_sent,
        keepalives_received: s.keepalives_received,
        notifications_sent: s.notifications_sent,
        notifications_received: s.notifications_received,
        fsm_state: fsm.into(),
    }
}

/// What peer `name` sent, of the families asked.
pub fn prefixes(name: &str, p: &Prefixes, v4: bool, v6: bool) -> BgpPrefixesState {
    let list = |l: &[Learned], on: bool| -> Vec<BgpPrefixState> {
        if on {
            l.iter().map(prefix).collect()
        } else {
            Vec::new()
        }
    };
    BgpPrefixesState {
        bgp_peer_name: name.to_owned(),
        ipv4_unicast_prefixes: list(&p.v4, v4),
        ipv6_unicast_prefixes: list(&p.v6, v6),
    }
}

fn prefix(l: &Learned) -> BgpPrefixState {
    let v6 = l.prefix.addr().is_ipv6();
    let address = l.prefix.addr().to_string();
    BgpPrefixState {
        ipv4_address: (!v6).then(|| address.clone()),
        ipv6_address: v6.then_some(address),
        prefix_length: u32::from(l.prefix.prefix_len()),
        origin: l.origin.map(|o| {
            match o {
                Origin::Igp => "igp",
                Origin::Egp => "egp",
                Origin::Incomplete => "incomplete",
            }
            .to_owned()
        }),
        ipv4_next_hop: l.next_hop.filter(|a| a.is_ipv4()).map(|a| a.to_string()),
        ipv6_next_hop: l.next_hop.filter(|a| a.is_ipv6()).map(|a| a.to_string()),
        communities: l
            .communities
            .iter()
            .map(|(a, v)| ResultBgpCommunity {
                kind: "manual_as_number".into(),
                as_number: u32::from(*a),
                as_custom: u32::from(*v),
            })
            .collect(),
        as_path: (!l.as_path.is_empty()).then(|| ResultBgpAsPath {
            segments: vec![ResultBgpAsPathSegment {
                kind: "as_seq".into(),
                as_numbers: l.as_path.clone(),
            }],
        }),
        local_preference: l.local_pref,
        multi_exit_discriminator: l.med,
    }
}
