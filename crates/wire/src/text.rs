//! Values that people write as text (a MAC, TCP flags, a payload, a rate…) keep one spelling:
//! their `FromStr` reads it, their `Display` writes it back, and serde goes through both, so a
//! TOML file, a CLI flag and a JSON document all read the same grammar.

/// Implements `Serialize` and `Deserialize` for a type through its `Display` and `FromStr`; a
/// parse error becomes the deserializer's message, which names the bad text.
#[macro_export]
macro_rules! serde_as_text {
    ($($ty:ty),+ $(,)?) => {$(
        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Text;
                impl ::serde::de::Visitor<'_> for Text {
                    type Value = $ty;
                    fn expecting(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        f.write_str("a string")
                    }
                    fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<$ty, E> {
                        v.parse().map_err(E::custom)
                    }
                }
                d.deserialize_str(Text)
            }
        }
    )+};
}
