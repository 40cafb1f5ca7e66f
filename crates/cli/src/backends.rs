//! `sweep --backends all|LIST`: the backends one sweep measures side by side.

use clap::ValueEnum;

use super::{Backend, INTERFACE_BACKENDS};

/// The backends of `sweep --backends`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backends {
    /// Every interface backend of this platform that opens here; the others are skipped with
    /// their reason.
    All,
    /// These, in this order (the first is the baseline of the ratios); each must open.
    List(Vec<Backend>),
}

impl Backends {
    /// The backends to try, in column order: on Linux the ladder's order (live, AF_XDP,
    /// AF_PACKET) for `all`.
    pub fn wanted(&self) -> Vec<Backend> {
        match self {
            Backends::All => {
                let mut all: Vec<Backend> = INTERFACE_BACKENDS
                    .iter()
                    .copied()
                    .filter(|b| *b != Backend::Auto)
                    .collect();
                // Live first: on most interfaces it is the fastest, and the first is the baseline.
                all.sort_by_key(|b| *b != Backend::Live);
                all
            }
            Backends::List(list) => list.clone(),
        }
    }
}

/// Reads `all` or a comma-separated list of this platform's interface backends (not `auto`,
/// which is one of them chosen, nor one named twice).
pub fn parse_backends(text: &str) -> Result<Backends, String> {
    if text == "all" {
        return Ok(Backends::All);
    }
    let offered = || {
        let names: Vec<String> = INTERFACE_BACKENDS
            .iter()
            .filter(|b| **b != Backend::Auto)
            .filter_map(|b| Some(b.to_possible_value()?.get_name().to_owned()))
            .collect();
        format!("all, or a list of {}", names.join(", "))
    };
    let mut list = Vec::new();
    for name in text.split(',') {
        let backend = Backend::from_str(name.trim(), false)
            .ok()
            .filter(|b| INTERFACE_BACKENDS.contains(b) && *b != Backend::Auto)
            .ok_or_else(|| format!("`{name}` is no backend to sweep: give {}", offered()))?;
        if list.contains(&backend) {
            return Err(format!("`{name}` is named twice"));
        }
        list.push(backend);
    }
    Ok(Backends::List(list))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_or_a_list_without_auto_or_repeats() {
        assert_eq!(parse_backends("all"), Ok(Backends::All));
        #[cfg(target_os = "linux")]
        {
            assert_eq!(
                parse_backends("afpacket,live"),
                Ok(Backends::List(vec![Backend::Afpacket, Backend::Live]))
            );
            assert_eq!(
                Backends::All.wanted(),
                [Backend::Live, Backend::Afxdp, Backend::Afpacket]
            );
            assert!(parse_backends("live,live").unwrap_err().contains("twice"));
            assert!(parse_backends("pcap").unwrap_err().contains("afpacket"));
        }
        assert!(parse_backends("auto").is_err());
        assert!(parse_backends("").is_err());
    }
}
