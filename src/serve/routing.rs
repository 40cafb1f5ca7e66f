//! The devices' control planes of a config: started with it, stopped and started by
//! `protocol.all`, route ranges withdrawn and advertised by `protocol.route`, and read for
//! get_metrics (`bgpv4`, `bgpv6`, `isis`, `ospfv2`, `ospfv3`, `lldp`) and get_states
//! (`bgp_prefixes`, `isis_lsps`, `ospfv2_lsas`, `ospfv3_lsas`, `lldp_neighbors`) from the
//! daemons themselves — this machine's, or those its agents run for devices on their ports.

use std::sync::{Arc, Mutex};

use anyhow::Result;
use axum::response::Response;
use linerate_agent::{Agents, RoutingAsk};
use linerate_otg as otg;
use linerate_routing::frr::isis::IsisView;
use linerate_routing::frr::ospf::OspfState;
use linerate_routing::frr::ospf6::Ospf6State;
use linerate_routing::frr::{Prefixes, Session};
use linerate_routing::lldp::LldpState;
use linerate_routing::{Routers, RoutingError};
use otg::bgp::answers;
use serde::de::DeserializeOwned;

use super::state::{App, Daemons, Fail, blocking, json, warnings};

/// A config's control planes: the daemons of devices on this machine's ports, or the agents
/// that run those of devices on theirs (each device's daemons are one machine's).
#[derive(Debug)]
pub(super) enum Planes {
    Here(Mutex<Routers>),
    Agents(Arc<Agents>),
}

impl Planes {
    fn here(routers: &Mutex<Routers>) -> std::sync::MutexGuard<'_, Routers> {
        routers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `ask` of this machine's daemons (`here`) or of every agent with some: each one's answer.
    fn each<A: DeserializeOwned>(
        &self,
        ask: &RoutingAsk,
        here: impl FnOnce(&mut Routers) -> Result<A, RoutingError>,
    ) -> Result<Vec<A>> {
        Ok(match self {
            Planes::Here(r) => vec![here(&mut Self::here(r))?],
            Planes::Agents(a) => a.routing(ask)?,
        })
    }

    /// [`Self::each`] of a call that answers a list: the lists as one.
    fn all<T: DeserializeOwned>(
        &self,
        ask: &RoutingAsk,
        here: impl FnOnce(&mut Routers) -> Result<Vec<T>, RoutingError>,
    ) -> Result<Vec<T>> {
        Ok(self.each(ask, here)?.into_iter().flatten().collect())
    }

    /// Fails naming a daemon that died since it was last asked.
    pub(super) fn check(&self) -> Result<()> {
        self.each(&RoutingAsk::Check, Routers::check).map(drop)
    }

    pub(super) fn set_running(&self, run: bool) -> Result<()> {
        self.each(&RoutingAsk::SetRunning { run }, |r| r.set_running(run))
            .map(drop)
    }

    /// Whether a range of that name was found (on one machine).
    pub(super) fn announce(&self, range: &str, advertise: bool) -> Result<bool> {
        let ask = RoutingAsk::Announce {
            range: range.to_owned(),
            advertise,
        };
        let found = self.each(&ask, |r| r.announce(range, advertise))?;
        Ok(found.contains(&true))
    }

    pub(super) fn sessions(&self) -> Result<Vec<(String, Session)>> {
        self.all(&RoutingAsk::Sessions, Routers::sessions)
    }

    pub(super) fn learned(&self, peer: &str) -> Result<Option<Prefixes>> {
        let ask = RoutingAsk::Learned {
            peer: peer.to_owned(),
        };
        let found = self.each(&ask, |r| r.learned(peer))?;
        Ok(found.into_iter().flatten().next())
    }

    pub(super) fn isis(&self) -> Result<Vec<(String, Option<IsisView>)>> {
        self.all(&RoutingAsk::Isis, Routers::isis)
    }

    pub(super) fn ospf(&self) -> Result<Vec<OspfState>> {
        self.all(&RoutingAsk::Ospf, Routers::ospf)
    }

    pub(super) fn ospf6(&self) -> Result<Vec<Ospf6State>> {
        self.all(&RoutingAsk::Ospf6, Routers::ospf6)
    }

    pub(super) fn lldp(&self) -> Result<Vec<LldpState>> {
        self.all(&RoutingAsk::Lldp, Routers::lldp)
    }

    /// An agent's answer to its controller's `ask`, as JSON.
    pub(super) fn answer(&self, ask: &RoutingAsk) -> Result<serde_json::Value> {
        use serde_json::to_value;
        Ok(match ask {
            RoutingAsk::Check => to_value(self.check()?)?,
            RoutingAsk::SetRunning { run } => to_value(self.set_running(*run)?)?,
            RoutingAsk::Announce { range, advertise } => {
                to_value(self.announce(range, *advertise)?)?
            }
            RoutingAsk::Sessions => to_value(self.sessions()?)?,
            RoutingAsk::Learned { peer } => to_value(self.learned(peer)?)?,
            RoutingAsk::Isis => to_value(self.isis()?)?,
            RoutingAsk::Ospf => to_value(self.ospf()?)?,
            RoutingAsk::Ospf6 => to_value(self.ospf6()?)?,
            RoutingAsk::Lldp => to_value(self.lldp()?)?,
        })
    }
}

