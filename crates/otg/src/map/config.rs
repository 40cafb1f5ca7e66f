//! The `Config` node: its ports, `layer1`, captures and the flows, and what linerate asks of
//! them together (one end time; port flows from one port to one other, or from several ports
//! each to another, as places of one test bed).

use std::time::Duration;

use linerate_stream::Mode;

use super::{
    CaptureFormat, Cx, FlowPlan, HostPlan, Location, Mapped, PortPlan, hint, int, is_empty,
    speed_mbps,
};
use crate::model::*;

impl Cx {
    pub(super) fn config(&mut self, c: &Config) -> Mapped {
        for (key, value) in &c.rest {
            if !is_empty(value) {
                self.refuse(key.clone(), hint(key));
            }
        }
        if let Some(o) = &c.options {
            self.rest("options", &o.rest);
            if let Some(p) = &o.port_options {
                self.rest("options.port_options", &p.rest);
                if p.data_integrity == Some(true) {
                    self.refuse(
                        "options.port_options.data_integrity",
                        "payload integrity checking is not supported",
                    );
                }
            }
        }
        let mut ports = self.ports(&c.ports);
        self.layer1(&c.layer1, &mut ports);
        self.captures(&c.captures, &mut ports);
        let lags = self.lags(&c.lags, &ports);
        self.lag_specs = lags.clone();
        let hosts = self.devices(&c.devices, &ports);
        let (mut routers, mut ranges) = self.bgp(&c.devices, &ports, &hosts);
        self.isis(&c.devices, &ports, &hosts, &mut routers, &mut ranges);
        self.ospfv2(&c.devices, &ports, &hosts, &mut routers, &mut ranges);
        self.ospfv3(&c.devices, &ports, &hosts, &mut routers, &mut ranges);
        self.ranges = ranges.clone();
        let given = self.flows_over_lags(&c.flows, &lags);
        let (mut streams, flows, seconds) = self.flows(&given, &ports, &hosts);
        self.lldp(&c.lldp, &ports, &mut routers);
        self.lldp_beside_port_flows(&c.lldp, &hosts, &flows);
        self.lldp_on_agents(&c.lldp, &ports, &hosts);
        // Between hosts every port sends its own flows and receives those sent toward it; port
        // flows on several ports do the same, each port a place of the test bed.
        let (tx_port, rx_port, flow_ports) = if hosts.is_empty() {
            self.port_flows(&ports)
        } else {
            (None, None, Vec::new())
        };
        if !flow_ports.is_empty() {
            let at = |name: &str| {
                ports
                    .iter()
                    .find(|p| p.name == name)
                    .map(|p| p.location.to_string())
            };
            for (s, f) in streams.iter_mut().zip(&flows) {
                s.from = at(&f.tx_port);
                s.to = f.rx_port.as_deref().and_then(at);
            }
        }
        // One port signs all its frames or none (a receiver would count the unsigned ones as
        // other traffic): any flow with metrics signs every flow.
        let signed = flows.iter().any(|f| f.metrics);
        let no_size: std::collections::HashSet<&str> = given
            .iter()
            .filter(|g| g.size.is_none())
            .map(|g| g.name.as_str())
            .collect();
        for (s, f) in streams.iter_mut().zip(&flows) {
            s.signature = signed;
            if flows.iter().filter(|g| g.tx_port == f.tx_port).count() > 1 {
                s.mode = Mode::Interleaved;
            }
            // A flow without `size` is as large as its packet needs, its custom bytes and the
            // signature after them (as ixia-c sends otg-examples' DNS payloads whole); a
            // size given is the size, or refused.
            if no_size.contains(f.name.as_str())
                && let Ok(n) = s.smallest_size()
                && n > s.size
            {
                self.warnings.push(format!(
                    "flow '{}' has no size: its frames are {n} B, what its headers, custom bytes and signature take",
                    f.name
                ));
                s.size = n;
            }
        }
        Mapped {
            ports,
            hosts,
            tx_port,
            rx_port,
            flow_ports,
            streams,
            flows,
            duration: seconds.map(Duration::from_secs_f64),
            routers,
            ranges,
            lags,
            lag_flows: std::mem::take(&mut self.lag_flows),
            lag_out: std::mem::take(&mut self.lag_out),
            warnings: std::mem::take(&mut self.warnings),
        }
    }

    fn ports(&mut self, given: &[Port]) -> Vec<PortPlan> {
        let mut ports: Vec<PortPlan> = Vec::new();
        for (i, p) in given.iter().enumerate() {
            let path = format!("ports[{i}]");
            self.rest(&path, &p.rest);
            if p.name.is_empty() {
                self.refuse(format!("{path}.name"), "a port needs a name");
            }
            if ports.iter().any(|q| q.name == p.name) {
                self.refuse(
                    format!("{path}.name"),
                    format!("port name '{}' is used twice", p.name),
                );
            }
            let location = match p.location.as_deref().map(Location::parse) {
                Some(Some(l)) => l,
                Some(None) => {
                    self.refuse(
                        format!("{path}.location"),
                        format!(
                            "'{}' is not an interface: write IFACE or IFACE@NETNS (e.g. lr0, lr1@lr-sink), after HOST:PORT/ for an agent's port",
                            p.location.as_deref().unwrap_or_default()
                        ),
                    );
                    continue;
                }
                None => {
                    self.refuse(
                        format!("{path}.location"),
                        "a port needs a location: IFACE or IFACE@NETNS",
                    );
                    continue;
                }
            };
            ports.push(PortPlan {
                name: p.name.clone(),
                location,
                link_mbps: None,
                capture: false,
                capture_format: CaptureFormat::Pcap,
            });
        }
        ports
    }

