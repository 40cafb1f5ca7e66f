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
