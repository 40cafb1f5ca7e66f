//! What `linerate lab impair` asks of the DUT's egress, checked once, with the bounds stated in
//! the error; the record it leaves for `lab status`. Plain data: every platform parses and checks.

use std::time::Duration;

use linerate_wire::quantity;

use crate::LabError;

/// Impairments of the DUT's egress toward the sink. Shares are percent (0 to 100).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Impairments {
    /// Share of frames dropped (BPF, drawn per frame).
    pub loss: f64,
    /// Share of frames sent twice (BPF, bpf_clone_redirect).
    pub duplicate: f64,
    /// Time every frame is held (the delay line).
    pub delay: Duration,
    /// Each frame's delay is drawn uniformly from delay ± jitter (the delay line), so frames
    /// reorder when the jitter exceeds their spacing, as netem's do.
    pub jitter: Duration,
    /// Share of frames sent at once, without the delay (the delay line): they overtake the
    /// frames held before them.
    pub reorder: f64,
    /// Rate limit in bits per second of frame bytes as the kernel counts them (no FCS): tbf.
    pub rate_bps: Option<u64>,
    /// Queue limit in frames (a pfifo under tbf, or alone).
    pub limit: Option<u32>,
    /// Rate limit of the reverse direction, the DUT's egress toward the sender (tbf there),
    /// so that a bidirectional test meets a shaper each way. Every other impairment stays on
    /// the forward direction.
    pub reverse_rate_bps: Option<u64>,
}

/// The largest delay or jitter the delay line holds frames for.
pub const MAX_DELAY: Duration = Duration::from_secs(10);
/// tbf's rate bounds here: 8 kbit/s (a 1500-byte frame every 1.5 s) to 100 Gbit/s.
pub const MIN_RATE_BPS: u64 = 8_000;
pub const MAX_RATE_BPS: u64 = 100_000_000_000;
/// The largest queue limit, in frames.
pub const MAX_LIMIT: u32 = 1_000_000;

/// What the impairment program has done, summed over CPUs. Laid out as `struct
/// impair_counters` of `bpf/impair.bpf.c`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct ImpairCounters {
    /// Frames that reached the program (duplicates and delayed frames not counted again).
    pub seen: u64,
    pub dropped: u64,
    pub duplicated: u64,
    /// Frames handed to the delay line.
    pub diverted: u64,
}

/// One of the impairments, for an error to name (the caller names it in its own terms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Impairment {
    Loss,
    Duplicate,
    Delay,
    Jitter,
    Reorder,
    Rate,
    Limit,
    ReverseRate,
}

impl std::fmt::Display for Impairment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Loss => "loss",
            Self::Duplicate => "duplicate",
            Self::Delay => "delay",
            Self::Jitter => "jitter",
            Self::Reorder => "reorder",
            Self::Rate => "rate",
            Self::Limit => "limit",
            Self::ReverseRate => "reverse rate",
        })
    }
}

fn bad(impairment: Impairment, value: &str, reason: impl Into<String>) -> LabError {
    LabError::InvalidImpairment {
        impairment,
        value: value.to_owned(),
        reason: reason.into(),
    }
}

impl Impairments {
    /// True when nothing is impaired.
    pub fn is_none(&self) -> bool {
        *self == Impairments::default()
    }

    /// True when the delay line is needed (delay, jitter or reorder).
    pub fn needs_delay_line(&self) -> bool {
        !self.delay.is_zero()
    }

    /// A share in percent: `1%`, `0.5%` or `1` (0 to 100).
    pub fn parse_percent(what: Impairment, text: &str) -> Result<f64, LabError> {
        let number = text.trim().strip_suffix('%').unwrap_or(text.trim()).trim();
        let value: f64 = number
            .parse()
            .map_err(|_| bad(what, text, "not a share (e.g. 1% or 0.5%)"))?;
        if !(0.0..=100.0).contains(&value) {
            return Err(bad(what, text, "a share is 0 to 100 %"));
        }
        Ok(value)
    }

