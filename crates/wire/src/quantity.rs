//! One grammar per kind of quantity a person types — duration, bandwidth, rate prefix — read
//! here for every command, the stream file and the lab's impairments, so that a unit means the
//! same thing everywhere. `m` never means minutes: a duration refuses it (write `ms` or `min`),
//! and in a rate or a bandwidth, where milli means nothing, `m` is `M`, mega.
//!
//! | quantity  | form                    | units                                          |
//! |-----------|-------------------------|------------------------------------------------|
//! | duration  | `NUMBER[UNIT]`          | `ns`, `us`/`µs`, `ms`, `s` (bare: seconds), `min`, `h` |
//! | bandwidth | `NUMBER[PREFIX][bps]`   | prefixes `k`, `M`, `G` (any case); `bps`, `bit`, `bit/s`, `b/s`, `b` |
//! | frame rate| `NUMBER[PREFIX][pps]`   | the same prefixes                              |
//! | count     | `NUMBER[PREFIX]`        | the same prefixes: `1000000`, `1e6`, `1M`, `2.5k` |

use std::time::Duration;

/// A quantity that is not written in its grammar; the message names the text and the form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{input}' is not {what}: {why}")]
pub struct QuantityError {
    pub input: String,
    pub what: &'static str,
    pub why: String,
}

/// Splits `12.5ms` into the number and what follows it (trimmed).
pub fn split(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let b = t.as_bytes();
    let digits = |mut i: usize| {
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        i
    };
    let mut end = digits(usize::from(matches!(b.first(), Some(b'+' | b'-'))));
    // An exponent only when digits follow it: `5e` is 5 and the unit `e`.
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(end + 1), Some(b'+' | b'-')));
        if b.get(end + 1 + sign).is_some_and(u8::is_ascii_digit) {
            end = digits(end + 1 + sign);
        }
    }
    let number: f64 = t[..end].parse().ok()?;
    Some((number, t[end..].trim()))
}

/// The factor of a decimal prefix: none, `k`, `M` or `G` (any case: milli-bits and milli-frames
/// mean nothing, so `m` is mega here).
pub fn prefix(text: &str) -> Option<f64> {
    Some(match text {
        "" => 1.0,
        "k" | "K" => 1e3,
        "m" | "M" => 1e6,
        "g" | "G" => 1e9,
        _ => return None,
    })
}

/// `v` with the largest decimal prefix that writes it exactly (`1.5M`, `200k`, `1500`).
pub fn with_prefix(v: f64) -> String {
    [(1e9, "G"), (1e6, "M"), (1e3, "k")]
        .iter()
        .find(|(p, _)| v >= *p && (v / p) * p == v)
        .map_or_else(|| v.to_string(), |(p, s)| format!("{}{s}", v / p))
}

/// Reads a count of things (frames, laps): a whole number at least 1, in any form a number
/// takes (`1000000`, `1e6`) and with a decimal prefix (`1M`, `2.5k`).
pub fn parse_count(text: &str) -> Result<u64, QuantityError> {
    let fail = |why: &str| QuantityError {
        input: text.to_owned(),
        what: "a count",
        why: why.to_owned(),
    };
    if let Ok(n) = text.trim().parse::<u64>() {
        return if n >= 1 {
            Ok(n)
        } else {
            Err(fail("it must be at least 1"))
        };
    }
    let (number, rest) =
        split(text).ok_or_else(|| fail("give a number like 1000000, 1e6 or 1M"))?;
    let factor = prefix(rest).ok_or_else(|| fail("the prefixes are k, M and G"))?;
    let n = number * factor;
    if !(1.0..=u64::MAX as f64).contains(&n) || n.fract() != 0.0 {
        return Err(fail("it must be a whole number, at least 1"));
    }
    Ok(n as u64)
}

/// Reads a duration in seconds: `500ns`, `250us`, `10ms`, `1.5s` or `1.5`, `2min`, `1h`; a
/// finite number at least 0.
pub fn parse_seconds(text: &str) -> Result<f64, QuantityError> {
    let fail = |why: &str| QuantityError {
        input: text.to_owned(),
        what: "a duration",
        why: why.to_owned(),
    };
    let (value, unit) =
        split(text).ok_or_else(|| fail("expected a number and a unit, e.g. 10s, 500ms, 2min"))?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        "m" => {
            return Err(fail(
                "'m' could be minutes or milliseconds: write min or ms",
            ));
        }
        _ => return Err(fail("unknown unit (use ns, us, ms, s, min or h)")),
    };
    let seconds = value * scale;
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(fail("a duration is a number at least 0"));
    }
    Ok(seconds)
}

