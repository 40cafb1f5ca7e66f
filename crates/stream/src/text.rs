//! Serde for the spec's optional values: absent or an empty string (what a file wrote for "the
//! port decides" before these were typed) is none, anything else is read by the value's own
//! grammar, and a bad value's message names its text.

use std::fmt::Display;
use std::net::IpAddr;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;

fn serialize<T: Display, S: Serializer>(value: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

struct Optional<T>(fn(&str) -> Result<T, String>);

impl<'de, T> Visitor<'de> for Optional<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<T>, E> {
        match v.trim() {
            "" => Ok(None),
            text => (self.0)(text).map(Some).map_err(E::custom),
        }
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        d.deserialize_str(self)
    }
}

/// `Option<T>` for a `T` with `FromStr` and `Display`.
pub mod optional {
    use super::*;

    pub fn serialize<T: Display, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        super::serialize(v, s)
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
    where
        T: FromStr<Err: Display>,
        D: Deserializer<'de>,
    {
        d.deserialize_option(Optional(|text: &str| {
            text.parse::<T>().map_err(|e| e.to_string())
        }))
    }
}

/// `Option<IpAddr>`, whose std error does not say what was read.
pub mod optional_ip {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<IpAddr>, s: S) -> Result<S::Ok, S::Error> {
        super::serialize(v, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<IpAddr>, D::Error> {
        d.deserialize_option(Optional(|text: &str| {
            text.parse().map_err(|_| {
                format!("'{text}' is not an IP address (forms: 198.18.0.1, 2001:2::1)")
            })
        }))
    }
}

/// A count (frames, loops, a burst's frames) as the CLI reads it: an integer, or text in
/// `linerate_wire::quantity::parse_count`'s grammar (`1000`, `1e6`, `1M`); TOML's `1e3` is
/// a float and is taken when whole. Written back as an integer.
struct Count;

impl<'de> Visitor<'de> for Count {
    type Value = u64;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a count: 1000, \"1e6\" or \"1M\"")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::custom(format!("{v}: a count is at least 0")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        if v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64 {
            Ok(v as u64)
        } else {
            Err(E::custom(format!("{v}: a count is a whole number")))
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        linerate_wire::quantity::parse_count(v).map_err(E::custom)
    }
}

/// `u64` counts in `Count`'s grammar.
pub mod count {
    use super::*;

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        d.deserialize_any(Count)
    }
}

/// `Option<u64>` counts in `Count`'s grammar; absent is none.
pub mod optional_count {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(n) => s.serialize_u64(*n),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        d.deserialize_option(OptionalCount)
    }

    /// `null` (JSON, the agents' wire) is none; anything else a count.
    struct OptionalCount;

    impl<'de> Visitor<'de> for OptionalCount {
        type Value = Option<u64>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            Count.expecting(f)
        }

        fn visit_none<E: de::Error>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
            d.deserialize_any(Count).map(Some)
        }
    }
}
