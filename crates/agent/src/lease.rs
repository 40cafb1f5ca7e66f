//! The agent's side of a test bed: its lease (an agent whose controller goes silent longer
//! than the lease stops transmitting and detaches everything on its own), the clock its starts
//! are scheduled on, and what its current setup holds.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::clock::StartClock;

pub(crate) fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A handler that panicked mid-update leaves the value as it was written: still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The furthest ahead a start instant may be: a controller sets it a fraction of a second ahead
/// (its lead and the agents' round trips); one minutes or years ahead is a wrong clock.
pub const MAX_LEAD: Duration = Duration::from_secs(60);

/// What an agent keeps between its controller's calls. Every call renews the lease.
#[derive(Debug)]
pub struct Lease {
    lease: Duration,
    clock: StartClock,
    /// When the controller was last heard from.
    heard: Mutex<Instant>,
    /// Why the last setup was dropped by the lease.
    expired: Mutex<Option<String>>,
    /// The setup's ports, in the order its statuses list them.
    ports: Mutex<Vec<String>>,
    /// The flows that arrive here (what a status reads of the receivers).
    arriving: Mutex<Vec<u16>>,
    runs: AtomicU64,
    /// When the current run's first frame was due (0: none).
    started_ns: AtomicU64,
    /// The controller whose setup the agent holds.
    holder: Mutex<Option<String>>,
}

impl Lease {
    pub fn new(lease: Duration, clock: StartClock) -> Self {
        Lease {
            lease,
            clock,
            heard: Mutex::new(Instant::now()),
            expired: Mutex::new(None),
            ports: Mutex::new(Vec::new()),
            arriving: Mutex::new(Vec::new()),
            runs: AtomicU64::new(0),
            started_ns: AtomicU64::new(0),
            holder: Mutex::new(None),
        }
    }

    /// Refuses a setup of `controller` while another controller's is held and its lease is
    /// live: a second controller must not silently take the agent over (issue 40 #2). Says
    /// who holds it.
    pub fn may_set_up(&self, controller: &str) -> Result<(), String> {
        match locked(&self.holder).as_deref() {
            Some(holder) if holder != controller && self.lapsed().is_none() => Err(format!(
                "held by controller {holder} while its lease ({:?}) is live: wait until it \
                 releases this agent or goes silent",
                self.lease
            )),
            _ => Ok(()),
        }
    }

    pub fn clock(&self) -> StartClock {
        self.clock
    }

    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// The controller was heard from now.
    pub fn heard_now(&self) {
        *locked(&self.heard) = Instant::now();
    }

    /// Why the setup goes, when the controller has been silent longer than the lease.
    pub fn lapsed(&self) -> Option<String> {
        let silent = locked(&self.heard).elapsed();
        (silent > self.lease).then(|| {
            format!(
                "the controller was silent for {:.1} s (lease {:?}): stopped transmitting and \
                 released every port",
                silent.as_secs_f64(),
                self.lease
            )
        })
    }

    /// The instant `at_ns` of the agent's clock on this host's monotonic clock, which the
    /// workers wait for once their queues are filled (that takes a while, and varies).
    pub fn instant(&self, at_ns: u64) -> Instant {
        Instant::now() + Duration::from_nanos(at_ns.saturating_sub(self.clock.now_ns()))
    }

    /// A new setup of `controller` holds `ports` and receives the flows `arriving`; the last
    /// expiry is forgotten.
    pub fn set_up(&self, controller: &str, ports: Vec<String>, arriving: Vec<u16>) {
        *locked(&self.holder) = Some(controller.to_owned());
        *locked(&self.ports) = ports;
        *locked(&self.arriving) = arriving;
        *locked(&self.expired) = None;
    }

    /// The setup is gone (torn down, or dropped by the lease: `why`).
    pub fn released(&self, why: Option<String>) {
        locked(&self.ports).clear();
        *locked(&self.holder) = None;
        if why.is_some() {
            *locked(&self.expired) = why;
        }
    }

    pub fn ports(&self) -> Vec<String> {
        locked(&self.ports).clone()
    }

