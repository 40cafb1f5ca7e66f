//! get_states of a config with devices: each host's gateway and the MAC it resolved (or was
//! given), read from the test bed's places.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::Mutex;

use anyhow::Result;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use linerate_hosts::NeighbourReport;
use linerate_otg as otg;
use otg::requests::StatesAsk;

use super::state::{App, Counting, Fail, blocking};

/// POST /monitor/states: `ipv4_neighbors` or `ipv6_neighbors`, each host's gateway and the
/// link-layer address it resolved (or was given); other states are protocols linerate does not
/// run.
pub(super) async fn get_states(State(app): State<Arc<App>>, body: Bytes) -> Result<Response, Fail> {
    let req: otg::StatesRequest = otg::parse_json(&body)?;
    let (mapped, counting) = app.current()?;
    let asked = match otg::requests::states(&req, &mapped).map_err(Fail::bad)? {
        StatesAsk::Neighbors(n) => n,
        StatesAsk::BgpPrefixes { peers, v4, v6 } => {
            return super::routing::prefixes(&app, peers, v4, v6).await;
        }
        StatesAsk::IsisLsps(routers) => return super::routing::isis(&app, routers, true).await,
        StatesAsk::Ospfv2Lsas(routers) => return super::routing::ospfv2(&app, routers, true).await,
        StatesAsk::Ospfv3Lsas(routers) => return super::routing::ospfv3(&app, routers, true).await,
        StatesAsk::LldpNeighbors { agents, neighbors } => {
            return super::routing::lldp(&app, agents, Some(neighbors)).await;
        }
    };
    let learnt = if mapped.hosts.is_empty() {
        Default::default()
    } else {
        blocking(move || neighbours(&counting))
            .await?
            .map_err(|e| Fail::internal(&format!("{e:#}")))?
    };
    let response = otg::states::neighbors(&mapped, &learnt, asked.v6, &asked.ethernets);
    Ok(axum::Json(response).into_response())
}

/// What each OTG port's hosts asked for, read from its place's receiver (or asked of its
/// agent). A neighbour whose answers conflicted is said on stderr: get_states has no
/// warnings, and shows the MAC the flows use.
fn neighbours(counting: &Counting) -> Result<BTreeMap<String, NeighbourReport>> {
    let mut learnt = counting.counts.neighbours()?;
    let mut out = BTreeMap::new();
    for (name, at) in &counting.ports {
        if let Some(ns) = at.rx.and_then(|g| learnt.get_mut(g)) {
            for line in ns.conflicts(name) {
                warn_once(line);
            }
            out.insert(name.clone(), std::mem::take(ns));
        }
    }
    Ok(out)
}

/// Says `line` on stderr the first time only: a client polls get_states.
fn warn_once(line: String) {
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.len() < 1024 && said.insert(line.clone()) {
        eprintln!("linerate: warning: {line}");
    }
}
