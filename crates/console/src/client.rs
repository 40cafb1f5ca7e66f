//! The console's OTG client: the few calls it makes, over HTTP(S) with the bearer token.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use ureq::tls::{PemItem, RootCerts, TlsConfig};

use crate::ConsoleError;
use crate::view::{FlowReading, PortReading};

/// The largest answer read (the metrics of many flows, a config).
const ANSWER_LIMIT: u64 = 64 << 20;

/// Where the server is and how to prove who asks.
#[derive(Clone, Default)]
pub struct ClientOptions {
    /// `https://HOST:PORT` (or `http://`).
    pub location: String,
    pub token: Option<String>,
    /// PEM certificates the server's must chain to; None: any is taken (serve's self-signed
    /// one, as snappi's `verify=False` takes it).
    pub ca: Option<Vec<u8>>,
    pub timeout: Duration,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs.
        f.debug_struct("ClientOptions")
            .field("location", &self.location)
            .field("ca", &self.ca.as_ref().map(Vec::len))
            .finish_non_exhaustive()
    }
}

/// One OTG server.
pub struct OtgClient {
    base: String,
    bearer: Option<String>,
    http: ureq::Agent,
}

impl std::fmt::Debug for OtgClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtgClient")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl OtgClient {
    pub fn new(options: &ClientOptions) -> Result<OtgClient, ConsoleError> {
        let tls = match &options.ca {
            Some(pem) => {
                let roots: Vec<_> = ureq::tls::parse_pem(pem)
                    .filter_map(|item| match item {
                        Ok(PemItem::Certificate(c)) => Some(c),
                        _ => None,
                    })
                    .collect();
                if roots.is_empty() {
                    return Err(ConsoleError::Transport(
                        "--ca holds no PEM certificate: give the server's CA certificate in PEM"
                            .into(),
                    ));
                }
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
        Ok(OtgClient {
            base: options.location.trim_end_matches('/').to_owned(),
            bearer: options.token.as_ref().map(|t| format!("Bearer {t}")),
            http: config.into(),
        })
    }

    /// set_config: the whole config, as OTG JSON.
    pub fn set_config(&self, config: &Value) -> Result<(), ConsoleError> {
        let _: Value = self.call("POST", "/config", Some(config))?;
        Ok(())
    }

    /// Every flow's metrics.
    pub fn flows(&self) -> Result<Vec<FlowReading>, ConsoleError> {
        self.metrics("flow")
    }

    /// Every port's metrics.
    pub fn ports(&self) -> Result<Vec<PortReading>, ConsoleError> {
        self.metrics("port")
    }

    /// get_metrics of every `choice` (`flow`, `port`): the answer's `<choice>_metrics`.
    fn metrics<T: serde::de::DeserializeOwned>(
        &self,
        choice: &str,
    ) -> Result<Vec<T>, ConsoleError> {
        let mut answer: Value = self.call(
            "POST",
            "/monitor/metrics",
            Some(&json!({"choice": choice, choice: {}})),
        )?;
        match answer.get_mut(format!("{choice}_metrics")).map(Value::take) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(list) => serde_json::from_value(list).map_err(|e| {
                ConsoleError::Transport(format!(
                    "/monitor/metrics: not OTG's {choice} metrics: {e}"
                ))
            }),
        }
    }

    /// `flow_transmit` `state` of the flows named (every flow, with none); the answer's
    /// warnings.
    pub fn transmit(&self, state: &str, names: &[String]) -> Result<Vec<String>, ConsoleError> {
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Warning {
            warnings: Vec<String>,
        }
        let body = json!({"choice": "traffic", "traffic": {"choice": "flow_transmit",
            "flow_transmit": {"state": state, "flow_names": names}}});
        let w: Warning = self.call("POST", "/control/state", Some(&body))?;
        Ok(w.warnings)
    }

    /// Flow `name`'s rate times `factor`, in the unit its config gives it (update_config with
    /// the flow as get_config has it); the new rate in words.
    pub fn scale_rate(&self, name: &str, factor: f64) -> Result<String, ConsoleError> {
        let config: Value = self.call("GET", "/config", None::<&Value>)?;
        let mut flow = config
            .get("flows")
            .and_then(Value::as_array)
            .and_then(|flows| flows.iter().find(|f| f["name"] == name))
            .cloned()
            .ok_or_else(|| ConsoleError::Transport(format!("no flow '{name}' in the config")))?;
        let said = scale(&mut flow, factor)?;
        let body = json!({"choice": "flows",
            "flows": {"property_names": ["rate"], "flows": [flow]}});
        let _: Value = self.call("PATCH", "/config", Some(&body))?;
        Ok(said)
    }

    fn call<B: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&B>,
    ) -> Result<T, ConsoleError> {
        let url = format!("{}{path}", self.base);
        let bearer = self.bearer.as_deref().unwrap_or("");
        let unreachable = |e: ureq::Error| ConsoleError::Transport(e.to_string());
        let sent = match (method, body) {
            ("GET", _) => {
                let r = self.http.get(&url);
                if bearer.is_empty() {
                    r
                } else {
                    r.header("Authorization", bearer)
                }
                .call()
            }
            ("PATCH", Some(b)) => {
                let r = self.http.patch(&url);
                if bearer.is_empty() {
                    r
                } else {
                    r.header("Authorization", bearer)
                }
                .send_json(b)
            }
            (_, Some(b)) => {
                let r = self.http.post(&url);
                if bearer.is_empty() {
                    r
                } else {
                    r.header("Authorization", bearer)
                }
                .send_json(b)
            }
            (_, None) => {
                let r = self.http.post(&url);
                if bearer.is_empty() {
                    r
                } else {
                    r.header("Authorization", bearer)
                }
                .send_empty()
            }
        };
        let mut response = sent.map_err(unreachable)?;
        let status = response.status().as_u16();
        let bytes = response
            .body_mut()
            .with_config()
            .limit(ANSWER_LIMIT)
            .read_to_vec()
            .map_err(unreachable)?;
        if !(200..300).contains(&status) {
            return Err(ConsoleError::Refused {
                status,
                errors: errors_of(&String::from_utf8_lossy(&bytes)),
            });
        }
        let bytes: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
        serde_json::from_slice(bytes)
            .map_err(|e| ConsoleError::Transport(format!("{path}: not an OTG answer: {e}")))
    }
}

