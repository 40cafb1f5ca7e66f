//! `--backend auto`: reads an interface's facts, lets `linerate_port::ladder` choose the rung,
//! and opens it. What the run asks that is known before the port opens ([`PortNeeds`]: AF_XDP
//! queues, more workers than live's program serves) rules live out in the choice itself, with
//! the reason. The rest can only be known after: live refuses when it opens (a veth whose peer
//! has no XDP program) or when a run's plan is one its program cannot lay out
//! (`LiveError::Unsupported`, raised before any frame is sent; the plan is compiled for the
//! open port, so it cannot be asked earlier), and then the ladder goes on down with that
//! reason, which the report states.

use linerate_engine::{EngineError, Transmitter};
use linerate_port::ladder::{Choice, PortFacts};

use crate::error::Result;
use crate::options::AfXdpOptions;
use crate::sender::Sender;

/// What `auto` keeps to choose again: the interface's facts, the AF_XDP options asked for and
/// what the run needs.
#[derive(Debug, Clone)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) struct Auto {
    facts: PortFacts,
    afxdp: AfXdpOptions,
    needs: PortNeeds,
}

/// What a run asks of its port that is known before the port opens, for `auto` to choose by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortNeeds {
    /// `--queues` was given: it names AF_XDP queues.
    pub queues: bool,
    /// Transmit workers (one per core).
    pub workers: usize,
}

#[cfg(target_os = "linux")]
impl PortNeeds {
    /// Why the live backend cannot take such a run, when it cannot.
    fn not_live(&self) -> Option<String> {
        use linerate_live::layout::MAX_WORKERS;
        if self.queues {
            Some("the queues named are AF_XDP's, and live frames leave on each worker's CPU".into())
        } else if self.workers > MAX_WORKERS {
            Some(format!(
                "{} workers, and its program serves at most {MAX_WORKERS}",
                self.workers
            ))
        } else {
            None
        }
    }

    /// What the ladder weighs of this run; `live_refuses` is why live cannot take it (known up
    /// front, [`PortNeeds::not_live`], or said by live itself).
    fn asks<'a>(&self, live_refuses: Option<&'a str>) -> linerate_port::ladder::RunAsks<'a> {
        linerate_port::ladder::RunAsks {
            workers: self.workers,
            queues_named: self.queues,
            live_refuses,
        }
    }
}

/// Opens the rung the ladder chooses for `iface` and a run that `needs` what it says.
#[cfg(target_os = "linux")]
pub(crate) fn open(iface: &str, afxdp: AfXdpOptions, needs: PortNeeds) -> Result<Sender> {
    use linerate_port::ladder::{Rung, choose};
    let auto = Auto {
        facts: facts(iface)?,
        afxdp,
        needs,
    };
    let not_live = needs.not_live();
    let first = choose(&auto.facts, &needs.asks(not_live.as_deref()));
    match open_rung(&first, iface, afxdp) {
        Ok(port) => Ok(Sender::chosen(port, first, auto)),
        Err(e) if first.rung == Rung::Live => {
            let why = e.to_string();
            let next = choose(&auto.facts, &needs.asks(Some(&why)));
            let port = open_rung(&next, iface, afxdp)?;
            Ok(Sender::chosen(port, next, auto))
        }
        Err(e) => Err(e),
    }
}

/// Elsewhere there is one interface backend.
#[cfg(not(target_os = "linux"))]
pub(crate) fn open(iface: &str, afxdp: AfXdpOptions, _needs: PortNeeds) -> Result<Sender> {
    crate::sender::open(crate::options::Backend::Bpf, iface, afxdp)
}

