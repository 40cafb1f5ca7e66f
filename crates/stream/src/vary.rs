use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use linerate_wire::{Field, FieldValue, Layout, Modifier, VaryMode};

use crate::StreamError;

/// One variable field as a person writes it (`src-port:inc:1000-1999:2,mask=0xff`,
/// `dst-port:list:5000,5013,5020`): which field, how it moves, over which values in the field's
/// own notation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vary {
    pub field: Field,
    pub mode: VaryMode,
    pub start: FieldValue,
    pub end: FieldValue,
    pub step: u64,
    /// The field bits this variation owns; none: all of them.
    pub mask: Option<u64>,
    /// A list (`FIELD:list:A,B,…`): frame n carries `list[n % len]`, in any order and spacing.
    /// Empty for a counter or a random range. A list's `mode` is `Inc`, its `start`/`end` its
    /// first and last values and its `step` 1, so code that reads a range reads a list's bounds.
    pub list: Vec<FieldValue>,
}

/// Most values a list holds: each is a pre-built frame (`crate::CACHE_LIMIT`).
pub const LIST_LIMIT: usize = crate::CACHE_LIMIT as usize;

/// One variable field, checked against the stream's IP version, ready for the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarySpec {
    pub field: Field,
    /// A list's modifier counts its index (inc from 0, step 1, `count` its length): the plan
    /// looks each index up in `table` while it pre-builds frames, never on the hot path.
    pub modifier: Modifier,
    /// A list's values as the field's bits; None: the modifier's values are the field's.
    pub table: Option<Arc<[u64]>>,
}

/// Reads `FIELD:MODE:START-END[:STEP][,mask=M]`, e.g. `src-port:inc:1000-1999`,
/// `dst-ip:random:198.18.0.1-198.18.0.254`, `src-mac:dec:02:00:00:00:00:01-02:00:00:00:00:ff:2`,
/// or `FIELD:list:A,B,…[,mask=M]`, e.g. `dst-port:list:5000,5013,5020`.
/// Values use the field's own notation; ranges of MACs use `:` between octets.
impl FromStr for Vary {
    type Err = StreamError;

    fn from_str(input: &str) -> Result<Self, StreamError> {
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
        let field = Field::parse(parts.next().unwrap_or_default())?;
        let mode = match parts.next().ok_or_else(|| fail("missing MODE".into()))? {
            "inc" => VaryMode::Inc,
            "dec" => VaryMode::Dec,
            "random" | "rand" => VaryMode::Random,
            "list" => {
                let values = parts
                    .next()
                    .ok_or_else(|| fail("missing the values, A,B,…".into()))?;
                let list = values
                    .split(',')
                    .map(|v| FieldValue::parse(&field, v))
                    .collect::<Result<Vec<_>, _>>()?;
                let vary = Self::list(field, list, mask);
                vary.resolve(matches!(vary.start, FieldValue::Ipv6(_)))?;
                return Ok(vary);
            }
            other => {
                return Err(fail(format!(
                    "unknown mode '{other}', expected inc, dec, random or list"
                )));
            }
        };
        let range = parts
            .next()
            .ok_or_else(|| fail("missing START-END".into()))?;
        let ((start, end), step) = parse_range_step(&field, range)?;
        if start == end {
            return Err(fail(format!(
                "'{range}' is one value, which varies nothing: give START-END (or set the field to the value)"
            )));
        }
        let vary = Self {
            field,
            mode,
            start,
            end,
            step,
            mask,
            list: Vec::new(),
        };
        // Checked now in the IP version its addresses are written in; again in the stream's.
        vary.resolve(matches!(start, FieldValue::Ipv6(_)))?;
        Ok(vary)
    }
}

