//! The `Pattern` node every header field shares (value, values, increment, decrement, random,
//! auto), and how one lands on the stream: a value of the template, and for a moving field a
//! typed [`Vary`] checked to mean exactly what the pattern asked.

use std::net::{Ipv4Addr, Ipv6Addr};

use linerate_stream::{StreamSpec, Vary};
use linerate_wire::{Field, FieldValue, Mac, VaryMode};
use serde_json::Value;

use super::{Cx, int};
use crate::model::*;

/// How a field's pattern resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Pat {
    /// Not given, or `auto`: linerate's default.
    Unset,
    Value(u128),
    /// Frame n carries `first` moved n steps (mod count) in `mode`.
    Vary {
        mode: VaryMode,
        lo: u128,
        hi: u128,
        step: u128,
    },
    /// Frame n carries `values[n % len]`: a `values` list that is not evenly spaced.
    List(Vec<u128>),
}

impl Pat {
    /// Something other than linerate's default was asked.
    pub(super) fn is_set(&self) -> bool {
        *self != Pat::Unset
    }

    /// The field changes from frame to frame.
    pub(super) fn moves(&self) -> bool {
        matches!(self, Pat::Vary { .. } | Pat::List(_))
    }
}

/// What a field's values are; an integer field carries its largest value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Int(u128),
    Mac,
    Ipv4,
    Ipv6,
}

impl Kind {
    fn parse(self, v: &Value) -> Option<u128> {
        match self {
            Kind::Int(max) => int(v).filter(|&n| n <= max),
            Kind::Mac => {
                let s = v.as_str()?;
                let parts: Vec<&str> = s.split([':', '-']).collect();
                if parts.len() != 6 {
                    return None;
                }
                parts.iter().try_fold(0u128, |acc, p| {
                    (p.len() <= 2)
                        .then(|| u8::from_str_radix(p, 16).ok())
                        .flatten()
                        .map(|b| (acc << 8) | u128::from(b))
                })
            }
            Kind::Ipv4 => Some(u128::from(u32::from(v.as_str()?.parse::<Ipv4Addr>().ok()?))),
            Kind::Ipv6 => Some(u128::from(v.as_str()?.parse::<Ipv6Addr>().ok()?)),
        }
    }

    fn max(self) -> u128 {
        match self {
            Kind::Int(max) => max,
            Kind::Mac => (1 << 48) - 1,
            Kind::Ipv4 => u128::from(u32::MAX),
            Kind::Ipv6 => u128::MAX,
        }
    }

    /// A value of this kind (at most [`Kind::max`]) as the field's own value.
    fn value(self, v: u128) -> FieldValue {
        match self {
            Kind::Int(_) => FieldValue::Int(v as u64),
            Kind::Mac => FieldValue::Mac(mac(v).octets()),
            Kind::Ipv4 => FieldValue::Ipv4(Ipv4Addr::from(v as u32)),
            Kind::Ipv6 => FieldValue::Ipv6(Ipv6Addr::from(v)),
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Kind::Int(_) => "an integer in range",
            Kind::Mac => "a MAC address like 00:11:22:33:44:55",
            Kind::Ipv4 => "an IPv4 address like 10.1.1.1",
            Kind::Ipv6 => "an IPv6 address like 2001:db8::1",
        }
    }
}

