//! The number of flows a config body holds, counted before it is parsed into values: a server
//! refuses a config of too many flows before it costs their memory.

/// The length of the body's `flows` list, each element skipped as it is read (0 when the body
/// is not a config: the typed parse then refuses it, with its path).
pub fn count_flows(body: &[u8]) -> usize {
    serde_json::from_slice::<Shape>(body).map_or(0, |s| s.flows.0)
}

/// Refuses, by counting before any flow is built, a config of more flows than one plan holds
/// (each flow costs the receive side and the plan their share whatever its frames; the frames'
/// own bytes are bounded when the plan is compiled, before any is built).
pub fn check_flow_count(body: &[u8]) -> Result<(), crate::Refusals> {
    let flows = count_flows(body);
    let most = linerate_stream::MAX_STREAMS;
    if flows > most {
        let why = format!("{flows} flows, over the {most} one config holds");
        return Err(crate::Refusals::one("flows", why));
    }
    Ok(())
}

/// A config read only for its number of flows.
#[derive(serde::Deserialize)]
struct Shape {
    #[serde(default)]
    flows: Counted,
}

/// The length of a JSON list, each element skipped as it is read.
#[derive(Default)]
struct Counted(usize);

impl<'de> serde::Deserialize<'de> for Counted {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Count;
        impl<'de> serde::de::Visitor<'de> for Count {
            type Value = Counted;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Counted, A::Error> {
                let mut n = 0;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Counted(n))
            }
        }
        d.deserialize_seq(Count)
    }
}

#[cfg(test)]
mod tests {
    use super::count_flows;

    #[test]
    fn flows_are_counted_without_being_read_and_a_non_config_counts_none() {
        assert_eq!(
            count_flows(br#"{"flows": [{"name": "a"}, {"x": [1, 2]}, 3]}"#),
            3
        );
        assert_eq!(count_flows(br#"{"ports": []}"#), 0);
        assert_eq!(count_flows(b"not json"), 0);
        assert_eq!(count_flows(br#"{"flows": {"a": 1}}"#), 0);
    }
}