    /// Refuses a port that is not one of the setup's (nothing else is the controller's to
    /// capture), naming those that are.
    pub fn own_port(&self, port: &str) -> Result<(), String> {
        let ports = locked(&self.ports);
        if ports.iter().any(|p| p == port) {
            return Ok(());
        }
        let these = ports.join(", ");
        Err(format!(
            "port {port:?} is not one of this agent's set-up ports ({these})"
        ))
    }

    pub fn arriving(&self) -> Vec<u16> {
        locked(&self.arriving).clone()
    }

    pub fn expired(&self) -> Option<String> {
        locked(&self.expired).clone()
    }

    /// Refuses a start instant further ahead of the agent's clock than [`MAX_LEAD`].
    pub fn check_instant(&self, at_ns: u64) -> Result<(), String> {
        let ahead = Duration::from_nanos(at_ns.saturating_sub(self.clock.now_ns()));
        if ahead > MAX_LEAD {
            return Err(format!(
                "start instant {at_ns} is {:.0} s ahead of this agent's {:?} clock: at most {} s \
                 (are the controller's and the agent's clocks the same kind?)",
                ahead.as_secs_f64(),
                self.clock,
                MAX_LEAD.as_secs()
            ));
        }
        Ok(())
    }

    /// A run starts, its first frame due at `at_ns` on the agent's clock (None: now); returns
    /// its number.
    pub fn start(&self, at_ns: Option<u64>) -> u64 {
        let runs = self.runs.fetch_add(1, Ordering::AcqRel) + 1;
        let at = at_ns.unwrap_or_else(|| self.clock.now_ns());
        self.started_ns.store(at, Ordering::Release);
        runs
    }

    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Acquire)
    }

    /// When the current run's first frame was due, on the agent's clock.
    pub fn started_ns(&self) -> Option<u64> {
        let at = self.started_ns.load(Ordering::Acquire);
        (at != 0).then_some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_lapses_only_after_its_length_of_silence_and_each_call_renews_it() {
        let lease = Lease::new(Duration::from_millis(40), StartClock::Realtime);
        assert_eq!(lease.lapsed(), None);
        std::thread::sleep(Duration::from_millis(60));
        let why = lease.lapsed().expect("lapsed");
        assert!(
            why.contains("silent for 0.") && why.contains("lease 40ms"),
            "{why}"
        );
        lease.heard_now();
        assert_eq!(lease.lapsed(), None);
    }

    #[test]
    fn runs_are_numbered_and_a_release_keeps_why() {
        let lease = Lease::new(Duration::from_secs(1), StartClock::Realtime);
        lease.set_up("c1", vec!["a0".into()], vec![3]);
        assert_eq!((lease.start(Some(7)), lease.started_ns()), (1, Some(7)));
        assert_eq!(lease.start(Some(9)), 2);
        lease.released(Some("silent".into()));
        assert!(lease.ports().is_empty());
        assert_eq!(lease.expired().as_deref(), Some("silent"));
        lease.set_up("c1", vec!["a0".into()], vec![]);
        assert_eq!(lease.expired(), None);
    }

    #[test]
    fn a_start_instant_far_ahead_is_refused() {
        let lease = Lease::new(Duration::from_secs(1), StartClock::Realtime);
        let now = StartClock::Realtime.now_ns();
        assert!(lease.check_instant(now + 1_000_000_000).is_ok());
        assert!(lease.check_instant(now.saturating_sub(1)).is_ok());
        // 584 years ahead, as a u64 of nanoseconds holds.
        let e = lease.check_instant(u64::MAX).unwrap_err();
        assert!(e.contains("at most 60 s"), "{e}");
    }

    #[test]
    fn a_second_controller_is_refused_while_the_first_holds_a_live_lease() {
        let lease = Lease::new(Duration::from_millis(40), StartClock::Realtime);
        assert!(lease.may_set_up("c2").is_ok());
        lease.set_up("c1", vec!["a0".into()], vec![]);
        assert!(lease.may_set_up("c1").is_ok());
        let held = lease.may_set_up("c2").unwrap_err();
        assert!(held.contains("held by controller c1"), "{held}");
        // Once the holder goes silent past its lease, or releases, another may set up.
        std::thread::sleep(Duration::from_millis(60));
        assert!(lease.may_set_up("c2").is_ok());
        lease.heard_now();
        lease.released(None);
        assert!(lease.may_set_up("c2").is_ok());
    }
}