    fn layer1(&mut self, given: &[Layer1], ports: &mut [PortPlan]) {
        for (i, l) in given.iter().enumerate() {
            let path = format!("layer1[{i}]");
            self.rest(&path, &l.rest);
            let mbps = match l.speed.as_deref() {
                None => None,
                Some(s) => match speed_mbps(s) {
                    Some(m) => Some(m),
                    None => {
                        self.refuse(format!("{path}.speed"), format!("unknown speed '{s}'"));
                        None
                    }
                },
            };
            if let Some(mtu) = &l.mtu
                && int(mtu) != Some(1500)
            {
                self.refuse(
                    format!("{path}.mtu"),
                    "linerate does not set the MTU: it uses the interface's (set it with ip link)",
                );
            }
            for (j, name) in l.port_names.iter().enumerate() {
                match ports.iter_mut().find(|p| &p.name == name) {
                    Some(p) => p.link_mbps = mbps.or(p.link_mbps),
                    None => self.refuse(
                        format!("{path}.port_names[{j}]"),
                        format!("no port is named '{name}'"),
                    ),
                }
            }
        }
    }

    fn captures(&mut self, given: &[Capture], ports: &mut [PortPlan]) {
        for (i, cap) in given.iter().enumerate() {
            let path = format!("captures[{i}]");
            self.rest(&path, &cap.rest);
            let format = match cap.format.as_deref() {
                None | Some("pcap") => CaptureFormat::Pcap,
                Some("pcapng") => CaptureFormat::Pcapng,
                Some(f) => {
                    self.refuse(
                        format!("{path}.format"),
                        format!("captures are pcap or pcapng files ('{f}' is neither)"),
                    );
                    CaptureFormat::Pcap
                }
            };
            if cap.packet_size.as_ref().is_some_and(|v| !is_empty(v)) {
                self.refuse(
                    format!("{path}.packet_size"),
                    "captures keep whole frames (packet_size is not supported)",
                );
            }
            for (j, name) in cap.port_names.iter().enumerate() {
                match ports.iter_mut().find(|p| &p.name == name) {
                    Some(p) => {
                        p.capture = true;
                        p.capture_format = format;
                    }
                    None => self.refuse(
                        format!("{path}.port_names[{j}]"),
                        format!("no port is named '{name}'"),
                    ),
                }
            }
        }
    }

    /// Every flow mapped, and the `fixed_seconds` they all share.
    fn flows(
        &mut self,
        given: &[Flow],
        ports: &[PortPlan],
        hosts: &[HostPlan],
    ) -> (Vec<linerate_stream::StreamSpec>, Vec<FlowPlan>, Option<f64>) {
        let mut streams = Vec::new();
        let mut flows: Vec<FlowPlan> = Vec::new();
        let mut seconds: Option<(usize, f64)> = None;
        let mut any_seconds_missing: Option<usize> = None;
        for (i, f) in given.iter().enumerate() {
            let path = format!("flows[{i}]");
            if flows.iter().any(|g| g.name == f.name) {
                self.refuse(
                    format!("{path}.name"),
                    format!("flow name '{}' is used twice", f.name),
                );
            }
            let Some((plan, spec, secs)) = self.flow(&path, i, f, ports, hosts) else {
                continue;
            };
            match (secs, seconds) {
                (Some(s), None) => seconds = Some((i, s)),
                (Some(s), Some((j, t))) if s != t => self.refuse(
                    format!("{path}.duration.fixed_seconds.seconds"),
                    format!(
                        "this flow ends {s} s after the start (its delay and seconds), but flows[{j}] ends at {t} s: linerate ends every flow of a run at one time, so delay + fixed_seconds must be the same on every flow"
                    ),
                ),
                (None, _) => any_seconds_missing = any_seconds_missing.or(Some(i)),
                _ => {}
            }
            streams.push(spec);
            flows.push(plan);
        }
        if let (Some((i, _)), Some(j)) = (seconds, any_seconds_missing) {
            self.refuse(
                format!("flows[{j}].duration"),
                format!(
                    "flows[{i}] runs fixed_seconds and this flow does not: linerate ends every flow of a run at one time, so fixed_seconds must be on every flow or none"
                ),
            );
        }
        (streams, flows, seconds.map(|(_, s)| s))
    }

    /// Where the port flows run: from one port and toward at most one other (that port and
    /// the receive port, as a lone port with its receiver), or else on every port they leave
    /// from or arrive at, each a place of one test bed (the OTG ports, in the config's order),
    /// with flows numbered across them so that a receiver tells apart flows of several senders.
    /// A flow's receive port is never its own transmit port. Checked on every port flow of the
    /// config, those refused for other reasons too.
    fn port_flows(&mut self, ports: &[PortPlan]) -> (Option<String>, Option<String>, Vec<String>) {
        let endpoints = std::mem::take(&mut self.endpoints);
        for (i, tx, rx) in &endpoints {
            if rx.as_ref() == Some(tx) {
                self.refuse(
                    format!("flows[{i}].tx_rx.port.rx_names"),
                    "the receive port is the transmit port: give the far end of the link",
                );
            }
        }
        let mut txs: Vec<&String> = endpoints.iter().map(|f| &f.1).collect();
        let mut rxs: Vec<&String> = endpoints.iter().filter_map(|f| f.2.as_ref()).collect();
        for names in [&mut txs, &mut rxs] {
            names.sort();
            names.dedup();
        }
        if txs.len() <= 1 && rxs.len() <= 1 {
            let one = |names: &[&String]| names.first().map(|n| (*n).clone());
            return (one(&txs), one(&rxs), Vec::new());
        }
        let used = ports
            .iter()
            .filter(|p| txs.contains(&&p.name) || rxs.contains(&&p.name))
            .map(|p| p.name.clone())
            .collect();
        (None, None, used)
    }
}