    /// A time in the one duration grammar (`linerate_wire::quantity`): `1ms`, `250us`, `2s`,
    /// `500ns` or `0`, 0 to 10 s. A bare number other than 0 is refused: a delay is typed in
    /// milliseconds more often than in seconds, so the unit is asked for, not guessed.
    pub fn parse_time(what: Impairment, text: &str) -> Result<Duration, LabError> {
        let time = quantity::parse_duration(text).map_err(|e| bad(what, text, e.why))?;
        if quantity::split(text).is_some_and(|(_, unit)| unit.is_empty()) && !time.is_zero() {
            return Err(bad(what, text, "give a unit: s, ms, us or ns"));
        }
        if time > MAX_DELAY {
            return Err(bad(what, text, "a time is 0 to 10 s"));
        }
        Ok(time)
    }

    /// A rate in bits a second, its unit named: `100Mbps`, `100Mbit`, `10Gb/s`, `500kbps`
    /// (8 kbit/s to 100 Gbit/s). A bare `100M` is refused: in `tx --rate` it is frames a
    /// second, and one quantity reads one way in every command (issue 41).
    pub fn parse_rate(what: Impairment, text: &str) -> Result<u64, LabError> {
        let unit = quantity::split(text).map(|(_, unit)| unit.to_ascii_lowercase());
        if unit.as_deref().is_some_and(|u| !u.contains('b')) {
            let bits = format!("{}bps", text.trim());
            return Err(bad(
                what,
                text,
                format!(
                    "name the unit: {bits} (bits a second); a bare number is frames a second in tx --rate"
                ),
            ));
        }
        let bps = quantity::parse_bandwidth(text).map_err(|e| bad(what, text, e.why))?;
        if bps < MIN_RATE_BPS as f64 || bps > MAX_RATE_BPS as f64 {
            return Err(bad(what, text, "a rate is 8 kbit/s to 100 Gbit/s"));
        }
        Ok(bps.round() as u64)
    }

    /// A queue limit in frames (1 to 1,000,000).
    pub fn parse_limit(what: Impairment, text: &str) -> Result<u32, LabError> {
        let value: u64 = text
            .trim()
            .parse()
            .map_err(|_| bad(what, text, "not a whole number of frames"))?;
        if value == 0 || value > u64::from(MAX_LIMIT) {
            return Err(bad(what, text, "a queue limit is 1 to 1000000 frames"));
        }
        Ok(value as u32)
    }

    /// Checks the combination: jitter and reorder need a delay, jitter at most the delay.
    pub fn validate(&self) -> Result<(), LabError> {
        for (what, value) in [
            (Impairment::Loss, self.loss),
            (Impairment::Duplicate, self.duplicate),
            (Impairment::Reorder, self.reorder),
        ] {
            if !(0.0..=100.0).contains(&value) {
                return Err(bad(what, &format!("{value}%"), "a share is 0 to 100 %"));
            }
        }
        if self.delay > MAX_DELAY {
            return Err(bad(
                Impairment::Delay,
                &fmt_time(self.delay),
                "a time is 0 to 10 s",
            ));
        }
        if !self.jitter.is_zero() && self.jitter > self.delay {
            return Err(bad(
                Impairment::Jitter,
                &fmt_time(self.jitter),
                format!(
                    "the jitter must not exceed the delay ({}), so no frame is held less than nothing",
                    fmt_time(self.delay)
                ),
            ));
        }
        if self.reorder > 0.0 && self.delay.is_zero() {
            return Err(bad(
                Impairment::Reorder,
                &format!("{}%", self.reorder),
                "reorder sends a share of frames past the delayed ones, so it needs a delay too",
            ));
        }
        if let Some(r) = self.rate_bps
            && !(MIN_RATE_BPS..=MAX_RATE_BPS).contains(&r)
        {
            return Err(bad(
                Impairment::Rate,
                &r.to_string(),
                "a rate is 8 kbit/s to 100 Gbit/s",
            ));
        }
        if let Some(l) = self.limit
            && (l == 0 || l > MAX_LIMIT)
        {
            return Err(bad(
                Impairment::Limit,
                &l.to_string(),
                "a queue limit is 1 to 1000000 frames",
            ));
        }
        Ok(())
    }

