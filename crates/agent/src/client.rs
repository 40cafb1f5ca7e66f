//! The controller's end: one client per agent, blocking (the controller calls it from its own
//! threads), over TLS with the bearer token.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

use crate::clock::{self, Offset, Sample, StartClock};
use crate::error::AgentError;
use crate::proto::{
    self, Capture, CaptureFile, ClockReading, Neighbours, Setup, SetupReply, Start, Started, Status,
};

/// Exchanges an offset measurement makes at least, and at most; the shortest round trip's is
/// kept.
const MIN_SAMPLES: usize = 8;
const MAX_SAMPLES: usize = 64;
/// The largest JSON answer read (a status of many flows), and the largest capture file.
const ANSWER_LIMIT: u64 = 64 << 20;
const FILE_LIMIT: u64 = 1 << 30;

/// How the controller reaches its agents.
#[derive(Clone)]
pub struct ClientOptions {
    /// The agents' bearer token.
    pub token: String,
    /// PEM certificates the agents' must chain to. None: any certificate is taken (an agent's
    /// self-signed one, as snappi's `verify=False` takes ixia-c's); the token still guards
    /// the agent, but not the controller against a host posing as the agent.
    pub ca: Option<Vec<u8>>,
    /// Plain HTTP (agents started with --http).
    pub http: bool,
    /// Longest wait for one answer.
    pub timeout: Duration,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs.
        f.debug_struct("ClientOptions")
            .field("ca", &self.ca.as_ref().map(Vec::len))
            .field("http", &self.http)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// One agent, `ADDR:PORT`.
#[derive(Clone)]
pub struct AgentClient {
    pub agent: String,
    base: String,
    bearer: String,
    http: ureq::Agent,
}

impl std::fmt::Debug for AgentClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentClient")
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

/// The certificates of a PEM file of CAs (`--agent-ca`); the error says why there are none.
/// The controller calls it before it starts, so a wrong file is refused once, not at every
/// agent's setup.
pub fn ca_roots(pem: &[u8]) -> Result<Vec<Certificate<'static>>, String> {
    let roots: Vec<Certificate<'static>> = ureq::tls::parse_pem(pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect();
    if roots.is_empty() {
        return Err("holds no PEM certificate: give the agents' CA certificate in PEM".into());
    }
    Ok(roots)
}