/// The next rung and its port when `error` is live refusing a run's plan on a port `auto`
/// opened; None for any other error, which stays the run's.
#[cfg(target_os = "linux")]
pub(crate) fn after_refusal(
    auto: Option<&Auto>,
    error: &EngineError,
) -> Result<Option<(Box<dyn Transmitter>, Choice)>> {
    let (Some(auto), Some(why)) = (auto, live_refusal(error)) else {
        return Ok(None);
    };
    let next = linerate_port::ladder::choose(&auto.facts, &auto.needs.asks(Some(why)));
    let port = open_rung(&next, &auto.facts.name, auto.afxdp)?;
    Ok(Some((port, next)))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn after_refusal(
    _auto: Option<&Auto>,
    _error: &EngineError,
) -> Result<Option<(Box<dyn Transmitter>, Choice)>> {
    Ok(None)
}

/// Why live cannot lay out a plan, when that is what `error` is.
#[cfg(target_os = "linux")]
fn live_refusal(error: &EngineError) -> Option<&str> {
    let EngineError::Transmitter(t) = error else {
        return None;
    };
    match (&**t as &(dyn std::error::Error + 'static)).downcast_ref() {
        Some(linerate_live::LiveError::Unsupported { why }) => Some(why),
        _ => None,
    }
}

#[cfg(target_os = "linux")]
fn open_rung(choice: &Choice, iface: &str, afxdp: AfXdpOptions) -> Result<Box<dyn Transmitter>> {
    use crate::options::{Backend, XdpMode};
    use linerate_port::ladder::Rung;
    let (backend, afxdp) = match choice.rung {
        Rung::AfxdpZeroCopy => (Backend::Afxdp, afxdp),
        Rung::Live => (Backend::Live, afxdp),
        // The ladder knows zero-copy will not bind: skip AF_XDP's own try of it, unless a
        // mode was asked for.
        Rung::AfxdpCopy => {
            let mode = match afxdp.mode {
                XdpMode::Auto => XdpMode::Copy,
                m => m,
            };
            (Backend::Afxdp, AfXdpOptions { mode, ..afxdp })
        }
        Rung::Afpacket => (Backend::Afpacket, afxdp),
    };
    Ok(crate::sender::open(backend, iface, afxdp)?.into_port())
}

/// What the ladder reads about `iface`: sysfs, the driver's XDP features, the kernel release,
/// and whether an AF_XDP socket opens.
#[cfg(target_os = "linux")]
fn facts(iface: &str) -> Result<PortFacts> {
    let i = linerate_xdp::interface(iface)?;
    let queues = i.bindable_queues();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_err(|e| linerate_port::PortError::io("read /proc/sys/kernel/osrelease", e))?;
    Ok(PortFacts {
        name: i.name,
        driver: i.driver,
        xdp_features: i.xdp_features,
        virtual_device: i.virtual_device,
        // A release the ladder cannot read is taken as too old for live, the rung that needs it.
        kernel: linerate_port::ladder::kernel_version(&release).unwrap_or((0, 0)),
        af_xdp: linerate_afxdp::available(),
        queues,
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use linerate_live::LiveError;
    use linerate_port::ladder::{Rung, choose};

    /// What is known before the port opens rules live out in the choice, which says why; a
    /// plain run on the same interface gets live.
    #[test]
    fn needs_known_up_front_pass_over_live_with_the_reason() {
        let veth = PortFacts {
            name: "lr0".into(),
            driver: Some("veth".into()),
            xdp_features: Some(0x7),
            virtual_device: true,
            kernel: (6, 18),
            af_xdp: true,
            queues: 1,
        };
        let plain = PortNeeds {
            queues: false,
            workers: 2,
        };
        let choose_for = |needs: PortNeeds| choose(&veth, &needs.asks(needs.not_live().as_deref()));
        assert_eq!(plain.not_live(), None);
        assert_eq!(choose_for(plain).rung, Rung::Live);
        // More workers than live serves, and than a one-queue veth binds AF_XDP sockets.
        let many = PortNeeds {
            queues: false,
            workers: linerate_live::layout::MAX_WORKERS + 1,
        };
        let choice = choose_for(many);
        assert_eq!(choice.rung, Rung::Afpacket);
        assert!(
            choice
                .why
                .contains("65 workers, and its program serves at most 64")
                && choice
                    .why
                    .contains("65 workers need an AF_XDP queue each and it has 1"),
            "{}",
            choice.why
        );
        let queues = PortNeeds {
            queues: true,
            workers: 1,
        };
        let choice = choose_for(queues);
        assert_eq!(choice.rung, Rung::AfxdpCopy);
        assert!(choice.why.contains("queues named"), "{}", choice.why);
    }

    /// Only live's refusal of a plan sends `auto` down the ladder: a link that is down, or the
    /// engine's own refusal, stays the run's error.
    #[test]
    fn only_lives_refusal_of_a_plan_goes_down_the_ladder() {
        let refused = EngineError::from(LiveError::Unsupported {
            why: "2 interleaved streams".into(),
        });
        assert_eq!(live_refusal(&refused), Some("2 interleaved streams"));
        let down = EngineError::from(LiveError::Down {
            iface: "lr0".into(),
            state: "down".into(),
        });
        assert_eq!(live_refusal(&down), None);
        assert_eq!(live_refusal(&EngineError::NoWorkers), None);
        let facts = PortFacts {
            name: "lr0".into(),
            driver: Some("veth".into()),
            xdp_features: Some(0x7),
            virtual_device: true,
            kernel: (6, 18),
            af_xdp: true,
            queues: 1,
        };
        let auto = Auto {
            facts,
            afxdp: AfXdpOptions::default(),
            needs: PortNeeds::default(),
        };
        // Without `auto`'s facts (a backend asked by name) nothing reopens.
        assert!(after_refusal(None, &refused).unwrap().is_none());
        assert!(after_refusal(Some(&auto), &down).unwrap().is_none());
    }
}