/// [`parse_seconds`] as a `Duration` of whole nanoseconds, rounded (0.00025 s is 250 µs).
pub fn parse_duration(text: &str) -> Result<Duration, QuantityError> {
    let nanos = (parse_seconds(text)? * 1e9).round();
    if nanos >= u64::MAX as f64 {
        return Err(QuantityError {
            input: text.to_owned(),
            what: "a duration",
            why: "longer than 584 years".into(),
        });
    }
    Ok(Duration::from_nanos(nanos as u64))
}

/// Reads a bandwidth in bits per second: `100M`, `100Mbps`, `100Mbit`, `1G`, `10Gb/s`, `500k`.
pub fn parse_bandwidth(text: &str) -> Result<f64, QuantityError> {
    let fail = |why: &str| QuantityError {
        input: text.to_owned(),
        what: "a bandwidth",
        why: why.to_owned(),
    };
    let (value, unit) = split(text).ok_or_else(|| fail("expected a number, e.g. 100M or 1Gbps"))?;
    let lower = unit.to_ascii_lowercase();
    let bare = ["bit/s", "b/s", "bps", "bit", "be", "b"]
        .iter()
        .find_map(|suffix| lower.strip_suffix(suffix))
        .unwrap_or(&lower);
    let scale = prefix(bare).ok_or_else(|| fail("unknown unit (use k, M or G, then bps)"))?;
    let bps = value * scale;
    if !bps.is_finite() || bps < 0.0 {
        return Err(fail("a bandwidth is a number at least 0"));
    }
    Ok(bps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_exponents_and_prefixes_and_stay_whole() {
        for (text, want) in [
            ("1000000", 1_000_000),
            ("1e6", 1_000_000),
            ("1M", 1_000_000),
            ("2.5k", 2_500),
            ("18446744073709551615", u64::MAX),
        ] {
            assert_eq!(parse_count(text), Ok(want), "{text}");
        }
        for bad in ["0", "1.5", "1e-3", "-3", "10x", "", "1 e6"] {
            let err = parse_count(bad).unwrap_err().to_string();
            assert!(err.contains("a count"), "{bad}: {err}");
        }
    }

    #[test]
    fn durations_take_one_set_of_units() {
        for (text, want) in [
            ("10s", Duration::from_secs(10)),
            ("1.5", Duration::from_millis(1500)),
            ("500ms", Duration::from_millis(500)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("500ns", Duration::from_nanos(500)),
            (" 2min ", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            ("0", Duration::ZERO),
        ] {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
        let err = parse_duration("2m").unwrap_err().to_string();
        assert!(err.contains("'2m'") && err.contains("min or ms"), "{err}");
        for bad in ["", "s", "1d", "-1s", "1e400", "..", "ten"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bandwidths_take_decimal_prefixes_and_bit_units() {
        for (text, want) in [
            ("100M", 1e8),
            ("100m", 1e8),
            ("100Mbps", 1e8),
            ("100Mbit", 1e8),
            ("10Gb/s", 1e10),
            ("10GbE", 1e10),
            ("2.5G", 2.5e9),
            ("500k", 5e5),
            ("8000", 8e3),
        ] {
            assert_eq!(parse_bandwidth(text), Ok(want), "{text}");
        }
        for bad in ["", "fast", "10T", "-1M", "1e400G"] {
            assert!(parse_bandwidth(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prefixes_write_what_they_read() {
        for v in [1.5e6, 2e5, 1500.0, 0.5, 1e9, 123_456_789.0, 1e-300] {
            let text = with_prefix(v);
            let (n, unit) = split(&text).unwrap();
            assert_eq!(n * prefix(unit).unwrap(), v, "{text}");
        }
        assert_eq!(with_prefix(1.5e6), "1.5M");
    }

    #[test]
    fn numbers_split_from_their_unit() {
        assert_eq!(split("1e3pps"), Some((1e3, "pps")));
        assert_eq!(split("1e-300"), Some((1e-300, "")));
        assert_eq!(split("-2.5E+2ms"), Some((-250.0, "ms")));
        assert_eq!(split("2.5 G"), Some((2.5, "G")));
        assert_eq!(split("5e"), Some((5.0, "e")));
        assert_eq!(split("ms"), None);
    }
}