    /// The threshold out of 2^32 the BPF program compares `bpf_get_prandom_u32()` with for a
    /// share in percent (100 % = 2^32 - 1: all but one frame in 2^32).
    pub fn threshold(percent: f64) -> u32 {
        let t = (percent / 100.0 * 4_294_967_296.0).round();
        t.clamp(0.0, f64::from(u32::MAX)) as u32
    }

    /// One line for `lab status`: "none" or the impairments in force.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.loss > 0.0 {
            parts.push(format!("loss {}%", self.loss));
        }
        if self.duplicate > 0.0 {
            parts.push(format!("duplicate {}%", self.duplicate));
        }
        if !self.delay.is_zero() {
            let mut d = format!("delay {}", fmt_time(self.delay));
            if !self.jitter.is_zero() {
                d.push_str(&format!(" ± {}", fmt_time(self.jitter)));
            }
            parts.push(d);
        }
        if self.reorder > 0.0 {
            parts.push(format!("reorder {}%", self.reorder));
        }
        if let Some(r) = self.rate_bps {
            parts.push(format!("rate {}", fmt_rate(r)));
        }
        if let Some(l) = self.limit {
            parts.push(format!("limit {l} frames"));
        }
        if let Some(r) = self.reverse_rate_bps {
            parts.push(format!("reverse rate {}", fmt_rate(r)));
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }

    /// The record kept in /run/linerate (one `key value` a line), read back by [`Self::from_text`].
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "loss {}\nduplicate {}\ndelay-ns {}\njitter-ns {}\nreorder {}\n",
            self.loss,
            self.duplicate,
            self.delay.as_nanos(),
            self.jitter.as_nanos(),
            self.reorder
        );
        if let Some(r) = self.rate_bps {
            s.push_str(&format!("rate-bps {r}\n"));
        }
        if let Some(l) = self.limit {
            s.push_str(&format!("limit {l}\n"));
        }
        if let Some(r) = self.reverse_rate_bps {
            s.push_str(&format!("reverse-rate-bps {r}\n"));
        }
        s
    }

    /// Reads [`Self::to_text`]'s record; unknown or unreadable lines are skipped.
    pub fn from_text(text: &str) -> Impairments {
        let mut i = Impairments::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(' ') else {
                continue;
            };
            match key {
                "loss" => i.loss = value.parse().unwrap_or(0.0),
                "duplicate" => i.duplicate = value.parse().unwrap_or(0.0),
                "reorder" => i.reorder = value.parse().unwrap_or(0.0),
                "delay-ns" => i.delay = Duration::from_nanos(value.parse().unwrap_or(0)),
                "jitter-ns" => i.jitter = Duration::from_nanos(value.parse().unwrap_or(0)),
                "rate-bps" => i.rate_bps = value.parse().ok(),
                "limit" => i.limit = value.parse().ok(),
                "reverse-rate-bps" => i.reverse_rate_bps = value.parse().ok(),
                _ => {}
            }
        }
        i
    }
}

