use linerate_wire::quantity;
use linerate_wire::units::wire_bytes;

use crate::StreamError;

/// How fast a stream goes, in the unit the user thinks in. Bit rates count frame bytes with
/// their FCS (L2) or also the 20 bytes of preamble, SFD and gap each frame costs on the wire (L1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    Max,
    /// Frames per second.
    Pps(f64),
    /// Bits per second of frame bytes (FCS included).
    L2(f64),
    /// Bits per second on the wire (frame + 20 bytes).
    L1(f64),
    /// Percent of the link's line rate (an L1 rate).
    Percent(f64),
}

/// One picosecond-based clock for every schedule: u64 picoseconds last 213 days.
pub const PS_PER_S: f64 = 1e12;

impl Rate {
    /// Reads `max`, `1.5M`/`200k`/`1000`/`1.5Mpps` (frames/s), `500Mbps` (L2), `1Gbps-l1` (L1),
    /// `50%` (of line rate).
    pub fn parse(input: &str) -> Result<Self, StreamError> {
        let fail = |why: &str| StreamError::Rate {
            input: input.to_owned(),
            why: why.to_owned(),
        };
        let text = input.trim();
        if text.eq_ignore_ascii_case("max") {
            return Ok(Self::Max);
        }
        let (value, unit) = quantity::split(text).ok_or_else(|| fail("not a number"))?;
        if !value.is_finite() || value <= 0.0 {
            return Err(fail("a rate must be more than zero"));
        }
        let lower = unit.to_ascii_lowercase();
        let (prefix, kind) = if let Some(p) = lower.strip_suffix("bps-l1") {
            (p, 'l')
        } else if let Some(p) = lower.strip_suffix("bps") {
            (p, 'b')
        } else if let Some(p) = lower.strip_suffix("pps") {
            (p, 'p')
        } else if lower == "%" {
            if value > 100.0 {
                return Err(fail("more than 100 % of line rate"));
            }
            return Ok(Self::Percent(value));
        } else {
            (lower.as_str(), 'p')
        };
        let scale = quantity::prefix(prefix).ok_or_else(|| fail("unknown unit"))?;
        let v = value * scale;
        Ok(match kind {
            'l' => Self::L1(v),
            'b' => Self::L2(v),
            _ => Self::Pps(v),
        })
    }

    /// What every rate must hold, however it was made (text, or an OTG document).
    pub fn check(&self) -> Result<(), &'static str> {
        match *self {
            Self::Max => Ok(()),
            Self::Pps(v) | Self::L2(v) | Self::L1(v) | Self::Percent(v)
                if !(v.is_finite() && v > 0.0) =>
            {
                Err("a rate must be more than zero")
            }
            Self::Percent(p) if p > 100.0 => Err("more than 100 % of line rate"),
            _ => Ok(()),
        }
    }

    /// Time one frame of `size` bytes (FCS included) takes at this rate, in picoseconds; 0 for max.
    pub fn interval_ps(&self, size: usize, link_mbps: Option<u64>) -> Result<f64, String> {
        Ok(match *self {
            Self::Max => 0.0,
            Self::Pps(r) => PS_PER_S / r,
            Self::L2(b) => size as f64 * 8.0 * PS_PER_S / b,
            Self::L1(b) => wire_bytes(size) as f64 * 8.0 * PS_PER_S / b,
            Self::Percent(p) => {
                let mbps = link_mbps.ok_or("a rate in % needs the link speed, and this port does not know it: give the link speed (tx: --link-speed 10G; OTG: layer1.speed), or a rate in pps or bps")?;
                wire_bytes(size) as f64 * 8.0 * PS_PER_S / (mbps as f64 * 1e6 * p / 100.0)
            }
        })
    }
}

impl std::str::FromStr for Rate {
    type Err = StreamError;

    fn from_str(s: &str) -> Result<Self, StreamError> {
        Self::parse(s)
    }
}