/// The config's daemons, when it has any.
fn daemons(app: &App) -> Result<Daemons, Fail> {
    app.lock().routers.clone().ok_or_else(|| {
        Fail::bad("the config has no device with a control plane (devices[].bgp, devices[].isis, devices[].ospfv2, devices[].ospfv3, lldp[])")
    })
}

fn failed(e: &anyhow::Error) -> Fail {
    Fail::internal(&format!("{e:#}"))
}

/// Fails naming a daemon that died since it was last asked: every metrics answer says so.
pub(super) async fn check(app: &App) -> Result<(), Fail> {
    let Some(d) = app.lock().routers.clone() else {
        return Ok(());
    };
    blocking(move || d.check()).await?.map_err(|e| failed(&e))
}

/// `protocol.all`: every daemon stopped or started again.
pub(super) async fn set_running(app: &App, start: bool) -> Result<Response, Fail> {
    let d = daemons(app)?;
    blocking(move || d.set_running(start))
        .await?
        .map_err(|e| failed(&e))?;
    Ok(warnings())
}

/// `protocol.route`: these ranges advertised or withdrawn.
pub(super) async fn announce(
    app: &App,
    names: Vec<String>,
    advertise: bool,
) -> Result<Response, Fail> {
    let d = daemons(app)?;
    blocking(move || {
        names
            .iter()
            .try_for_each(|n| d.announce(n, advertise).map(drop))
    })
    .await?
    .map_err(|e| failed(&e))?;
    Ok(warnings())
}

/// get_metrics `bgpv4` / `bgpv6`: the peers of the family asked (all, with none named).
pub(super) async fn metrics(app: &App, v6: bool, peers: Vec<String>) -> Result<Response, Fail> {
    let d = daemons(app)?;
    let mapped = app.mapped()?;
    let sessions = blocking(move || d.sessions())
        .await?
        .map_err(|e| failed(&e))?;
    Ok(json(&answers::metrics_response(
        &mapped.routers,
        &sessions,
        v6,
        &peers,
    )))
}

/// get_metrics `isis` (`lsps` false) or get_states `isis_lsps` (true): the routers named, all
/// with none.
pub(super) async fn isis(app: &App, routers: Vec<String>, lsps: bool) -> Result<Response, Fail> {
    let d = daemons(app)?;
    let mapped = app.mapped()?;
    let views = blocking(move || d.isis()).await?.map_err(|e| failed(&e))?;
    Ok(if lsps {
        json(&otg::isis::answers::lsps_response(&views, &routers))
    } else {
        json(&otg::isis::answers::metrics_response(
            &mapped.routers,
            &views,
            &routers,
        ))
    })
}

/// get_metrics `ospfv2` (`lsas` false) or get_states `ospfv2_lsas` (true): the routers named,
/// all with none.
pub(super) async fn ospfv2(app: &App, routers: Vec<String>, lsas: bool) -> Result<Response, Fail> {
    let d = daemons(app)?;
    let states = blocking(move || d.ospf()).await?.map_err(|e| failed(&e))?;
    Ok(if lsas {
        json(&otg::ospfv2::answers::lsas_response(&states, &routers))
    } else {
        json(&otg::ospfv2::answers::metrics_response(&states, &routers))
    })
}

/// get_metrics `ospfv3` (`lsas` false) or get_states `ospfv3_lsas` (true), as [`ospfv2`].
pub(super) async fn ospfv3(app: &App, routers: Vec<String>, lsas: bool) -> Result<Response, Fail> {
    let d = daemons(app)?;
    let states = blocking(move || d.ospf6()).await?.map_err(|e| failed(&e))?;
    Ok(if lsas {
        json(&otg::ospfv3::answers::lsas_response(&states, &routers))
    } else {
        json(&otg::ospfv3::answers::metrics_response(&states, &routers))
    })
}

/// get_metrics `lldp` (`neighbors` None) or get_states `lldp_neighbors` (the neighbour ids
/// asked, all with none): the agents named, all with none.
pub(super) async fn lldp(
    app: &App,
    agents: Vec<String>,
    neighbors: Option<Vec<String>>,
) -> Result<Response, Fail> {
    let d = daemons(app)?;
    let states = blocking(move || d.lldp()).await?.map_err(|e| failed(&e))?;
    Ok(match neighbors {
        Some(ids) => json(&otg::lldp::answers::neighbors_response(
            &states, &agents, &ids,
        )),
        None => json(&otg::lldp::answers::metrics_response(&states, &agents)),
    })
}

/// get_states `bgp_prefixes`: what each peer asked for sent its device.
pub(super) async fn prefixes(
    app: &App,
    peers: Vec<String>,
    v4: bool,
    v6: bool,
) -> Result<Response, Fail> {
    let d = daemons(app)?;
    let states = blocking(move || -> Result<Vec<otg::bgp::BgpPrefixesState>> {
        let mut out = Vec::new();
        for name in &peers {
            let learned = d.learned(name)?.unwrap_or_default();
            out.push(answers::prefixes(name, &learned, v4, v6));
        }
        Ok(out)
    })
    .await?
    .map_err(|e| failed(&e))?;
    Ok(json(&answers::prefixes_response(states)))
}