fn fmt_time(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        "0".into()
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

fn fmt_rate(bps: u64) -> String {
    if bps >= 1_000_000_000 && bps.is_multiple_of(1_000_000) {
        format!("{} Gbit/s", bps as f64 / 1e9)
    } else if bps >= 1_000_000 && bps.is_multiple_of(1_000) {
        format!("{} Mbit/s", bps as f64 / 1e6)
    } else {
        format!("{} kbit/s", bps as f64 / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_within_their_bounds() {
        assert_eq!(
            Impairments::parse_percent(Impairment::Loss, "1%").unwrap(),
            1.0
        );
        assert_eq!(
            Impairments::parse_percent(Impairment::Loss, "0.5").unwrap(),
            0.5
        );
        assert_eq!(
            Impairments::parse_percent(Impairment::Loss, "100%").unwrap(),
            100.0
        );
        for bad in ["101%", "-1%", "x", "", "NaN"] {
            let e = Impairments::parse_percent(Impairment::Loss, bad).unwrap_err();
            assert!(e.to_string().starts_with("bad loss"), "{e}");
            assert!(e.is_usage());
        }
        assert_eq!(
            Impairments::parse_time(Impairment::Delay, "1ms").unwrap(),
            Duration::from_millis(1)
        );
        assert_eq!(
            Impairments::parse_time(Impairment::Delay, "250us").unwrap(),
            Duration::from_micros(250)
        );
        assert_eq!(
            Impairments::parse_time(Impairment::Delay, "0").unwrap(),
            Duration::ZERO
        );
        // `m` is no unit: minutes, milli and mega each have their own spelling.
        let e = Impairments::parse_time(Impairment::Delay, "2m").unwrap_err();
        assert!(e.to_string().contains("min or ms"), "{e}");
        for bad in ["11s", "5", "1h", "-1ms", "ms"] {
            assert!(
                Impairments::parse_time(Impairment::Delay, bad).is_err(),
                "{bad}"
            );
        }
        assert_eq!(
            Impairments::parse_rate(Impairment::Rate, "100Mbps").unwrap(),
            100_000_000
        );
        // Issue 41: a bare 100M is frames a second in tx; here the unit is named.
        let e = Impairments::parse_rate(Impairment::Rate, "100M").unwrap_err();
        assert!(e.to_string().contains("100Mbps"), "{e}");
        assert_eq!(
            Impairments::parse_rate(Impairment::Rate, "1Gbit").unwrap(),
            1_000_000_000
        );
        assert_eq!(
            Impairments::parse_rate(Impairment::Rate, "500kbps").unwrap(),
            500_000
        );
        for bad in ["1k", "200G", "fast", "10Q"] {
            assert!(
                Impairments::parse_rate(Impairment::Rate, bad).is_err(),
                "{bad}"
            );
        }
        assert_eq!(
            Impairments::parse_limit(Impairment::Limit, "100").unwrap(),
            100
        );
        for bad in ["0", "1000001", "-3", "1.5"] {
            assert!(
                Impairments::parse_limit(Impairment::Limit, bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn combinations_are_checked() {
        let jitter_over_delay = Impairments {
            delay: Duration::from_millis(1),
            jitter: Duration::from_millis(2),
            ..Default::default()
        };
        assert!(jitter_over_delay.validate().is_err());
        let reorder_alone = Impairments {
            reorder: 5.0,
            ..Default::default()
        };
        let e = reorder_alone.validate().unwrap_err();
        assert!(
            matches!(
                e,
                LabError::InvalidImpairment {
                    impairment: Impairment::Reorder,
                    ..
                }
            ),
            "{e}"
        );
        let fine = Impairments {
            loss: 1.0,
            delay: Duration::from_millis(1),
            jitter: Duration::from_micros(100),
            reorder: 5.0,
            rate_bps: Some(100_000_000),
            limit: Some(1000),
            reverse_rate_bps: Some(30_000_000),
            ..Default::default()
        };
        fine.validate().unwrap();
        assert_eq!(Impairments::from_text(&fine.to_text()), fine);
        assert_eq!(
            fine.describe(),
            "loss 1%, delay 1ms ± 100us, reorder 5%, rate 100 Mbit/s, limit 1000 frames, reverse rate 30 Mbit/s"
        );
        assert_eq!(Impairments::default().describe(), "none");
    }

    #[test]
    fn thresholds_are_shares_of_two_to_the_32() {
        assert_eq!(Impairments::threshold(0.0), 0);
        assert_eq!(Impairments::threshold(50.0), 1 << 31);
        assert_eq!(Impairments::threshold(1.0), 42_949_673);
        assert_eq!(Impairments::threshold(100.0), u32::MAX);
    }
}
