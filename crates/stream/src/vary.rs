use linerate_wire::{Field, Layout, Modifier, VaryMode, parse_value};

use crate::StreamError;

/// One variable field as the user asked for it: which field, how it moves, over what range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarySpec {
    pub field: Field,
    pub modifier: Modifier,
}

impl VarySpec {
    /// Reads `FIELD:MODE:START-END[:STEP][,mask=M]`, e.g. `src-port:inc:1000-1999`,
    /// `dst-ip:random:198.18.0.1-198.18.0.254`, `src-mac:dec:02:00:00:00:00:01-02:00:00:00:00:ff:2`.
    /// Values use the field's own notation; ranges of MACs use `:` between octets.
    pub fn parse(input: &str, ipv6: bool) -> Result<Self, StreamError> {
        let fail = |why: String| StreamError::Vary {
            input: input.to_owned(),
            why,
        };
        let (body, mask) = match input.split_once(",mask=") {
            Some((body, mask)) => (
                body,
                Some(
                    parse_int(mask)
                        .ok_or_else(|| fail(format!("mask '{mask}' is not a number")))?,
                ),
            ),
            None => (input, None),
        };
        let mut parts = body.splitn(3, ':');
        let field = parts.next().unwrap_or_default();
        let mode = parts.next().ok_or_else(|| fail("missing MODE".into()))?;
        let range = parts
            .next()
            .ok_or_else(|| fail("missing START-END".into()))?;
        let field = Field::parse(field)?;
        let mode = match mode {
            "inc" => VaryMode::Inc,
            "dec" => VaryMode::Dec,
            "random" | "rand" => VaryMode::Random,
            other => {
                return Err(fail(format!(
                    "unknown mode '{other}', expected inc, dec or random"
                )));
            }
        };
        let parse_range = |range: &str| -> Result<(u64, u64), StreamError> {
            match range.split_once('-') {
                Some((a, b)) => Ok((parse_value(&field, a, ipv6)?, parse_value(&field, b, ipv6)?)),
                None => {
                    let v = parse_value(&field, range, ipv6)?;
                    Ok((v, v))
                }
            }
        };
        // A trailing `:STEP` is ambiguous with MAC and IPv6 notation, so the whole text is tried
        // as a range first and only then split at its last colon.
        let ((start, end), step) = match parse_range(range) {
            Ok(r) => (r, 1),
            Err(first) => match range.rsplit_once(':') {
                Some((r, step)) if parse_int(step).is_some() => {
                    (parse_range(r)?, parse_int(step).unwrap_or(1))
                }
                _ => return Err(first),
            },
        };
        if end < start {
            return Err(fail("END is below START".into()));
        }
        if step == 0 {
            return Err(fail("STEP must be at least 1".into()));
        }
        let count = ((end - start) / step)
            .checked_add(1)
            .ok_or_else(|| fail("the range holds more than 2^64 - 1 values".into()))?;
        let modifier = Modifier {
            mode,
            start: if mode == VaryMode::Dec {
                start + (count - 1) * step
            } else {
                start
            },
            step,
            count,
            mask: mask.unwrap_or(u64::MAX),
        };
        Ok(Self { field, modifier })
    }
}

/// Refuses two variable fields that change the same bits of a frame of `layout`: the patch
/// applied second would silently undo the first. Fields that are not in the frame are left to
/// the plan, which says why.
pub(crate) fn check_overlaps(vary: &[VarySpec], layout: &Layout) -> Result<(), String> {
    // Per absolute byte, which bits each field changes (the field's bits under its mask).
    let bytes = |v: &VarySpec| -> Option<Vec<(usize, u8)>> {
        let loc = v.field.locate(layout).ok()?;
        let bits = loc.bits & v.modifier.mask;
        let width = usize::from(loc.width);
        Some(
            (0..width)
                .map(|i| {
                    let byte = (bits >> (8 * (width - 1 - i))) as u8;
                    (usize::from(loc.offset) + i, byte)
                })
                .filter(|&(_, byte)| byte != 0)
                .collect(),
        )
    };
    let located: Vec<_> = vary.iter().map(|v| (v, bytes(v))).collect();
    for (i, (a, a_bytes)) in located.iter().enumerate() {
        for (b, b_bytes) in &located[i + 1..] {
            let (Some(a_bytes), Some(b_bytes)) = (a_bytes, b_bytes) else {
                continue;
            };
            let shared = a_bytes
                .iter()
                .find(|(at, bits)| b_bytes.iter().any(|(bt, bb)| bt == at && bb & bits != 0));
            if let Some((at, _)) = shared {
                return Err(format!(
                    "--vary {} and --vary {} both change byte {at}: each bit of a frame can follow one \
                     variable field only (vary each field once, or split it with mask=)",
                    a.field.name(),
                    b.field.name()
                ));
            }
        }
    }
    Ok(())
}

fn parse_int(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_with_and_without_step() {
        let v = VarySpec::parse("src-port:inc:1000-1999", false).unwrap();
        assert_eq!(v.field, Field::SrcPort);
        assert_eq!(
            (v.modifier.start, v.modifier.step, v.modifier.count),
            (1000, 1, 1000)
        );
        let v = VarySpec::parse("dst-port:dec:10-20:5", false).unwrap();
        assert_eq!(
            (v.modifier.mode, v.modifier.start, v.modifier.count),
            (VaryMode::Dec, 20, 3)
        );
    }

    #[test]
    fn addresses_and_mask() {
        let v = VarySpec::parse("dst-ip:random:198.18.0.1-198.18.0.254", false).unwrap();
        assert_eq!(
            v.modifier.start,
            u32::from(std::net::Ipv4Addr::new(198, 18, 0, 1)) as u64
        );
        assert_eq!(v.modifier.count, 254);
        let v =
            VarySpec::parse("src-mac:inc:02:00:00:00:00:01-02:00:00:00:00:10:2", false).unwrap();
        assert_eq!(
            (v.modifier.start, v.modifier.step, v.modifier.count),
            (0x0200_0000_0001, 2, 8)
        );
        let v = VarySpec::parse("ip-id:random:0-65535,mask=0x0fff", false).unwrap();
        assert_eq!(v.modifier.mask, 0x0fff);
    }

    #[test]
    fn bad_input_names_the_problem() {
        for bad in [
            "src-port",
            "src-port:inc",
            "src-port:up:1-2",
            "src-port:inc:2-1",
            "src-port:inc:1-70000",
            "colour:inc:1-2",
            "src-ip:inc:1.2.3-1.2.3.4",
            "src-port:inc:1-9:0",
        ] {
            let err = VarySpec::parse(bad, false).unwrap_err().to_string();
            assert!(!err.is_empty(), "{bad}");
        }
        let err = VarySpec::parse("src-port:up:1-2", false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("src-port:up:1-2") && err.contains("inc, dec or random"),
            "{err}"
        );
    }
}
