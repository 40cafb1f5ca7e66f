//! The flow's `rate` node onto a typed `Rate`.

use linerate_stream::{Rate, StreamSpec};

use super::{Cx, num};
use crate::model::*;

impl Cx {
    /// Sets the rate; returns it in frames/s when it is given so.
    pub(super) fn rate(
        &mut self,
        path: &str,
        rate: Option<&FlowRate>,
        spec: &mut StreamSpec,
    ) -> Option<f64> {
        let Some(r) = rate else {
            return Some(1000.0);
        };
        let at = format!("{path}.rate");
        self.rest(&at, &r.rest);
        let choice = r.choice.as_deref().unwrap_or("pps");
        // The value's field, and the rate it gives.
        let (value, make): (_, fn(f64) -> Rate) = match choice {
            "pps" => (&r.pps, Rate::Pps),
            "bps" => (&r.bps, Rate::L2),
            "kbps" => (&r.kbps, |v| Rate::L2(v * 1e3)),
            "mbps" => (&r.mbps, |v| Rate::L2(v * 1e6)),
            "gbps" => (&r.gbps, |v| Rate::L2(v * 1e9)),
            "percentage" => (&r.percentage, Rate::Percent),
            other => {
                self.refuse(
                    format!("{at}.choice"),
                    format!("rate '{other}' is not supported"),
                );
                return None;
            }
        };
        let v = match value {
            None if choice == "pps" => 1000.0,
            None if choice == "percentage" => 100.0,
            None => {
                self.refuse(format!("{at}.{choice}"), "missing");
                return None;
            }
            Some(v) => match num(v) {
                Some(n) if n > 0.0 && n.is_finite() => n,
                _ => {
                    self.refuse(
                        format!("{at}.{choice}"),
                        format!("{v} is not a rate above 0"),
                    );
                    return None;
                }
            },
        };
        let rate = make(v);
        if let Err(why) = rate.check() {
            self.refuse(format!("{at}.{choice}"), why);
            return None;
        }
        spec.rate = rate;
        (choice == "pps").then_some(v)
    }
}
