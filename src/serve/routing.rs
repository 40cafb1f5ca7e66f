//! The devices' control planes of a config: started with it, stopped and started by
//! `protocol.all`, route ranges withdrawn and advertised by `protocol.route`, and read for
//! get_metrics (`bgpv4`, `bgpv6`, `isis`, `ospfv2`, `ospfv3`, `lldp`) and get_states
//! (`bgp_prefixes`, `isis_lsps`, `ospfv2_lsas`, `ospfv3_lsas`, `lldp_neighbors`) from the
//! daemons themselves.

use axum::response::Response;
use linerate_otg as otg;
use linerate_routing::Routers;
use otg::bgp::answers;

use super::state::{App, Daemons, Fail, blocking, json, warnings};

fn lock(d: &Daemons) -> std::sync::MutexGuard<'_, Routers> {
    d.lock().unwrap_or_else(|p| p.into_inner())
}

/// The config's daemons, when it has any.
fn daemons(app: &App) -> Result<Daemons, Fail> {
    app.lock().routers.clone().ok_or_else(|| {
        Fail::bad("the config has no device with a control plane (devices[].bgp, devices[].isis, devices[].ospfv2, devices[].ospfv3, lldp[])")
    })
}

fn failed(e: &linerate_routing::RoutingError) -> Fail {
    Fail::internal(e)
}

/// Fails naming a daemon that died since it was last asked: every metrics answer says so.
pub(super) async fn check(app: &App) -> Result<(), Fail> {
    let Some(d) = app.lock().routers.clone() else {
        return Ok(());
    };
    blocking(move || lock(&d).check())
        .await?
        .map_err(|e| failed(&e))
}

/// `protocol.all`: every daemon stopped or started again.
pub(super) async fn set_running(app: &App, start: bool) -> Result<Response, Fail> {
    let d = daemons(app)?;
    blocking(move || lock(&d).set_running(start))
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
        let mut r = lock(&d);
        names
            .iter()
            .try_for_each(|n| r.announce(n, advertise).map(|_| ()))
    })
    .await?
    .map_err(|e| failed(&e))?;
    Ok(warnings())
}

/// get_metrics `bgpv4` / `bgpv6`: the peers of the family asked (all, with none named).
pub(super) async fn metrics(app: &App, v6: bool, peers: Vec<String>) -> Result<Response, Fail> {
    let d = daemons(app)?;
    let mapped = app.mapped()?;
    let sessions = blocking(move || lock(&d).sessions())
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
    let views = blocking(move || lock(&d).isis())
        .await?
        .map_err(|e| failed(&e))?;
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
    let states = blocking(move || lock(&d).ospf())
        .await?
        .map_err(|e| failed(&e))?;
    Ok(if lsas {
        json(&otg::ospfv2::answers::lsas_response(&states, &routers))
    } else {
        json(&otg::ospfv2::answers::metrics_response(&states, &routers))
    })
}

/// get_metrics `ospfv3` (`lsas` false) or get_states `ospfv3_lsas` (true), as [`ospfv2`].
pub(super) async fn ospfv3(app: &App, routers: Vec<String>, lsas: bool) -> Result<Response, Fail> {
    let d = daemons(app)?;
    let states = blocking(move || lock(&d).ospf6())
        .await?
        .map_err(|e| failed(&e))?;
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
    let states = blocking(move || lock(&d).lldp())
        .await?
        .map_err(|e| failed(&e))?;
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
    let states = blocking(
        move || -> Result<Vec<otg::bgp::BgpPrefixesState>, linerate_routing::RoutingError> {
            let mut r = lock(&d);
            let mut out = Vec::new();
            for name in &peers {
                let learned = r.learned(name)?.unwrap_or_default();
                out.push(answers::prefixes(name, &learned, v4, v6));
            }
            Ok(out)
        },
    )
    .await?
    .map_err(|e| failed(&e))?;
    Ok(json(&answers::prefixes_response(states)))
}
