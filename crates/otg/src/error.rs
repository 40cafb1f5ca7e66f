use serde::Serialize;

/// One thing in a request linerate cannot do or does not understand, at a JSON path such as
/// `flows[0].packet[2].ipv4.src.values`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub path: String,
    pub why: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.why)
    }
}

/// Every refusal of one request: a config is read to the end, so one answer lists all of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct Refusals(pub Vec<Refusal>);

impl Refusals {
    pub fn one(path: impl Into<String>, why: impl Into<String>) -> Self {
        Self(vec![Refusal {
            path: path.into(),
            why: why.into(),
        }])
    }
}

/// OTG `Error` (components/schemas/Error): the body of every 4xx/5xx answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ErrorBody {
    pub code: i32,
    /// `validation` (the request) or `internal` (the server or the system).
    pub kind: String,
    pub errors: Vec<String>,
}

impl ErrorBody {
    pub fn validation(code: i32, errors: Vec<String>) -> Self {
        Self {
            code,
            kind: "validation".into(),
            errors,
        }
    }

    pub fn internal(code: i32, errors: Vec<String>) -> Self {
        Self {
            code,
            kind: "internal".into(),
            errors,
        }
    }
}

impl From<&Refusals> for ErrorBody {
    fn from(r: &Refusals) -> Self {
        Self::validation(400, r.0.iter().map(ToString::to_string).collect())
    }
}
