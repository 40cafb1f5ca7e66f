//! The LAGs' state in OTG's words: a LAG as a `Lag.Metric` (its status by `min_links`, its
//! members' port counts summed), a member's LACP as a `Lacp.Metric`.

use linerate_lacp::LagView;
use linerate_lacp::pdu::state;

use super::{LacpMetric, LagMetric};
use crate::{MetricsResponse, PortMetric};

/// What a `flow_transmit start` of the flows at `started` says of their LAGs: a flow on a
/// member out of its LAG (placed there because none of its LAG's members is in: it is sent
/// anyway), and once each a LAG that is down by `min_links` while its flows go on the members
/// still in it.
pub fn off_lag(mapped: &crate::Mapped, lags: &[LagView], started: &[usize]) -> Vec<String> {
    let mut said = Vec::new();
    let mut down_said: Vec<&str> = Vec::new();
    for f in started.iter().filter_map(|&i| mapped.flows.get(i)) {
        for p in mapped.lag_flows.iter().filter(|p| p.flow == f.name) {
            let Some(lag) = lags.iter().find(|l| l.name == p.lag) else {
                continue;
            };
            if lag.members.iter().any(|m| m.port == p.port && !m.up) {
                said.push(format!(
                    "flow '{}' runs on port '{}', which is not in LAG '{}' now: no member of \
                     the LAG is, and the flow is sent there anyway",
                    f.name, p.port, p.lag
                ));
            } else if !lag.up() && !down_said.contains(&lag.name.as_str()) {
                down_said.push(&lag.name);
                said.push(format!(
                    "LAG '{}' is down ({} of its members in it, min_links {}): its flows are \
                     sent on the members in it",
                    lag.name,
                    lag.members_up(),
                    lag.min_links
                ));
            }
        }
    }
    said
}

fn mac(m: [u8; 6]) -> String {
    m.map(|b| format!("{b:02x}")).join(":")
}

/// get_metrics `lag`: the LAGs named (all, with none); `ports` are the port metrics of every
/// member, whose counts and rates each LAG sums.
pub fn lag_response(lags: &[LagView], ports: &[PortMetric], names: &[String]) -> MetricsResponse {
    let list = lags
        .iter()
        .filter(|l| names.is_empty() || names.contains(&l.name))
        .map(|l| {
            let members: Vec<&PortMetric> = ports
                .iter()
                .filter(|p| l.members.iter().any(|m| m.port == p.name))
                .collect();
            let sum = |f: fn(&PortMetric) -> u64| -> u64 { members.iter().map(|&p| f(p)).sum() };
            let rate = |f: fn(&PortMetric) -> f64| -> f64 { members.iter().map(|&p| f(p)).sum() };
            LagMetric {
                name: l.name.clone(),
                oper_status: if l.up() { "up" } else { "down" }.into(),
                member_ports_up: l.members_up() as u32,
                frames_tx: sum(|p| p.frames_tx),
                frames_rx: sum(|p| p.frames_rx),
                bytes_tx: sum(|p| p.bytes_tx),
                bytes_rx: sum(|p| p.bytes_rx),
                frames_tx_rate: rate(|p| p.frames_tx_rate),
                frames_rx_rate: rate(|p| p.frames_rx_rate),
                bytes_tx_rate: rate(|p| p.bytes_tx_rate),
                bytes_rx_rate: rate(|p| p.bytes_rx_rate),
            }
        })
        .collect();
    MetricsResponse {
        choice: "lag_metrics".into(),
        lag_metrics: Some(list),
        ..Default::default()
    }
}

