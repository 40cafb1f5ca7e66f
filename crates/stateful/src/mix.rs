//! A client's mix of HTTP connections (TRex ASTF's templates, NetSecOPEN's object sizes): each
//! kind a response size and a number of requests, and a share of the connections by its
//! weight, taken in a fixed interleaved order so that any stretch of the run carries the mix.

use serde::Serialize;

use crate::StatefulError;

/// Kinds of connection in a mix, at most.
pub const MAX_TEMPLATES: usize = 64;

/// A kind's weight, at most: the order's cycle is the weights' sum long.
pub const MAX_WEIGHT: u32 = 1000;

/// One kind of connection: `requests` HTTP/1.1 GETs of `response_bytes` each (keep-alive
/// between them, the last asking the server to close), `weight` shares of the connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HttpTemplate {
    pub response_bytes: u64,
    pub requests: u32,
    pub weight: u32,
}

impl HttpTemplate {
    /// One kind alone: every connection.
    pub fn only(response_bytes: u64, requests: u32) -> HttpTemplate {
        HttpTemplate {
            response_bytes,
            requests,
            weight: 1,
        }
    }

    /// How reports name it: `4096x1`, bytes and requests.
    pub fn name(&self) -> String {
        format!("{}x{}", self.response_bytes, self.requests)
    }
}

/// Checks a mix: one kind at least, [`MAX_TEMPLATES`] at most, each with a request and a
/// weight of 1 to [`MAX_WEIGHT`].
pub(crate) fn validate(mix: &[HttpTemplate]) -> Result<(), StatefulError> {
    let usage = |m: String| Err(StatefulError::Usage(m));
    if mix.is_empty() || mix.len() > MAX_TEMPLATES {
        return usage(format!(
            "a mix of {} kinds of connection: give 1 to {MAX_TEMPLATES}",
            mix.len()
        ));
    }
    for t in mix {
        if t.requests == 0 {
            return usage(format!("{}: requests per connection: at least 1", t.name()));
        }
        if t.weight == 0 || t.weight > MAX_WEIGHT {
            return usage(format!(
                "{}: weight {}: give 1 to {MAX_WEIGHT}",
                t.name(),
                t.weight
            ));
        }
    }
    Ok(())
}

/// The kind of each connection in turn, a cycle as long as the weights' sum: smooth weighted
/// round robin (nginx's upstream balancing), so that a kind of weight 3 beside one of weight 1
/// goes 0 0 1 0, not 0 0 0 1, and a run cut anywhere is within one cycle of its shares.
pub(crate) fn order(mix: &[HttpTemplate]) -> Vec<u16> {
    let total: i64 = mix.iter().map(|t| i64::from(t.weight)).sum();
    let mut current = vec![0i64; mix.len()];
    (0..total)
        .map(|_| {
            for (c, t) in current.iter_mut().zip(mix) {
                *c += i64::from(t.weight);
            }
            // The first of the largest: ties go to the kind given first.
            let (best, _) = current
                .iter()
                .enumerate()
                .fold(
                    (0, i64::MIN),
                    |(bi, bv), (i, &v)| {
                        if v > bv { (i, v) } else { (bi, bv) }
                    },
                );
            current[best] -= total;
            best as u16
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(weight: u32) -> HttpTemplate {
        HttpTemplate {
            response_bytes: 1024,
            requests: 1,
            weight,
        }
    }

    #[test]
    fn the_order_interleaves_the_kinds_by_their_weights() {
        assert_eq!(order(&[t(1)]), [0]);
        assert_eq!(order(&[t(3), t(1)]), [0, 0, 1, 0]);
        assert_eq!(order(&[t(5), t(1), t(1)]), [0, 0, 1, 0, 2, 0, 0]);
        // Each kind its weight's count in a cycle.
        let mix = [t(7), t(2), t(1), t(10)];
        let cycle = order(&mix);
        assert_eq!(cycle.len(), 20);
        for (k, kind) in mix.iter().enumerate() {
            let n = cycle.iter().filter(|&&c| c == k as u16).count();
            assert_eq!(n, kind.weight as usize, "kind {k} in {cycle:?}");
        }
    }

    #[test]
    fn a_mix_without_kinds_requests_or_weights_is_refused() {
        assert!(validate(&[]).is_err());
        assert!(validate(&vec![t(1); MAX_TEMPLATES + 1]).is_err());
        assert!(validate(&[t(0)]).is_err());
        assert!(validate(&[t(MAX_WEIGHT + 1)]).is_err());
        let none = HttpTemplate {
            requests: 0,
            ..t(1)
        };
        let why = validate(&[t(1), none]).unwrap_err().to_string();
        assert!(
            why.contains("1024x0") && why.contains("at least 1"),
            "{why}"
        );
        validate(&vec![t(MAX_WEIGHT); MAX_TEMPLATES]).unwrap();
    }
}
