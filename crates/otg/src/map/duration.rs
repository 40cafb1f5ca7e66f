//! The flow's `duration` node: a count of frames, a time, bursts, or continuous.

use linerate_stream::{Bursts, StreamSpec};
use serde_json::Value;

use super::{Cx, int, num};
use crate::model::*;

impl Cx {
    /// Sets the count and bursts; returns fixed_seconds when given.
    pub(super) fn duration(
        &mut self,
        path: &str,
        d: Option<&FlowDuration>,
        spec: &mut StreamSpec,
        pps: Option<f64>,
        link_mbps: Option<u64>,
    ) -> Option<f64> {
        let d = d?;
        let at = format!("{path}.duration");
        self.rest(&at, &d.rest);
        let choice = d.choice.as_deref().unwrap_or(if d.fixed_packets.is_some() {
            "fixed_packets"
        } else if d.fixed_seconds.is_some() {
            "fixed_seconds"
        } else if d.burst.is_some() {
            "burst"
        } else {
            "continuous"
        });
        let p = format!("{at}.{choice}");
        match choice {
            "fixed_packets" => {
                let f = d.fixed_packets.clone().unwrap_or_default();
                self.rest(&p, &f.rest);
                self.gap(format!("{p}.gap"), &f.gap);
                self.delay(format!("{p}.delay"), &f.delay, spec, link_mbps);
                match f.packets.as_ref().map_or(Some(1), int) {
                    Some(n) if n >= 1 && n <= u128::from(u64::MAX) => spec.count = Some(n as u64),
                    _ => self.refuse(format!("{p}.packets"), "packets must be at least 1"),
                }
                None
            }
            "fixed_seconds" => {
                let f = d.fixed_seconds.clone().unwrap_or_default();
                self.rest(&p, &f.rest);
                self.gap(format!("{p}.gap"), &f.gap);
                self.delay(format!("{p}.delay"), &f.delay, spec, link_mbps);
                // The run ends when the flow has sent for its seconds after its delay.
                let delay = spec.delay.map_or(0.0, |d| d.0.as_secs_f64());
                match f.seconds.as_ref().map_or(Some(1.0), num) {
                    Some(s) if s > 0.0 && s <= 1e6 => Some(delay + s),
                    _ => {
                        self.refuse(format!("{p}.seconds"), "seconds must be above 0");
                        None
                    }
                }
            }
            "burst" => {
                self.burst(&p, d.burst.as_ref(), spec, pps, link_mbps);
                None
            }
            "continuous" => {
                if let Some(c) = &d.continuous {
                    self.rest(&p, &c.rest);
                    self.gap(format!("{p}.gap"), &c.gap);
                    self.delay(format!("{p}.delay"), &c.delay, spec, link_mbps);
                }
                None
            }
            other => {
                self.refuse(
                    format!("{at}.choice"),
                    format!("duration '{other}' is not supported"),
                );
                None
            }
        }
    }

    fn gap(&mut self, p: String, g: &Option<Value>) {
        if let Some(g) = g
            && int(g) != Some(12)
        {
            self.refuse(
                p,
                "the inter-frame gap is the link's (12 bytes); other gaps are not supported",
            );
        }
    }

    /// The flow's start delay onto `spec.delay` (bytes are times at the link's speed).
    fn delay(
        &mut self,
        p: String,
        d: &Option<FlowDelay>,
        spec: &mut StreamSpec,
        link_mbps: Option<u64>,
    ) {
        let Some(d) = d else { return };
        let zero = [&d.bytes, &d.nanoseconds, &d.microseconds]
            .iter()
            .all(|v| v.as_ref().is_none_or(|v| num(v) == Some(0.0)));
        if zero {
            self.rest(&p, &d.rest);
            return;
        }
        let Some(seconds) = self.time_of(&p, d, 0.0, link_mbps) else {
            return;
        };
        let max = linerate_stream::MAX_START_DELAY.as_secs_f64();
        if !(0.0..=max).contains(&seconds) {
            self.refuse(p, "a start delay is at least 0 and at most a day");
            return;
        }
        spec.delay = Some(linerate_stream::StartDelay(
            std::time::Duration::from_secs_f64(seconds),
        ));
    }

    /// `packets` per burst, `bursts` of them (0: forever), the period from the flow's pps and
    /// the inter-burst gap.
    fn burst(
        &mut self,
        p: &str,
        b: Option<&FlowBurst>,
        spec: &mut StreamSpec,
        pps: Option<f64>,
        link_mbps: Option<u64>,
    ) {
        let b = b.cloned().unwrap_or_default();
        self.rest(p, &b.rest);
        self.gap(format!("{p}.gap"), &b.gap);
        let bursts = b.bursts.as_ref().map_or(Some(0), int);
        let packets = b.packets.as_ref().map_or(Some(1), int);
        let gap_s = match &b.inter_burst_gap {
            None => Some(12.0 * 8.0 / (link_mbps.unwrap_or(1000) as f64 * 1e6)),
            Some(g) => self.time_of(&format!("{p}.inter_burst_gap"), g, 12.0, link_mbps),
        };
        let Some(pps) = pps else {
            self.refuse(
                p,
                "bursts need the flow's rate in pps (rate.pps): the burst period is computed from it",
            );
            return;
        };
        match (bursts, packets, gap_s) {
            (Some(bursts), Some(packets), Some(gap_s))
                if packets >= 1 && gap_s >= 0.0 && packets <= u128::from(u64::MAX) =>
            {
                let period = packets as f64 / pps + gap_s;
                spec.bursts = Some(Bursts {
                    frames: packets as u64,
                    per_second: 1.0 / period,
                });
                if bursts > 0 {
                    match (bursts * packets).try_into() {
                        Ok(n) => spec.count = Some(n),
                        Err(_) => self.refuse(format!("{p}.bursts"), "too many frames"),
                    }
                }
            }
            _ => self.refuse(p, "bursts need packets ≥ 1, bursts ≥ 0 and a gap ≥ 0"),
        }
    }

    /// A gap or a delay in seconds; `bytes` (its default) unless given is `default_bytes`.
    fn time_of(
        &mut self,
        gp: &str,
        g: &FlowDelay,
        default_bytes: f64,
        link_mbps: Option<u64>,
    ) -> Option<f64> {
        self.rest(gp, &g.rest);
        let mut time = |key: &str, v: &Option<Value>, scale: f64| {
            let t = v
                .as_ref()
                .and_then(num)
                .filter(|t| *t >= 0.0)
                .map(|t| t * scale);
            if t.is_none() {
                self.refuse(
                    format!("{gp}.{key}"),
                    format!("{key} must be a number at least 0"),
                );
            }
            t
        };
        match g.choice.as_deref().unwrap_or("bytes") {
            "nanoseconds" => time("nanoseconds", &g.nanoseconds, 1e-9),
            "microseconds" => time("microseconds", &g.microseconds, 1e-6),
            "bytes" => match link_mbps {
                Some(m) => Some(
                    g.bytes.as_ref().and_then(num).unwrap_or(default_bytes) * 8.0
                        / (m as f64 * 1e6),
                ),
                None => {
                    self.refuse(
                        format!("{gp}.bytes"),
                        "a time in bytes needs the link speed: set layer1.speed for the transmit port, or give nanoseconds or microseconds",
                    );
                    None
                }
            },
            other => {
                self.refuse(
                    format!("{gp}.choice"),
                    format!("'{other}' is not a choice here"),
                );
                None
            }
        }
    }
}