impl AgentClient {
    pub fn new(agent: &str, options: &ClientOptions) -> Result<AgentClient, AgentError> {
        let tls = match &options.ca {
            Some(pem) => {
                let roots = ca_roots(pem).map_err(|_| AgentError::NoCaCertificate)?;
                TlsConfig::builder()
                    .root_certs(RootCerts::Specific(Arc::new(roots)))
                    .build()
            }
            None => TlsConfig::builder().disable_verification(true).build(),
        };
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(options.timeout))
            .http_status_as_error(false)
            .tls_config(tls)
            .build();
        Ok(AgentClient {
            agent: agent.to_owned(),
            base: format!("{}://{agent}", if options.http { "http" } else { "https" }),
            bearer: format!("Bearer {}", options.token),
            http: config.into(),
        })
    }

    pub fn setup(&self, setup: &Setup) -> Result<SetupReply, AgentError> {
        self.call("setup", "POST", proto::SETUP, Some(setup))
    }

    /// Detaches everything the setup made (a teardown with nothing set up is fine).
    pub fn teardown(&self) -> Result<(), AgentError> {
        self.call::<(), serde_json::Value>("teardown", "DELETE", proto::SETUP, None)
            .map(drop)
    }

    /// Starts the run set up at `at_ns` on the agent's clock; answers the run's number.
    pub fn start(&self, at_ns: Option<u64>) -> Result<u64, AgentError> {
        self.call::<_, Started>("start", "POST", proto::START, Some(&Start { at_ns }))
            .map(|s| s.runs)
    }

    pub fn stop(&self) -> Result<(), AgentError> {
        self.call::<(), serde_json::Value>("stop", "POST", proto::STOP, None)
            .map(drop)
    }

    /// Steers flows of the agent's share while they run.
    pub fn steer(&self, steer: &proto::Steer) -> Result<(), AgentError> {
        let _: serde_json::Value = self.call("steer flows", "POST", proto::FLOWS, Some(steer))?;
        Ok(())
    }

    pub fn status(&self) -> Result<Status, AgentError> {
        self.call::<(), _>("status", "GET", proto::STATUS, None)
    }

    /// What each port's hosts learned, in the setup's port order.
    pub fn neighbours(&self) -> Result<Neighbours, AgentError> {
        self.call::<(), _>("neighbours", "GET", proto::NEIGHBOURS, None)
    }

    /// One call of the agent's control planes, its answer as the call's type (a daemon's whole
    /// table can be large: the file limit).
    pub fn routing<T: DeserializeOwned>(&self, ask: &proto::RoutingAsk) -> Result<T, AgentError> {
        self.answer("routing", "POST", proto::ROUTING, Some(ask), FILE_LIMIT)
    }

    pub fn capture(&self, port: &str, start: bool) -> Result<(), AgentError> {
        let body = Capture {
            port: port.to_owned(),
            start,
        };
        self.call::<_, serde_json::Value>("capture", "POST", proto::CAPTURE, Some(&body))
            .map(drop)
    }

    /// The capture of `port` so far, as a file.
    pub fn capture_file(&self, port: &str, pcapng: bool) -> Result<Vec<u8>, AgentError> {
        let body = CaptureFile {
            port: port.to_owned(),
            pcapng,
        };
        self.send(
            "capture file",
            "POST",
            proto::CAPTURE_FILE,
            Some(&body),
            FILE_LIMIT,
        )
    }

    fn unreachable(&self, what: &str, e: ureq::Error) -> AgentError {
        AgentError::Unreachable {
            agent: self.agent.clone(),
            why: format!("{what}: {e}"),
        }
    }

    /// The agent's clock minus this host's (the same clock, as the agent reports which): the
    /// exchange with the shortest round trip of at least [`MIN_SAMPLES`], more (up to
    /// [`MAX_SAMPLES`]) while the best is still uncertain by more than `target` — a busy
    /// moment on either host can slow a whole burst of exchanges.
    pub fn offset(&self, target: Duration) -> Result<(StartClock, Offset), AgentError> {
        let mut samples = Vec::with_capacity(MAX_SAMPLES);
        let mut kind = StartClock::Realtime;
        let target = target.as_nanos() as u64;
        for n in 0..=MAX_SAMPLES {
            let t1 = kind.now_ns();
            let r: ClockReading = self.call::<(), _>("clock", "GET", proto::CLOCK, None)?;
            let t4 = kind.now_ns();
            if n == 0 {
                // The first exchange learns which clock the agent keeps; it is not a sample.
                kind = r.clock;
                continue;
            }
            samples.push(Sample {
                t1,
                t2: r.received_ns,
                t3: r.sent_ns,
                t4,
            });
            let good = clock::best(&samples).is_some_and(|b| b.uncertainty_ns <= target);
            if samples.len() >= MIN_SAMPLES && good {
                break;
            }
        }
        let best = clock::best(&samples).ok_or_else(|| AgentError::Protocol {
            agent: self.agent.clone(),
            what: "clock".into(),
            why: "no exchange completed".into(),
        })?;
        Ok((kind, best))
    }

    /// A JSON answer to a request with a JSON body (or none).
    fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        what: &str,
        method: &str,
        path: &str,
        body: Option<&B>,
    ) -> Result<T, AgentError> {
        self.answer(what, method, path, body, ANSWER_LIMIT)
    }

    /// [`Self::call`] with answers up to `limit` bytes.
    fn answer<B: Serialize, T: DeserializeOwned>(
        &self,
        what: &str,
        method: &str,
        path: &str,
        body: Option<&B>,
        limit: u64,
    ) -> Result<T, AgentError> {
        let bytes = self.send(what, method, path, body, limit)?;
        let bytes: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
        serde_json::from_slice(bytes).map_err(|e| AgentError::Protocol {
            agent: self.agent.clone(),
            what: what.into(),
            why: e.to_string(),
        })
    }

    /// The body of a success (up to `limit` bytes); a refusal with the agent's own words.
    fn send<B: Serialize>(
        &self,
        what: &str,
        method: &str,
        path: &str,
        body: Option<&B>,
        limit: u64,
    ) -> Result<Vec<u8>, AgentError> {
        let url = format!("{}{path}", self.base);
        let sent = match (method, body) {
            ("GET", _) => self
                .http
                .get(&url)
                .header("Authorization", &self.bearer)
                .call(),
            ("DELETE", _) => self
                .http
                .delete(&url)
                .header("Authorization", &self.bearer)
                .call(),
            (_, Some(b)) => self
                .http
                .post(&url)
                .header("Authorization", &self.bearer)
                .send_json(b),
            (_, None) => self
                .http
                .post(&url)
                .header("Authorization", &self.bearer)
                .send_empty(),
        };
        let mut response = sent.map_err(|e| self.unreachable(what, e))?;
        let status = response.status().as_u16();
        let bytes = response
            .body_mut()
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(|e| self.unreachable(what, e))?;
        if !(200..300).contains(&status) {
            return Err(AgentError::Refused {
                agent: self.agent.clone(),
                what: what.into(),
                status,
                errors: errors_of(&String::from_utf8_lossy(&bytes)),
            });
        }
        Ok(bytes)
    }
}

/// The errors of an OTG error body (`{"code":…,"errors":[…]}`), or the body as it is.
fn errors_of(text: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Body {
        errors: Vec<String>,
    }
    match serde_json::from_str::<Body>(text) {
        Ok(b) if !b.errors.is_empty() => b.errors,
        _ => vec![text.chars().take(500).collect()],
    }
}

#[cfg(test)]
mod tests {
    use super::errors_of;

    #[test]
    fn refusals_read_as_the_agents_own_words() {
        assert_eq!(
            errors_of(r#"{"code":400,"kind":"validation","errors":["a","b"]}"#),
            vec!["a", "b"]
        );
        assert_eq!(errors_of("gateway timeout"), vec!["gateway timeout"]);
    }
}