/// get_metrics `lacp`: every member of the LACP LAGs named (all, with none), those of the
/// member ports named (all, with none).
pub fn lacp_response(lags: &[LagView], names: &[String], members: &[String]) -> MetricsResponse {
    let mut list = Vec::new();
    for l in lags
        .iter()
        .filter(|l| l.lacp && (names.is_empty() || names.contains(&l.name)))
    {
        for m in l
            .members
            .iter()
            .filter(|m| members.is_empty() || members.contains(&m.port))
        {
            let a = &m.actor;
            list.push(LacpMetric {
                lag_name: l.name.clone(),
                lag_member_port_name: m.port.clone(),
                lacp_packets_rx: m.pdus_rx,
                lacp_packets_tx: m.pdus_tx,
                lacp_rx_errors: m.rx_errors,
                activity: if a.has(state::ACTIVITY) {
                    "active"
                } else {
                    "passive"
                }
                .into(),
                timeout: if a.has(state::TIMEOUT) {
                    "short"
                } else {
                    "long"
                }
                .into(),
                synchronization: if a.has(state::SYNCHRONIZATION) {
                    "in_sync"
                } else {
                    "out_sync"
                }
                .into(),
                aggregatable: a.has(state::AGGREGATION),
                collecting: a.has(state::COLLECTING),
                distributing: a.has(state::DISTRIBUTING),
                system_id: mac(a.system),
                oper_key: u32::from(a.key),
                partner_id: mac(m.partner.system),
                partner_key: u32::from(m.partner.key),
                port_num: u32::from(a.port),
                partner_port_num: u32::from(m.partner.port),
            });
        }
    }
    MetricsResponse {
        choice: "lacp_metrics".into(),
        lacp_metrics: Some(list),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_lacp::pdu::Info;
    use linerate_lacp::{MemberView, Mux, RxState};

    fn member(port: &str, up: bool) -> MemberView {
        let bits = state::ACTIVITY | state::AGGREGATION | state::SYNCHRONIZATION;
        MemberView {
            port: port.into(),
            pdus_rx: 5,
            pdus_tx: 6,
            rx_errors: 1,
            actor: Info {
                system_priority: 1,
                system: [1; 6],
                key: 9,
                port_priority: 1,
                port: 3,
                state: if up {
                    bits | state::COLLECTING | state::DISTRIBUTING
                } else {
                    bits
                },
            },
            partner: Info {
                system: [0xab; 6],
                key: 4,
                port: 8,
                ..Info::default()
            },
            rx: RxState::Current,
            mux: if up {
                Mux::CollectingDistributing
            } else {
                Mux::Attached
            },
            link_up: true,
            up,
        }
    }

    fn port(name: &str, frames: u64) -> PortMetric {
        PortMetric {
            name: name.into(),
            frames_tx: frames,
            frames_rx: 2 * frames,
            bytes_tx: 64 * frames,
            frames_tx_rate: 10.0,
            ..PortMetric::default()
        }
    }

    #[test]
    fn a_lag_sums_its_members_ports_and_is_up_by_min_links() {
        let lag = LagView {
            name: "l".into(),
            min_links: 2,
            lacp: true,
            members: vec![member("a", true), member("b", false)],
        };
        let ports = [port("a", 3), port("b", 4), port("c", 100)];
        let m = lag_response(std::slice::from_ref(&lag), &ports, &[]);
        let m = &m.lag_metrics.unwrap()[0];
        assert_eq!((m.oper_status.as_str(), m.member_ports_up), ("down", 1));
        assert_eq!((m.frames_tx, m.frames_rx, m.bytes_tx), (7, 14, 448));
        assert_eq!(m.frames_tx_rate, 20.0);
        let one = LagView {
            min_links: 1,
            ..lag.clone()
        };
        let m = lag_response(&[one], &ports, &[]);
        assert_eq!(m.lag_metrics.unwrap()[0].oper_status, "up");
        assert!(
            lag_response(&[lag], &ports, &["x".into()])
                .lag_metrics
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_start_names_flows_off_their_lag_and_a_lag_down_by_min_links_once() {
        let c: crate::Config =
            serde_json::from_value(crate::map::lag_tests::b2b_of_two_members()).unwrap();
        let lag = |name: &str, ports: [&str; 2], up: [bool; 2], min_links| LagView {
            name: name.into(),
            min_links,
            lacp: true,
            members: vec![member(ports[0], up[0]), member(ports[1], up[1])],
        };
        let all: Vec<usize> = (0..8).collect();
        // a1 out: the flows moved to a2 and b2; lagTx (min_links 2) down, said once.
        let m = crate::map_config_over_lags(&c, &["a1".into()]).unwrap();
        let views = [
            lag("lagTx", ["a1", "a2"], [false, true], 2),
            lag("lagRx", ["b1", "b2"], [true, true], 1),
        ];
        assert_eq!(
            off_lag(&m, &views, &all),
            [
                "LAG 'lagTx' is down (1 of its members in it, min_links 2): its flows are sent on \
              the members in it"
            ]
        );
        // Neither of lagTx in: its flows stay where they were, each named.
        let m = crate::map_config_over_lags(&c, &["a1".into(), "a2".into()]).unwrap();
        let views = [
            lag("lagTx", ["a1", "a2"], [false, false], 1),
            lag("lagRx", ["b1", "b2"], [true, true], 1),
        ];
        let said = off_lag(&m, &views, &[0, 1]);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].starts_with("flow 'f0' runs on port 'a"), "{said:?}");
        assert!(said[1].contains("not in LAG 'lagTx' now"), "{said:?}");
    }

    #[test]
    fn a_member_says_its_lacp_state_in_otgs_words() {
        let lag = LagView {
            name: "l".into(),
            min_links: 1,
            lacp: true,
            members: vec![member("a", true), member("b", false)],
        };
        let m = lacp_response(&[lag], &[], &["b".into()]);
        let m = m.lacp_metrics.unwrap();
        assert_eq!(m.len(), 1);
        let b = &m[0];
        assert_eq!(
            (b.lag_name.as_str(), b.lag_member_port_name.as_str()),
            ("l", "b")
        );
        assert_eq!(
            (b.lacp_packets_rx, b.lacp_packets_tx, b.lacp_rx_errors),
            (5, 6, 1)
        );
        assert_eq!(
            (
                b.activity.as_str(),
                b.timeout.as_str(),
                b.synchronization.as_str()
            ),
            ("active", "long", "in_sync")
        );
        assert!(b.aggregatable && !b.collecting && !b.distributing);
        assert_eq!(b.system_id, "01:01:01:01:01:01");
        assert_eq!(b.partner_id, "ab:ab:ab:ab:ab:ab");
        assert_eq!(
            (b.oper_key, b.partner_key, b.port_num, b.partner_port_num),
            (9, 4, 3, 8)
        );
    }
}
