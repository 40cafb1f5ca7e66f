//! The flow's `size` node: fixed, increment, random or weight pairs, as a typed `SizeMode`
//! refused by path when it does not fit.

use linerate_stream::{SizeMode, StreamSpec};
use serde_json::Value;

use super::{Cx, int, num};
use crate::model::*;

/// The simple IMIX as OTG predefines it: 7 × 64, 4 × 570, 1 × 1518.
const OTG_IMIX: [(usize, usize); 3] = [(64, 7), (570, 4), (1518, 1)];

impl Cx {
    pub(super) fn size(&mut self, path: &str, size: Option<&FlowSize>, spec: &mut StreamSpec) {
        let Some(s) = size else {
            return;
        };
        let at = format!("{path}.size");
        self.rest(&at, &s.rest);
        let choice = s.choice.as_deref().unwrap_or(if s.increment.is_some() {
            "increment"
        } else if s.random.is_some() {
            "random"
        } else if s.weight_pairs.is_some() {
            "weight_pairs"
        } else {
            "fixed"
        });
        let p = format!("{at}.{choice}");
        let mode = match choice {
            "fixed" => {
                if let Some(n) = self.frame_size(p, &s.fixed, 64) {
                    spec.size = n;
                }
                return;
            }
            "increment" => {
                let i = s.increment.clone().unwrap_or_default();
                self.rest(&p, &i.rest);
                let (a, b, st) = (
                    self.frame_size(format!("{p}.start"), &i.start, 64),
                    self.frame_size(format!("{p}.end"), &i.end, 1518),
                    self.frame_size(format!("{p}.step"), &i.step, 1),
                );
                let (Some(min), Some(max), Some(step)) = (a, b, st) else {
                    return;
                };
                spec.size = min;
                SizeMode::Inc { min, max, step }
            }
            "random" => {
                let r = s.random.clone().unwrap_or_default();
                self.rest(&p, &r.rest);
                let (a, b) = (
                    self.frame_size(format!("{p}.min"), &r.min, 64),
                    self.frame_size(format!("{p}.max"), &r.max, 1518),
                );
                let (Some(min), Some(max)) = (a, b) else {
                    return;
                };
                spec.size = min;
                SizeMode::Random { min, max }
            }
            "weight_pairs" => match self.weight_pairs(&p, s.weight_pairs.as_ref()) {
                Some(mix) => SizeMode::Imix(mix),
                None => return,
            },
            other => {
                self.refuse(
                    format!("{at}.choice"),
                    format!("size '{other}' is not supported"),
                );
                return;
            }
        };
        match mode.check() {
            Ok(()) => spec.size_mode = mode,
            Err(why) => self.refuse(p, why),
        }
    }

    fn frame_size(&mut self, at: String, v: &Option<Value>, default: usize) -> Option<usize> {
        match v {
            None => Some(default),
            Some(v) => match int(v) {
                Some(n) if n <= 65535 => Some(n as usize),
                _ => {
                    self.refuse(at, format!("{v} is not a frame size"));
                    None
                }
            },
        }
    }

    /// The (size, weight) pairs, predefined or custom.
    fn weight_pairs(
        &mut self,
        p: &str,
        w: Option<&FlowSizeWeightPairs>,
    ) -> Option<Vec<(usize, usize)>> {
        let w = w.cloned().unwrap_or_default();
        self.rest(p, &w.rest);
        match w.choice.as_deref().unwrap_or("predefined") {
            "predefined" => match w.predefined.as_deref().unwrap_or("imix") {
                "imix" => Some(OTG_IMIX.to_vec()),
                other => {
                    self.refuse(
                        format!("{p}.predefined"),
                        format!("predefined '{other}' is not supported: use imix or custom pairs"),
                    );
                    None
                }
            },
            "custom" => {
                let mut mix = Vec::new();
                for (j, pair) in w.custom.iter().enumerate() {
                    let pp = format!("{p}.custom[{j}]");
                    self.rest(&pp, &pair.rest);
                    let size = self.frame_size(format!("{pp}.size"), &pair.size, 64);
                    let weight = pair.weight.as_ref().map_or(Some(1.0), num);
                    match (size, weight) {
                        (Some(sz), Some(wt)) if wt >= 1.0 && wt.fract() == 0.0 && wt <= 1e6 => {
                            mix.push((sz, wt as usize))
                        }
                        (Some(_), _) => self.refuse(
                            format!("{pp}.weight"),
                            "weights must be whole numbers from 1 (linerate repeats each size that many times a cycle)",
                        ),
                        _ => {}
                    }
                }
                if mix.is_empty() {
                    self.refuse(format!("{p}.custom"), "no pairs");
                    return None;
                }
                Some(mix)
            }
            other => {
                self.refuse(
                    format!("{p}.choice"),
                    format!("'{other}' is not a choice here"),
                );
                None
            }
        }
    }
}