/// `START-END[:STEP]` or a single value. A trailing `:STEP` is ambiguous with MAC and IPv6
/// notation, so the whole text is tried as a range first and only then split at its last colon.
fn parse_range_step(
    field: &Field,
    range: &str,
) -> Result<((FieldValue, FieldValue), u64), StreamError> {
    let parse_range = |range: &str| -> Result<(FieldValue, FieldValue), StreamError> {
        match range.split_once('-') {
            Some((a, b)) => Ok((FieldValue::parse(field, a)?, FieldValue::parse(field, b)?)),
            None => {
                let v = FieldValue::parse(field, range)?;
                Ok((v, v))
            }
        }
    };
    match parse_range(range) {
        Ok(r) => Ok((r, 1)),
        Err(first) => match range.rsplit_once(':') {
            Some((r, step)) if parse_int(step).is_some() => {
                Ok((parse_range(r)?, parse_int(step).unwrap_or(1)))
            }
            _ => Err(first),
        },
    }
}

/// The form `from_str` reads back. An IPv6 end followed by a step is written in full (eight
/// groups), so that the step cannot be read as the address's last group.
impl fmt::Display for Vary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.list.is_empty() {
            let values: Vec<String> = self.list.iter().map(ToString::to_string).collect();
            write!(f, "{}:list:{}", self.field.name(), values.join(","))?;
            return match self.mask {
                Some(mask) => write!(f, ",mask={mask:#x}"),
                None => Ok(()),
            };
        }
        let mode = match self.mode {
            VaryMode::Inc => "inc",
            VaryMode::Dec => "dec",
            VaryMode::Random => "random",
        };
        write!(f, "{}:{mode}:{}", self.field.name(), self.start)?;
        match (self.end, self.step) {
            (end, 1) if end == self.start => {}
            (end, 1) => write!(f, "-{end}")?,
            (FieldValue::Ipv6(a), step) => {
                let groups: Vec<String> = a.segments().iter().map(|g| format!("{g:x}")).collect();
                write!(f, "-{}:{step}", groups.join(":"))?;
            }
            (end, step) => write!(f, "-{end}:{step}")?,
        }
        match self.mask {
            Some(mask) => write!(f, ",mask={mask:#x}"),
            None => Ok(()),
        }
    }
}

linerate_wire::serde_as_text!(Vary);

impl Vary {
    /// A list of values the field takes in turn (at least one; an empty list resolves to an
    /// error).
    pub fn list(field: Field, list: Vec<FieldValue>, mask: Option<u64>) -> Self {
        let first = list.first().copied().unwrap_or(FieldValue::Int(0));
        Self {
            field,
            mode: VaryMode::Inc,
            start: first,
            end: list.last().copied().unwrap_or(first),
            step: 1,
            mask,
            list,
        }
    }

    /// The modifier the plan applies to a frame of this IP version.
    pub fn resolve(&self, ipv6: bool) -> Result<VarySpec, StreamError> {
        let fail = |why: &str| StreamError::Vary {
            input: self.to_string(),
            why: why.to_owned(),
        };
        if !self.list.is_empty() {
            return self.resolve_list(ipv6);
        }
        let start = self.start.bits(&self.field, ipv6)?;
        let end = self.end.bits(&self.field, ipv6)?;
        if end < start {
            return Err(fail("END is below START"));
        }
        if self.step == 0 {
            return Err(fail("STEP must be at least 1"));
        }
        let count = ((end - start) / self.step)
            .checked_add(1)
            .ok_or_else(|| fail("the range holds more than 2^64 - 1 values"))?;
        let modifier = Modifier {
            mode: self.mode,
            start: if self.mode == VaryMode::Dec {
                start + (count - 1) * self.step
            } else {
                start
            },
            step: self.step,
            count,
            mask: self.mask.unwrap_or(u64::MAX),
        };
        Ok(VarySpec {
            field: self.field,
            modifier,
            table: None,
        })
    }

