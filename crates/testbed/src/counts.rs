//! A test bed's counts while it runs, from any thread: each receiving place's totals, each
//! port's link, and (on agents) their clocks — one handle whatever the places are, so a reader
//! never asks where they are.

use std::sync::Arc;

use linerate_rx::RxTotals;
use linerate_session::RunReceiver;

use crate::error::Result;

/// What the receivers counted, by place index.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub totals: Vec<Option<RxTotals>>,
}

/// Where a test bed's counts are read from. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LiveCounts(Source);

/// The neighbours the hosts of each place asked for (none on a bed without hosts).
#[cfg(target_os = "linux")]
type Asked = Option<linerate_session::AskedNeighbours>;
/// Hosts are Linux's: elsewhere there is never anything asked for.
#[cfg(not(target_os = "linux"))]
type Asked = Option<std::convert::Infallible>;

#[derive(Debug, Clone)]
enum Source {
    /// This machine's receivers, by place, and what their hosts asked for.
    Local(Vec<Option<Arc<RunReceiver>>>, Asked),
    /// The agents' receivers, as last polled.
    #[cfg(target_os = "linux")]
    Agents(Arc<linerate_agent::Agents>),
}

impl Default for LiveCounts {
    fn default() -> Self {
        LiveCounts(Source::Local(Vec::new(), Asked::default()))
    }
}

/// Per name, whether the link of its location is up.
pub type Links<K> = std::collections::BTreeMap<K, bool>;

impl LiveCounts {
    pub(crate) fn local(receivers: Vec<Option<Arc<RunReceiver>>>) -> Self {
        LiveCounts(Source::Local(receivers, Asked::default()))
    }

    /// The counts of hosts' places: `asked` holds what their hosts asked for.
    #[cfg(target_os = "linux")]
    pub(crate) fn of_hosts(
        receivers: Vec<Option<Arc<RunReceiver>>>,
        asked: linerate_session::AskedNeighbours,
    ) -> Self {
        LiveCounts(Source::Local(receivers, Some(asked)))
    }

    #[cfg(target_os = "linux")]
    pub(crate) fn from_agents(agents: Arc<linerate_agent::Agents>) -> Self {
        LiveCounts(Source::Agents(agents))
    }

    /// Every receiver's totals now (agents': as last polled).
    pub fn read(&self) -> Result<Counts> {
        let totals = match &self.0 {
            Source::Local(rx, ..) => rx
                .iter()
                .map(|r| r.as_ref().map(|r| r.read()).transpose())
                .collect::<Result<_, _>>()?,
            #[cfg(target_os = "linux")]
            Source::Agents(a) => a.totals(),
        };
        Ok(Counts { totals })
    }

    /// Every receiver's totals and, per named location (`IFACE[@NETNS]` or an agent's place),
    /// whether its link is up, read together.
    pub fn read_with_links<K: Ord>(
        &self,
        locations: Vec<(K, String)>,
        places: &[String],
    ) -> Result<(Vec<Option<RxTotals>>, Links<K>)> {
        let totals = self.read()?.totals;
        let links = locations
            .into_iter()
            .map(|(name, at)| (name, self.link(&at, places)))
            .collect();
        Ok((totals, links))
    }

    /// Each receiver's totals of the flows `ids` (and every frame that is no flow).
    #[cfg(target_os = "linux")]
    pub fn read_flows(&self, ids: &[u16]) -> Result<Vec<Option<RxTotals>>> {
        match &self.0 {
            Source::Local(rx, ..) => Ok(rx
                .iter()
                .map(|r| r.as_ref().map(|r| r.read_flows(ids)).transpose())
                .collect::<Result<_, _>>()?),
            #[cfg(target_os = "linux")]
            Source::Agents(a) => Ok(a.totals()),
        }
    }

    /// Clears every receiver of this machine: what it counts from here on is the next run's.
    pub fn clear(&self) -> Result<()> {
        match &self.0 {
            Source::Local(rx, ..) => {
                for r in rx.iter().flatten() {
                    r.reset()?;
                }
            }
            // Each agent clears its own as its start is asked for.
            #[cfg(target_os = "linux")]
            Source::Agents(_) => {}
        }
        Ok(())
    }

    /// The link of the port at `location` (`IFACE[@NETNS]` here; an agent's port by the name
    /// the bed gave it, `places` being the bed's): up and running.
    #[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
    pub fn link(&self, location: &str, places: &[String]) -> bool {
        match &self.0 {
            Source::Local(..) => link_up(location),
            #[cfg(target_os = "linux")]
            Source::Agents(a) => places
                .iter()
                .position(|p| p == location)
                .is_some_and(|i| a.links().get(i).copied().unwrap_or(false)),
        }
    }

    /// Frames from place `tx` to place `rx` are stamped and received on one clock (one
    /// machine's, or two agents' TAI): else their one-way latency means nothing.
    #[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
    pub fn one_clock(&self, tx: usize, rx: usize) -> bool {
        match &self.0 {
            Source::Local(..) => true,
            #[cfg(target_os = "linux")]
            Source::Agents(a) => a.one_clock(tx, rx),
        }
    }

    /// One line per agent: its clock offset, for a start's warnings (none here).
    pub fn offsets_said(&self) -> Vec<String> {
        match &self.0 {
            Source::Local(..) => Vec::new(),
            #[cfg(target_os = "linux")]
            Source::Agents(a) => a.offsets_said(),
        }
    }

    /// The agents, their ports and clocks; None on this machine.
    #[cfg(target_os = "linux")]
    pub fn agents(&self) -> Option<&Arc<linerate_agent::Agents>> {
        match &self.0 {
            Source::Local(..) => None,
            Source::Agents(a) => Some(a),
        }
    }

    /// Per place, the neighbours its hosts asked for (gateways, flows' next hops) with the
    /// MAC their streams use, and a count of the others its hosts learned.
    #[cfg(target_os = "linux")]
    pub fn neighbours(&self) -> Result<Vec<linerate_hosts::NeighbourReport>> {
        match &self.0 {
            Source::Local(rx, asked) => rx
                .iter()
                .enumerate()
                .map(|(i, r)| match r {
                    Some(r) => {
                        let asked = asked.as_ref().map(|a| a.of_port(i)).unwrap_or_default();
                        Ok(r.hosts()?
                            .report(&asked)
                            .map_err(linerate_session::SessionError::from)?)
                    }
                    None => Ok(linerate_hosts::NeighbourReport::default()),
                })
                .collect(),
            Source::Agents(a) => Ok(a.neighbours()?.into_iter().map(Into::into).collect()),
        }
    }
}

/// Whether the interface at `location` (`IFACE[@NETNS]`) is up and running (operstate up:
/// `IFF_RUNNING` with `IFF_UP`), asked of the kernel inside its network namespace — sysfs shows
/// the namespace it was mounted in, not the port's. One that cannot be found is not up.
#[cfg(target_os = "linux")]
pub fn link_up(location: &str) -> bool {
    use nix::net::if_::InterfaceFlags;
    let (iface, netns) = match location.split_once('@') {
        Some((i, n)) => (i, Some(n)),
        None => (location, None),
    };
    linerate_xdp::in_netns(netns, || {
        let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
            return Ok(false);
        };
        let up = InterfaceFlags::IFF_UP | InterfaceFlags::IFF_RUNNING;
        Ok(addrs
            .filter(|a| a.interface_name == iface)
            .any(|a| a.flags.contains(up)))
    })
    .unwrap_or(false)
}

#[cfg(not(target_os = "linux"))]
pub fn link_up(_location: &str) -> bool {
    false
}
