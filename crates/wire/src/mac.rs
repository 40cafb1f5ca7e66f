use crate::WireError;

/// An Ethernet address.
pub type MacAddr = [u8; 6];

/// Parses `02:00:00:00:00:01` or `02-00-00-00-00-01` (one separator kind, two hex digits per octet).
pub fn parse_mac(s: &str) -> Result<MacAddr, WireError> {
    let bad = || WireError::BadMac {
        input: s.to_string(),
    };
    let sep = if s.contains(':') { ':' } else { '-' };
    let mut mac = [0u8; 6];
    let mut parts = s.trim().split(sep);
    for octet in &mut mac {
        let p = parts.next().ok_or_else(bad)?;
        if p.len() != 2 {
            return Err(bad());
        }
        *octet = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(mac)
}

/// Lower-case, colon-separated: the form `parse_mac` reads and `ip link` prints.
pub fn format_mac(m: &MacAddr) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A MAC address as a person writes it (`02:00:00:00:00:01`): read once at the edge (a flag,
/// a stream file, an OTG document) and carried as its octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac(pub MacAddr);

impl Mac {
    pub const fn octets(self) -> MacAddr {
        self.0
    }
}

impl From<MacAddr> for Mac {
    fn from(octets: MacAddr) -> Self {
        Self(octets)
    }
}

impl std::str::FromStr for Mac {
    type Err = WireError;

    fn from_str(s: &str) -> Result<Self, WireError> {
        parse_mac(s).map(Self)
    }
}

impl std::fmt::Display for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_mac(&self.0))
    }
}

crate::serde_as_text!(Mac);

pub(crate) fn mac_to_u64(m: &MacAddr) -> u64 {
    m.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_separators() {
        let want = [0x02, 0, 0, 0, 0, 0xab];
        assert_eq!(parse_mac("02:00:00:00:00:ab").unwrap(), want);
        assert_eq!(parse_mac("02-00-00-00-00-AB").unwrap(), want);
        assert_eq!(format_mac(&want), "02:00:00:00:00:ab");
        assert_eq!(mac_to_u64(&want), 0x0200_0000_00ab);
    }

    #[test]
    fn errors_name_the_input_and_the_form() {
        for bad in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:01:02",
            "2:0:0:0:0:1",
            "02:00:00:00:00:zz",
            "02:00-00:00:00:01",
        ] {
            let msg = parse_mac(bad).unwrap_err().to_string();
            assert!(msg.contains(&format!("{bad:?}")), "{msg}");
            assert!(msg.contains("02:00:00:00:00:01"), "{msg}");
        }
    }
}