/// The low 48 bits of a MAC-kind value.
pub(super) fn mac(v: u128) -> Mac {
    let b = (v as u64).to_be_bytes();
    Mac([b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// A header field that a pattern sets: what its values are, the stream field that varies,
/// and where a value lands on the template (values arrive within the kind's range).
#[derive(Clone, Copy)]
pub(super) struct Target {
    pub kind: Kind,
    pub field: Field,
    pub set: fn(&mut StreamSpec, u128),
}

/// Where a header's model holds one field's pattern.
pub(super) type Get<H> = fn(&H) -> &Option<Pattern>;

/// A row of a header's table of fields: the JSON key, the pattern in the header's model, and
/// where it lands.
pub(super) type Row<H> = (&'static str, Get<H>, Target);

/// A field linerate writes with one value, accepted only at that value: the JSON key, the
/// pattern, its kind, the value and how to say it.
pub(super) type FixedRow<H> = (&'static str, Get<H>, Kind, u128, &'static str);

impl Cx {
    /// Reads one pattern; `auto` (or nothing) means linerate's default.
    pub(super) fn pattern(&mut self, path: &str, p: &Option<Pattern>, kind: Kind) -> Option<Pat> {
        let Some(p) = p else {
            return Some(Pat::Unset);
        };
        self.rest(path, &p.rest);
        let choice = p.choice.as_deref().or_else(|| {
            [
                ("value", p.value.is_some()),
                ("values", p.values.is_some()),
                ("increment", p.increment.is_some()),
                ("decrement", p.decrement.is_some()),
                ("random", p.random.is_some()),
            ]
            .iter()
            .find(|(_, set)| *set)
            .map(|(c, _)| *c)
        });
        match choice {
            None | Some("auto") => Some(Pat::Unset),
            Some("value") => match &p.value {
                Some(v) => self.read(format!("{path}.value"), v, kind).map(Pat::Value),
                None => Some(Pat::Unset),
            },
            Some("values") => self.values(path, p.values.as_deref().unwrap_or_default(), kind),
            Some("increment") => self.counter(
                &format!("{path}.increment"),
                p.increment.as_ref(),
                kind,
                VaryMode::Inc,
            ),
            Some("decrement") => self.counter(
                &format!("{path}.decrement"),
                p.decrement.as_ref(),
                kind,
                VaryMode::Dec,
            ),
            Some("random") => self.random(&format!("{path}.random"), p.random.as_ref(), kind),
            Some(other) => {
                self.refuse(
                    format!("{path}.choice"),
                    format!("pattern '{other}' is not supported"),
                );
                None
            }
        }
    }

    fn read(&mut self, at: String, v: &Value, kind: Kind) -> Option<u128> {
        let got = kind.parse(v);
        if got.is_none() {
            self.refuse(at, format!("{v} is not {}", kind.expected()));
        }
        got
    }

    /// `values`: one value, evenly spaced values as a counter, any other list as a list (its
    /// frames pre-built).
    fn values(&mut self, path: &str, list: &[Value], kind: Kind) -> Option<Pat> {
        let mut vals = Vec::new();
        for (j, v) in list.iter().enumerate() {
            vals.push(self.read(format!("{path}.values[{j}]"), v, kind)?);
        }
        let (a, b) = match vals.as_slice() {
            [] => {
                self.refuse(format!("{path}.values"), "an empty list of values");
                return None;
            }
            [v] => return Some(Pat::Value(*v)),
            [a, b, ..] => (*a, *b),
        };
        let up = b > a;
        let d = a.abs_diff(b);
        let even = d > 0
            && vals
                .windows(2)
                .all(|w| (w[1] > w[0]) == up && w[0].abs_diff(w[1]) == d);
        if !even {
            return Some(Pat::List(vals));
        }
        let (first, last) = (vals[0], vals[vals.len() - 1]);
        let (mode, lo, hi) = if up {
            (VaryMode::Inc, first, last)
        } else {
            (VaryMode::Dec, last, first)
        };
        Some(Pat::Vary {
            mode,
            lo,
            hi,
            step: d,
        })
    }

    /// `increment` or `decrement`: `count` values from `start`, `step` apart, never wrapping.
    fn counter(
        &mut self,
        at: &str,
        c: Option<&PatternCounter>,
        kind: Kind,
        mode: VaryMode,
    ) -> Option<Pat> {
        let (start, step, count) = match c {
            Some(c) => self.counter_fields(at, c, kind)?,
            None => (0, 1, 1),
        };
        if count == 1 || step == 0 {
            return Some(Pat::Value(start));
        }
        let span = step.checked_mul(count - 1);
        let (lo, hi) = if mode == VaryMode::Inc {
            (Some(start), span.and_then(|s| start.checked_add(s)))
        } else {
            (span.and_then(|s| start.checked_sub(s)), Some(start))
        };
        match (lo, hi) {
            (Some(lo), Some(hi)) if hi <= kind.max() => Some(Pat::Vary { mode, lo, hi, step }),
            _ => {
                self.refuse(
                    at,
                    "the counter wraps past the field's range: linerate's counters do not wrap (give fewer steps)",
                );
                None
            }
        }
    }

    fn counter_fields(
        &mut self,
        at: &str,
        c: &PatternCounter,
        kind: Kind,
    ) -> Option<(u128, u128, u128)> {
        self.rest(at, &c.rest);
        let start = match &c.start {
            Some(v) => self.read(format!("{at}.start"), v, kind)?,
            None => 0,
        };
        let step = match (&c.step, kind) {
            (Some(v), Kind::Ipv4 | Kind::Ipv6 | Kind::Mac) => {
                self.read(format!("{at}.step"), v, kind)?
            }
            (Some(v), Kind::Int(_)) => match int(v) {
                Some(n) => n,
                None => {
                    self.refuse(format!("{at}.step"), format!("{v} is not an integer"));
                    return None;
                }
            },
            (None, _) => 1,
        };
        let count = match &c.count {
            Some(v) => match int(v) {
                Some(n) if n >= 1 => n,
                _ => {
                    self.refuse(format!("{at}.count"), format!("{v} is not a count ≥ 1"));
                    return None;
                }
            },
            None => 1,
        };
        Some((start, step, count))
    }

    /// `random`: uniform in min..=max, drawn from the flow's one seed.
    fn random(&mut self, at: &str, r: Option<&PatternRandom>, kind: Kind) -> Option<Pat> {
        let r = r.cloned().unwrap_or_default();
        self.rest(at, &r.rest);
        let lo = match &r.min {
            Some(v) => self.read(format!("{at}.min"), v, kind)?,
            None => 0,
        };
        let hi = match &r.max {
            Some(v) => self.read(format!("{at}.max"), v, kind)?,
            None => kind.max(),
        };
        if hi < lo {
            self.refuse(at, "max is below min");
            return None;
        }
        if let Some(v) = r.seed.as_ref().filter(|v| !v.is_null()) {
            self.seed(format!("{at}.seed"), v);
        }
        Some(Pat::Vary {
            mode: VaryMode::Random,
            lo,
            hi,
            step: 1,
        })
    }

    /// linerate draws every random field of a stream from one seed: the first one given.
    fn seed(&mut self, at: String, v: &Value) {
        match int(v).and_then(|s| u64::try_from(s).ok()) {
            None => self.refuse(at, format!("{v} is not a seed (a whole number)")),
            Some(seed) => match &self.seed {
                Some((first, s)) if *s != seed => {
                    let why = format!(
                        "linerate draws all the random fields of a flow from one seed, and {first} gave {s}: give them the same seed"
                    );
                    self.refuse(at, why);
                }
                Some(_) => {}
                None => self.seed = Some((at, seed)),
            },
        }
    }

    /// A field linerate writes itself: accepted when unset, `auto`, or equal to what linerate
    /// writes anyway.
    pub(super) fn fixed(
        &mut self,
        path: &str,
        p: &Option<Pattern>,
        kind: Kind,
        ours: u128,
        what: &str,
    ) {
        match self.pattern(path, p, kind) {
            Some(Pat::Unset) | None => {}
            Some(Pat::Value(v)) if v == ours => {}
            Some(_) => self.refuse(
                path,
                format!(
                    "linerate writes {what} here ({}); other values or patterns are not supported",
                    kind.value(ours)
                ),
            ),
        }
    }

    /// Every fixed row of a header's table.
    pub(super) fn fixed_rows<H>(&mut self, at: &str, header: &H, rows: &[FixedRow<H>]) {
        for (name, pattern, kind, value, what) in rows {
            self.fixed(
                &format!("{at}.{name}"),
                pattern(header),
                *kind,
                *value,
                what,
            );
        }
    }

    /// A field linerate computes from the frame (a length, a next-header type): refused when
    /// the config gives it.
    pub(super) fn auto(&mut self, path: &str, p: &Option<Pattern>, kind: Kind, why: &str) {
        if self.pattern(path, p, kind).is_some_and(|p| p.is_set()) {
            self.refuse(path, why);
        }
    }

    pub(super) fn checksum(&mut self, path: &str, c: &Option<ChecksumPattern>) {
        if let Some(c) = c {
            self.rest(path, &c.rest);
            let good = matches!(c.choice.as_deref(), None | Some("generated"))
                && matches!(c.generated.as_deref(), None | Some("good"));
            if !good {
                self.refuse(
                    path,
                    "linerate always writes the correct checksum (generated: good)",
                );
            }
        }
    }

    /// Every row of a header's table of fields that a pattern sets.
    pub(super) fn rows<H>(&mut self, at: &str, header: &H, rows: &[Row<H>], spec: &mut StreamSpec) {
        for (name, pattern, target) in rows {
            let path = format!("{at}.{name}");
            if let Some(pat) = self.pattern(&path, pattern(header), target.kind) {
                self.apply(&path, pat, target, spec);
            }
        }
    }

    /// Sets a field of the template and, when it moves, adds its `vary`, checked to move
    /// exactly as the pattern asked.
    pub(super) fn apply(&mut self, path: &str, pat: Pat, target: &Target, spec: &mut StreamSpec) {
        let (mode, lo, hi, step) = match pat {
            Pat::Unset => return,
            Pat::Value(v) => return (target.set)(spec, v),
            Pat::List(values) => return self.apply_list(path, &values, target, spec),
            Pat::Vary { mode, lo, hi, step } => (mode, lo, hi, step),
        };
        let kind = target.kind;
        if kind == Kind::Ipv6 && (lo >> 64) != (hi >> 64) {
            self.refuse(
                path,
                "an IPv6 pattern may move only the address's low 64 bits",
            );
            return;
        }
        let first = if mode == VaryMode::Dec { hi } else { lo };
        (target.set)(spec, first);
        let Ok(step64) = u64::try_from(step) else {
            self.refuse(path, "a step over 2^64 - 1 is not supported");
            return;
        };
        let vary = Vary {
            field: target.field,
            mode,
            start: kind.value(lo),
            end: kind.value(hi),
            step: step64,
            mask: None,
            list: Vec::new(),
        };
        let count = (hi - lo) / step.max(1) + 1;
        match vary.resolve(kind == Kind::Ipv6) {
            // The modifier holds the low 64 bits (all of a MAC, an IPv4 address or a port).
            Ok(v) if u128::from(v.modifier.count) == count && v.modifier.start == first as u64 => {
                spec.vary.push(vary)
            }
            Ok(_) => self.refuse(
                path,
                format!("linerate cannot express this pattern exactly ({vary} reads otherwise)"),
            ),
            Err(e) => self.refuse(path, e.to_string()),
        }
    }

    /// A list of values: the template takes the first, and the plan pre-builds a frame per
    /// value (`Vary::list`), so the list costs nothing while sending.
    fn apply_list(&mut self, path: &str, values: &[u128], target: &Target, spec: &mut StreamSpec) {
        let kind = target.kind;
        if kind == Kind::Ipv6 && values.iter().any(|v| (v >> 64) != (values[0] >> 64)) {
            self.refuse(
                format!("{path}.values"),
                "the addresses of an IPv6 list may differ only in their low 64 bits",
            );
            return;
        }
        (target.set)(spec, values[0]);
        let list = values.iter().map(|&v| kind.value(v)).collect();
        let vary = Vary::list(target.field, list, None);
        match vary.resolve(kind == Kind::Ipv6) {
            Ok(_) => spec.vary.push(vary),
            Err(e) => self.refuse(format!("{path}.values"), e.to_string()),
        }
    }
}
