//! The plot panels of an RFC 2544 run.

use super::table::goal_name;
use super::{Rfc2544Result, Throughput};
use crate::{Curve, Panel, line_rate_pps};

/// Throughput (kfps) against size, one curve per goal, the line rate dashed; loss % against
/// offered load %, one curve per size.
pub fn panels(r: &Rfc2544Result) -> Vec<Panel> {
    let mut out = Vec::new();
    let mut goals: Vec<f64> = Vec::new();
    for s in &r.sizes {
        for g in s.throughput.iter().flat_map(Throughput::lines) {
            if !goals.contains(&g.loss_ratio) {
                goals.push(g.loss_ratio);
            }
        }
    }
    if !goals.is_empty() {
        let mut curves: Vec<Curve> = goals
            .iter()
            .map(|&loss| Curve {
                name: goal_name(loss),
                points: r
                    .sizes
                    .iter()
                    .filter_map(|s| {
                        let g = s
                            .throughput
                            .as_ref()?
                            .lines()
                            .into_iter()
                            .find(|g| g.loss_ratio == loss)?;
                        Some((f64::from(s.size), g.throughput_fps? / 1000.0))
                    })
                    .collect(),
                dashed: false,
            })
            .collect();
        if let Some(m) = r.context.link_speed_mbps {
            curves.push(Curve {
                name: format!("line rate {m} Mbit/s"),
                points: r
                    .sizes
                    .iter()
                    .map(|s| {
                        (
                            f64::from(s.size),
                            line_rate_pps(s.size as usize, m) / 1000.0,
                        )
                    })
                    .collect(),
                dashed: true,
            });
        }
        out.push(Panel {
            x_desc: "frame size (B, FCS included)".into(),
            y_desc: "throughput (kfps)".into(),
            curves,
        });
    }
    let loss: Vec<Curve> = r
        .sizes
        .iter()
        .filter_map(|s| {
            let l = s.loss.as_ref()?;
            Some(Curve {
                name: format!("{} B", s.size),
                points: l
                    .rows
                    .iter()
                    .map(|row| (row.load_percent, row.loss_percent))
                    .collect(),
                dashed: false,
            })
        })
        .collect();
    if !loss.is_empty() {
        out.push(Panel {
            x_desc: "offered load (% of the max rate)".into(),
            y_desc: "frame loss (%)".into(),
            curves: loss,
        });
    }
    out
}
