//! The `custom` header: bytes after the L4 header, which become the start of the payload.

use super::Cx;
use crate::model::*;

impl Cx {
    /// Appends the header's bytes to `payload`.
    pub(super) fn custom(
        &mut self,
        at: &str,
        c: Option<&FlowCustom>,
        payload: &mut Vec<u8>,
    ) -> Option<()> {
        let c = c.cloned().unwrap_or_default();
        self.rest(at, &c.rest);
        let hex: Vec<u8> = c
            .bytes
            .trim_start_matches("0x")
            .trim_start_matches("0X")
            .bytes()
            .filter(|ch| !matches!(ch, b':' | b' '))
            .collect();
        let bytes: Option<Vec<u8>> = hex
            .chunks(2)
            .map(|pair| match pair {
                [hi, lo] => Some((hex_digit(*hi)? << 4) | hex_digit(*lo)?),
                _ => None,
            })
            .collect();
        match bytes {
            Some(bytes) if !bytes.is_empty() => payload.extend(bytes),
            _ => self.refuse(format!("{at}.bytes"), "not an even number of hex digits"),
        }
        Some(())
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    char::from(c).to_digit(16).map(|d| d as u8)
}
