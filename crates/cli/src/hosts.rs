//! The hosts' arguments, one syntax for `tx` and `rfc2544`: `--host`, and the flows between
//! the hosts (`--flow FROM:TO`, or `--bidir`), a part of `cli` in a file of its own.

use clap::Args;
use linerate_stream::StreamSpec;

use super::{HOSTS, parse_duration};

/// Hosts and the flows between them: one syntax for `tx` and `rfc2544`.
#[derive(Debug, Args)]
pub struct HostsArgs {
    /// An emulated host, a [[host]] table's keys as KEY=VALUE pairs:
    /// name=NAME,port=IFACE[@NETNS],ipv4=A.B.C.D/LEN[,gateway=GW][,ipv6=ADDR/LEN][,gateway6=GW][,mac=MAC][,vlan=ID].
    /// Repeat for each host. linerate answers ARP/ND and ping for it and resolves its gateway
    /// before sending; the hosts' ports are the run's ports (no -i).
    #[arg(long, value_name = "KEY=VALUE,…", help_heading = HOSTS)]
    pub host: Vec<linerate_stream::HostSpec>,
    /// A flow between two hosts, FROM:TO: the template stream from FROM's port to TO's address
    /// (repeat; --flow west:east --flow east:west runs both directions at once).
    #[arg(long, value_name = "FROM:TO", help_heading = HOSTS)]
    pub flow: Vec<String>,
    /// Both directions between the two hosts given: --flow A:B --flow B:A.
    #[arg(long, conflicts_with = "flow", help_heading = HOSTS)]
    pub bidir: bool,
    /// How long each host's gateway (or on-link destination) may take to answer ARP/ND.
    #[arg(long, default_value = "3s", value_parser = parse_duration, help_heading = HOSTS)]
    pub resolve_timeout: std::time::Duration,
}

impl HostsArgs {
    /// True when the flows come from the command line (--flow or --bidir).
    pub fn flows_given(&self) -> bool {
        !self.flow.is_empty() || self.bidir
    }

    /// The `FROM:TO` pairs asked: each --flow, or with --bidir both ways between the two
    /// hosts given.
    pub fn pairs(&self) -> Result<Vec<(String, String)>, String> {
        if self.bidir {
            let [a, b] = self.host.as_slice() else {
                return Err(format!(
                    "--bidir runs both directions between two hosts: give two --host, not {}",
                    self.host.len()
                ));
            };
            return Ok(vec![
                (a.name.clone(), b.name.clone()),
                (b.name.clone(), a.name.clone()),
            ]);
        }
        self.flow
            .iter()
            .map(|f| {
                f.split_once(':')
                    .filter(|(a, b)| !a.is_empty() && !b.is_empty())
                    .map(|(a, b)| (a.to_owned(), b.to_owned()))
                    .ok_or_else(|| format!("--flow {f}: write FROM:TO (two host names)"))
            })
            .collect()
    }

    /// The template stream once per flow asked, named FROM-TO.
    pub fn flows(&self, template: &StreamSpec) -> Result<Vec<StreamSpec>, String> {
        Ok(self
            .pairs()?
            .into_iter()
            .map(|(from, to)| StreamSpec {
                name: format!("{from}-{to}"),
                from: Some(from),
                to: Some(to),
                ..template.clone()
            })
            .collect())
    }
}
