//! The NAT DUT: the router DUT plus what a stateful box keeps. nftables masquerades what leaves
//! toward the sink (the inside network [`crate::NAT_INSIDE`] on the DUT's port toward the
//! sender, and the sender's own address) behind the DUT's address there, and conntrack holds
//! every translation, so a stateful test sees a real NAT: its table filling (`conntrack -C` in
//! the DUT's namespace), a SYN-less segment dropped, its ports running out.

use std::io::Write;
use std::process::{Command, Stdio};

use super::in_netns;
use super::netlink::Rtnl;
use crate::{
    Dut, LabError, NAT_INSIDE, NAT_INSIDE_GATEWAY, NAT_SERVERS, NAT_SERVERS_GATEWAY, NAT6_INSIDE,
    NAT6_INSIDE_GATEWAY, NAT6_SERVERS, NAT6_SERVERS_GATEWAY, NatRules,
};

/// The nftables table the lab owns in the DUT's namespace.
const TABLE: &str = "linerate_nat";
/// Its IPv6 table: the stateful firewall, and NAT66 when asked.
const TABLE6: &str = "linerate_fw6";

/// IPv4's table and IPv6's: each a stateful firewall (invalid segments dropped, a new flow
/// only from the inside, the session limit), IPv4 always translated, IPv6 when `nat66` asks.
fn ruleset(dut: &Dut, rules: &NatRules) -> String {
    table(dut, rules, "ip", TABLE, true) + &table(dut, rules, "ip6", TABLE6, rules.nat66)
}

fn table(dut: &Dut, rules: &NatRules, family: &str, name: &str, translate: bool) -> String {
    // Everything leaving toward the servers is translated: the stateful clients' network and
    // a kernel client on the sender's end alike (the benchmark's wrk). A port range maps TCP
    // and UDP (nft takes ports only after a transport match); the rest (ICMP) is masqueraded
    // as before.
    let postrouting = if translate {
        let ranged = rules.ports.map_or_else(String::new, |(a, b)| {
            format!(
                "\t\tmeta l4proto {{ tcp, udp }} oifname \"{}\" masquerade to :{a}-{b}\n",
                dut.egress
            )
        });
        format!(
            "\tchain postrouting {{ type nat hook postrouting priority srcnat; policy accept;\n\
             {ranged}\t\toifname \"{}\" masquerade\n\t}}\n",
            dut.egress
        )
    } else {
        String::new()
    };
    // A firewall's session limit: nft's connlimit keeps the connections this rule let through
    // and forgets each when conntrack does or when it closes (TIME_WAIT, CLOSE), so it counts
    // the live ones; a new flow past the limit is dropped before conntrack confirms it, and
    // the counter says how many were.
    let limited = rules.limit.map_or_else(String::new, |n| {
        format!(
            "\t\tiifname \"{}\" ct state new ct count over {n} counter drop\n",
            dut.ingress
        )
    });
    // Invalid segments (a stray ACK no connection knows) are dropped as a NAT drops them; a
    // new flow may start only from the inside.
    format!(
        "table {family} {name} {{\n{postrouting}\
         \tchain forward {{ type filter hook forward priority filter; policy accept;\n\
         \t\tct state invalid counter drop\n\
         \t\tiifname \"{egress}\" ct state new counter drop\n{limited}\t}}\n\
         }}\n",
        egress = dut.egress,
    )
}

/// Adds the inside network's gateway and the servers' one, the NAT and conntrack's rules, and
/// turns the DUT's transmit offloads off on both ends: a packet socket on either side (a
/// stateful client or server) then reads every segment whole, checksummed and no larger than
/// the MTU, as a NIC would deliver it.
pub(crate) fn start(dut: &Dut) -> Result<(), LabError> {
    let mut inside = Rtnl::open(Some(&dut.netns))?;
    inside.add_address(&dut.ingress, NAT_INSIDE_GATEWAY, NAT_INSIDE.1)?;
    inside.add_address(&dut.egress, NAT_SERVERS_GATEWAY, NAT_SERVERS.1)?;
    // IPv6 is routed through the firewall below, translated only when `lab nat` asks.
    super::dut::ipv6_on_links(dut)?;
    inside.add_ip(&dut.ingress, NAT6_INSIDE_GATEWAY.into(), NAT6_INSIDE.1)?;
    inside.add_ip(&dut.egress, NAT6_SERVERS_GATEWAY.into(), NAT6_SERVERS.1)?;
    let rules = ruleset(dut, &NatRules::default());
    in_netns(&dut.netns, || {
        run(
            Command::new("nft").args(["-f", "-"]),
            Some(&rules),
            "nft (the NAT DUT's rules: install nftables, or ./scripts/setup.sh)",
        )?;
        for dev in [&dut.ingress, &dut.egress] {
            run(
                Command::new("ethtool").args(["-K", dev, "tx", "off", "tso", "off", "gso", "off"]),
                None,
                "ethtool (the NAT DUT's offloads: install ethtool, or ./scripts/setup.sh)",
            )?;
        }
        Ok(())
    })
}

/// Replaces the NAT's rules with `rules`' (conntrack keeps the translations it holds).
pub(crate) fn set(dut: &Dut, rules: &NatRules) -> Result<(), LabError> {
    let rules = format!(
        "delete table ip {TABLE}\ndelete table ip6 {TABLE6}\n{}",
        ruleset(dut, rules)
    );
    in_netns(&dut.netns, || {
        run(
            Command::new("nft").args(["-f", "-"]),
            Some(&rules),
            "nft (the NAT DUT's rules: install nftables, or ./scripts/setup.sh)",
        )
    })
}

fn run(command: &mut Command, stdin: Option<&str>, what: &str) -> Result<(), LabError> {
    let shown = format!("{command:?}").replace('"', "");
    let mut child = command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| LabError::Io {
            what: format!("starting {what}"),
            source,
        })?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())
            .map_err(|source| LabError::Io {
                what: format!("writing to {shown}"),
                source,
            })?;
    }
    let out = child.wait_with_output().map_err(|source| LabError::Io {
        what: format!("waiting for {shown}"),
        source,
    })?;
    if !out.status.success() {
        return Err(LabError::Command {
            command: shown,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(())
}

/// How many new connections the limit has dropped (its rules' counters, IPv4's and IPv6's);
/// None: no limit set.
pub(crate) fn limit_drops(dut: &Dut) -> Result<Option<u64>, LabError> {
    let mut total = None;
    for (family, table) in [("ip", TABLE), ("ip6", TABLE6)] {
        let out = in_netns(&dut.netns, || {
            Command::new("nft")
                .args(["list", "chain", family, table, "forward"])
                .output()
                .map_err(|source| LabError::Io {
                    what: "running nft list chain".into(),
                    source,
                })
        })?;
        let dropped = String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.contains("ct count over"))
            .and_then(|l| {
                let mut words = l.split_whitespace();
                words.find(|w| *w == "packets")?;
                words.next()?.parse::<u64>().ok()
            });
        if let Some(n) = dropped {
            total = Some(total.unwrap_or(0) + n);
        }
    }
    Ok(total)
}