    fn resolve_list(&self, ipv6: bool) -> Result<VarySpec, StreamError> {
        let fail = |why: String| StreamError::Vary {
            input: self.to_string(),
            why,
        };
        if self.list.is_empty() {
            return Err(fail("a list needs at least one value".into()));
        }
        if self.list.len() > LIST_LIMIT {
            return Err(fail(format!(
                "{} values: a list holds at most {LIST_LIMIT} (each is a pre-built frame); use inc, dec or random for more",
                self.list.len()
            )));
        }
        let high = |v: &FieldValue| match v {
            FieldValue::Ipv6(a) => u128::from(*a) >> 64,
            _ => 0,
        };
        if self.list.iter().any(|v| high(v) != high(&self.list[0])) {
            return Err(fail(
                "the IPv6 addresses of a list may differ only in their low 64 bits (the upper half is the stream's address)".into(),
            ));
        }
        let table = self
            .list
            .iter()
            .map(|v| v.bits(&self.field, ipv6))
            .collect::<Result<Arc<[u64]>, _>>()?;
        Ok(VarySpec {
            field: self.field,
            modifier: Modifier {
                mode: VaryMode::Inc,
                start: 0,
                step: 1,
                count: table.len() as u64,
                mask: self.mask.unwrap_or(u64::MAX),
            },
            table: Some(table),
        })
    }
}

impl VarySpec {
    /// Reads the text form of a [`Vary`] for a stream of this IP version.
    pub fn parse(input: &str, ipv6: bool) -> Result<Self, StreamError> {
        input.parse::<Vary>()?.resolve(ipv6)
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
                    "the variable fields {} and {} both change byte {at}: each bit of a frame can \
                     follow one variable field only (vary each field once, or split it with mask=)",
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
    fn the_text_form_reads_back() {
        for text in [
            "src-port:inc:1000-1999",
            "dst-port:dec:10-20:5",
            "ip-id:random:0-65535,mask=0xfff",
            "src-mac:inc:02:00:00:00:00:01-02:00:00:00:00:10:2",
            "dst-ip:inc:2001:2::1-2001:2::9:2",
            "dst-ip:inc:10.0.0.1-10.0.0.9:2",
            "dst-port:list:5000,5013,4",
            "src-mac:list:02:00:00:00:00:09,02:00:00:00:00:01,mask=0xff",
            "dst-ip:list:2001:2::9,2001:2::1",
        ] {
            let vary: Vary = text.parse().unwrap();
            let again: Vary = vary.to_string().parse().unwrap();
            assert_eq!(again, vary, "{text} -> {vary}");
        }
        // The IPv6 end keeps its step apart: 2001:2::9 step 2, not 2001:2::9:2 step 1.
        let v: Vary = "dst-ip:inc:2001:2::1-2001:2::9:2".parse().unwrap();
        assert_eq!(v.step, 1);
        let stepped = Vary {
            step: 2,
            ..v.clone()
        };
        assert_eq!(stepped.to_string().parse::<Vary>().unwrap().step, 2);
        // The stream's IP version decides: an IPv6 range in an IPv4 stream is refused.
        assert!(v.resolve(false).is_err());
        assert!(v.resolve(true).is_ok());
    }

    #[test]
    fn a_list_resolves_to_an_index_and_its_table() {
        let v = VarySpec::parse("dst-port:list:5000,5013,4", false).unwrap();
        assert_eq!(
            (
                v.modifier.mode,
                v.modifier.start,
                v.modifier.step,
                v.modifier.count
            ),
            (VaryMode::Inc, 0, 1, 3)
        );
        assert_eq!(v.table.as_deref(), Some(&[5000, 5013, 4][..]));
        let err = VarySpec::parse("dst-ip:list:2001:2::1,2001:3::1", true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("low 64 bits"), "{err}");
        assert!(VarySpec::parse("dst-ip:list:10.0.0.9,10.0.0.1", true).is_err());
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
            "src-port:list:",
            "src-port:inc:1000",
            "ttl:inc:7-7",
            "src-port:list:1,70000",
            "src-port:list",
        ] {
            let err = VarySpec::parse(bad, false).unwrap_err().to_string();
            assert!(!err.is_empty(), "{bad}");
        }
        let err = VarySpec::parse("src-port:up:1-2", false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("src-port:up:1-2") && err.contains("inc, dec, random or list"),
            "{err}"
        );
    }
}