/// The form `parse` reads back: `max`, `1.5M` (frames/s), `500Mbps`, `1Gbps-l1`, `50%`.
impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::Max => f.write_str("max"),
            Self::Pps(v) => f.write_str(&quantity::with_prefix(v)),
            Self::L2(v) => write!(f, "{}bps", quantity::with_prefix(v)),
            Self::L1(v) => write!(f, "{}bps-l1", quantity::with_prefix(v)),
            Self::Percent(v) => write!(f, "{v}%"),
        }
    }
}

linerate_wire::serde_as_text!(Rate);

/// Reads a run's duration in the one duration grammar ([`quantity::parse_duration`]: `10s`,
/// `500ms`, `2min`, `1h` or a bare number of seconds): more than zero and at most a year.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    const YEAR: f64 = 365.0 * 24.0 * 3600.0;
    let seconds = quantity::parse_seconds(text).map_err(|e| e.to_string())?;
    let text = text.trim();
    if seconds > YEAR {
        return Err(format!("'{text}' is longer than a year"));
    }
    let duration = quantity::parse_duration(text).map_err(|e| e.to_string())?;
    if duration.is_zero() {
        return Err(format!(
            "'{text}' must be more than zero (and at least a nanosecond)"
        ));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_their_units_and_refuse_the_rest() {
        use std::time::Duration;
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration(" 2min "), Ok(Duration::from_secs(120)));
        // `m` alone is not a unit anywhere: minutes here, mega in a rate, milli elsewhere.
        assert!(parse_duration("2m").unwrap_err().contains("min or ms"));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        // "0.0000000001" was found by the cli_strings fuzz target: a zero duration, accepted.
        for bad in [
            "",
            "0s",
            "-1s",
            "1d",
            "s",
            "400d",
            "1e400",
            "..",
            "0.0000000001",
            "1e-10",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_unit() {
        assert_eq!(Rate::parse("max").unwrap(), Rate::Max);
        assert_eq!(Rate::parse("1.5M").unwrap(), Rate::Pps(1.5e6));
        assert_eq!(Rate::parse("200k").unwrap(), Rate::Pps(2e5));
        assert_eq!(Rate::parse("1000").unwrap(), Rate::Pps(1000.0));
        assert_eq!(Rate::parse("2Mpps").unwrap(), Rate::Pps(2e6));
        assert_eq!(Rate::parse("500Mbps").unwrap(), Rate::L2(5e8));
        assert_eq!(Rate::parse("1Gbps-l1").unwrap(), Rate::L1(1e9));
        assert_eq!(Rate::parse("50%").unwrap(), Rate::Percent(50.0));
    }

    #[test]
    fn a_rate_writes_what_it_reads() {
        for text in [
            "max", "1.5M", "200k", "1k", "1.5k", "500Mbps", "1Gbps-l1", "50%", "0.5",
        ] {
            let rate = Rate::parse(text).unwrap();
            assert_eq!(rate.to_string(), text);
            assert_eq!(Rate::parse(&rate.to_string()).unwrap(), rate);
        }
    }

    #[test]
    fn intervals() {
        // 64 B at 1 Gbit/s on the wire: 84 bytes = 672 ns.
        assert_eq!(Rate::L1(1e9).interval_ps(64, None).unwrap(), 672_000.0);
        assert_eq!(
            Rate::Percent(100.0).interval_ps(64, Some(10_000)).unwrap(),
            67_200.0
        );
        assert_eq!(Rate::L2(512e6).interval_ps(64, None).unwrap(), 1_000_000.0);
        assert_eq!(Rate::Pps(1e6).interval_ps(1518, None).unwrap(), 1_000_000.0);
        assert!(Rate::Percent(50.0).interval_ps(64, None).is_err());
    }

    #[test]
    fn bad_rates() {
        for bad in ["0", "-5k", "fast", "10Xbps", "150%", "nan"] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
    }
}