/// A flow's `rate` node times `factor`, in its own unit (OTG's default: 1000 pps); in words.
fn scale(flow: &mut Value, factor: f64) -> Result<String, ConsoleError> {
    let rate = flow
        .as_object_mut()
        .ok_or_else(|| ConsoleError::Transport("a flow of the config is not an object".into()))?
        .entry("rate")
        .or_insert_with(|| json!({}));
    let choice = rate
        .get("choice")
        .and_then(Value::as_str)
        .unwrap_or("pps")
        .to_owned();
    let default = match choice.as_str() {
        "pps" => 1000.0,
        "percentage" => 100.0,
        _ => 0.0,
    };
    let now = rate.get(&choice).and_then(Value::as_f64).unwrap_or(default);
    let new = now * factor;
    if !(new.is_finite() && new > 0.0) {
        return Err(ConsoleError::Transport(format!(
            "the flow's rate ({choice} {now}) cannot be scaled"
        )));
    }
    // Frames and bits per second are whole numbers in the models.
    let new = if choice == "percentage" {
        json!(new)
    } else {
        let whole = new.round().max(1.0);
        if whole == now {
            return Err(ConsoleError::Transport(format!(
                "the flow's rate is {choice} {now}: it goes no lower in whole {choice}"
            )));
        }
        json!(whole as u64)
    };
    rate["choice"] = json!(choice);
    rate[&choice] = new;
    Ok(format!("{choice} {}", rate[&choice]))
}

/// The errors of an OTG error body, joined, or the body as it is.
fn errors_of(text: &str) -> String {
    #[derive(Deserialize)]
    struct Body {
        errors: Vec<String>,
    }
    match serde_json::from_str::<Body>(text) {
        Ok(b) if !b.errors.is_empty() => b.errors.join("; "),
        _ => text.chars().take(300).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_scaled_in_its_own_unit() {
        let mut f = json!({"name": "a", "rate": {"choice": "mbps", "mbps": 10}});
        assert_eq!(scale(&mut f, 2.0).unwrap(), "mbps 20");
        let mut f = json!({"name": "b"});
        assert_eq!(scale(&mut f, 0.5).unwrap(), "pps 500");
        assert_eq!(f["rate"], json!({"choice": "pps", "pps": 500}));
        let mut f = json!({"name": "c", "rate": {"choice": "percentage", "percentage": 30}});
        assert_eq!(scale(&mut f, 0.5).unwrap(), "percentage 15.0");
        let mut f = json!({"name": "d", "rate": {"choice": "gbps", "gbps": 1}});
        assert!(
            scale(&mut f, 0.5)
                .unwrap_err()
                .to_string()
                .contains("no lower")
        );
        assert_eq!(f["rate"]["gbps"], 1, "left as it was");
    }

    #[test]
    fn a_refusal_reads_as_the_servers_own_words() {
        assert_eq!(
            errors_of(r#"{"code":409,"errors":["not running","x"]}"#),
            "not running; x"
        );
        assert_eq!(errors_of("bad gateway"), "bad gateway");
    }
}
