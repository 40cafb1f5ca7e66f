use thiserror::Error;

/// Why a benchmark could not start or finish. Every input is checked before the first trial,
/// so a bad setting never costs a half-done run.
#[derive(Debug, Error)]
pub enum Error {
    #[error("loss ratio {0} is out of range: a goal's loss ratio must be at least 0 and below 1")]
    LossRatio(f64),
    #[error("exceed ratio {0} is out of range: it must be at least 0 and below 1")]
    ExceedRatio(f64),
    #[error("width {0} is out of range: the precision must be above 0 and below 1 (relative)")]
    Width(f64),
    #[error("{0} must be longer than zero")]
    ZeroDuration(&'static str),
    #[error(
        "initial trial duration {initial_s} s is longer than the final trial duration {final_s} s"
    )]
    InitialAfterFinal { initial_s: f64, final_s: f64 },
    #[error("frame size {size} B is below the minimum of {min} B (the signature must fit)")]
    SizeTooSmall { size: u32, min: u32 },
    #[error("load range {min_fps}..={max_fps} fps is invalid: need 0 < min < max, both finite")]
    LoadRange { min_fps: f64, max_fps: f64 },
    #[error("rate {0} fps is invalid: it must be finite and above 0")]
    Rate(f64),
    #[error("no search goal given")]
    NoGoals,
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    #[error(
        "step {0} is out of range: it must be above 0 and at most 0.1 (RFC 2544 asks 10 % or finer)"
    )]
    Step(f64),
    #[error("the trial at {rate_fps} fps sent nothing: no loss ratio can be judged")]
    NothingSent { rate_fps: f64 },
    #[error("the trial at {rate_fps} fps returned no latency summary")]
    NoLatency { rate_fps: f64 },
    #[error("the search did not settle within {0} trials")]
    TooManyTrials(usize),
    #[error("trial at {rate_fps} fps failed")]
    Trial {
        rate_fps: f64,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
