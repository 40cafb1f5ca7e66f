//! The LACP state machines of one LAG's member ports (IEEE 802.1AX-2014 §6.4), as pure
//! functions of the time and of the frames received, so they are tested without a link:
//! - **receive**: `Current` while the partner's PDUs keep coming, `Expired` one short timeout
//!   (3 s) after the last (the actor asks for short timeouts, the partner goes out of sync),
//!   `Defaulted` one more later (the partner forgotten); the wait in `Current` is the actor's
//!   timeout, short (3 s) or long (90 s);
//! - **periodic transmit**: fast (1 s) while the partner asks for short timeouts, slow (30 s)
//!   otherwise, or the member's own period; none when both ends are passive; a change of state
//!   is sent at once (at most 3 PDUs a second, §6.4.16);
//! - **selection**: the members whose partners have the same system priority, system and key
//!   aggregate, the first member to hear a partner choosing which (one aggregator a LAG);
//! - **mux**, coupled control: a selected member is attached (in sync), and collecting and
//!   distributing once its partner is in sync too.
//!
//! A static LAG has no machine: a member is up while its link is.

use std::time::Duration;

use crate::pdu::{FRAME_LEN, Info, Pdu, state};
use crate::spec::{LagSpec, MemberLacp, Protocol};

/// 802.1AX's Short_Timeout_Time and Long_Timeout_Time.
pub const SHORT_TIMEOUT: Duration = Duration::from_secs(3);
pub const LONG_TIMEOUT: Duration = Duration::from_secs(90);
/// Fast_Periodic_Time and Slow_Periodic_Time.
pub const FAST_PERIODIC: Duration = Duration::from_secs(1);
pub const SLOW_PERIODIC: Duration = Duration::from_secs(30);
/// At most three LACPDUs in any Fast_Periodic_Time (§6.4.16).
const TX_GAP: Duration = Duration::from_millis(334);

/// The receive machine's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxState {
    /// The link is down (or the protocol stopped).
    Disabled,
    Expired,
    Defaulted,
    Current,
}

/// The mux machine's state (coupled control: collecting and distributing together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mux {
    Detached,
    Attached,
    CollectingDistributing,
}

/// A member as metrics read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberView {
    /// The OTG port.
    pub port: String,
    pub pdus_rx: u64,
    pub pdus_tx: u64,
    /// Slow Protocols frames of subtype LACP that did not read as LACPDUs.
    pub rx_errors: u64,
    pub actor: Info,
    pub partner: Info,
    pub rx: RxState,
    pub mux: Mux,
    pub link_up: bool,
    /// In the LAG: collecting and distributing (LACP), or its link up (static).
    pub up: bool,
}

#[derive(Debug, Clone)]
struct Member {
    port: String,
    mac: [u8; 6],
    cfg: MemberLacp,
    actor: Info,
    partner: Info,
    rx: RxState,
    /// When the receive machine's current_while timer runs out.
    current_while: Duration,
    mux: Mux,
    selected: bool,
    /// Need To Transmit.
    ntt: bool,
    next_periodic: Duration,
    last_tx: Option<Duration>,
    link_up: bool,
    /// LACP not stopped on this member alone (`protocol.lacp.admin`).
    admin: bool,
    pdus_rx: u64,
    pdus_tx: u64,
    rx_errors: u64,
}

impl Member {
    fn timeout(&self) -> Duration {
        if self.actor.has(state::TIMEOUT) {
            SHORT_TIMEOUT
        } else {
            LONG_TIMEOUT
        }
    }

    /// What its partner is known as until it speaks, or once forgotten: nobody, out of sync.
    fn forget_partner(&mut self) {
        self.partner = Info::default();
        self.actor.state |= state::DEFAULTED;
        self.actor.state &= !state::EXPIRED;
        self.selected = false;
    }

    /// The link came up (or the protocol started): EXPIRED, as 802.1AX enters it from
    /// PORT_DISABLED, and a first PDU at once from an active actor.
    fn enable(&mut self, now: Duration) {
        self.rx = RxState::Expired;
        self.partner.state = (self.partner.state | state::TIMEOUT) & !state::SYNCHRONIZATION;
        self.actor.state |= state::EXPIRED;
        self.current_while = now + SHORT_TIMEOUT;
        self.next_periodic = now;
        self.ntt = self.actor.has(state::ACTIVITY);
    }

    fn disable(&mut self) {
        self.rx = RxState::Disabled;
        self.forget_partner();
        self.mux = Mux::Detached;
        self.actor.state &= !(state::SYNCHRONIZATION | state::COLLECTING | state::DISTRIBUTING);
        self.ntt = false;
    }

    /// recordPDU, update_Selected and update_NTT of §6.4.12 on one PDU.
    fn record(&mut self, pdu: &Pdu, now: Duration) {
        let agg = state::AGGREGATION;
        let matched =
            pdu.partner.same_port(&self.actor) && pdu.partner.has(agg) == self.actor.has(agg);
        if !self.partner.same_port(&pdu.actor) || self.partner.has(agg) != pdu.actor.has(agg) {
            self.selected = false;
        }
        // The partner's view of the actor is stale: tell it.
        let told = state::ACTIVITY | state::TIMEOUT | agg | state::SYNCHRONIZATION;
        if !pdu.partner.same_port(&self.actor) || (pdu.partner.state ^ self.actor.state) & told != 0
        {
            self.ntt = true;
        }
        let in_sync = pdu.actor.has(state::SYNCHRONIZATION) && (matched || !pdu.actor.has(agg));
        self.partner = pdu.actor;
        if in_sync {
            self.partner.state |= state::SYNCHRONIZATION;
        } else {
            self.partner.state &= !state::SYNCHRONIZATION;
        }
        self.actor.state &= !(state::DEFAULTED | state::EXPIRED);
        self.rx = RxState::Current;
        self.current_while = now + self.timeout();
    }

    /// The receive machine's timers.
    fn expire(&mut self, now: Duration) {
        if now < self.current_while {
            return;
        }
        match self.rx {
            RxState::Current => {
                self.rx = RxState::Expired;
                self.partner.state =
                    (self.partner.state | state::TIMEOUT) & !state::SYNCHRONIZATION;
                self.actor.state |= state::EXPIRED;
                self.current_while = now + SHORT_TIMEOUT;
            }
            RxState::Expired => {
                self.rx = RxState::Defaulted;
                self.forget_partner();
            }
            RxState::Defaulted | RxState::Disabled => {}
        }
    }

    /// The partner's aggregation key: whom the member aggregates with.
    fn partner_key(&self) -> Option<(u16, [u8; 6], u16)> {
        let heard = matches!(self.rx, RxState::Current | RxState::Expired);
        (heard && self.partner.has(state::AGGREGATION) && self.actor.has(state::AGGREGATION))
            .then_some((
                self.partner.system_priority,
                self.partner.system,
                self.partner.key,
            ))
    }

    /// The mux machine, coupled control; a change of the actor's state is sent at once.
    fn mux(&mut self) {
        let before = self.actor.state;
        self.mux = match (self.selected, self.mux) {
            (false, _) => Mux::Detached,
            (true, Mux::Detached) => Mux::Attached,
            (true, m) => m,
        };
        let partner_sync = self.partner.has(state::SYNCHRONIZATION);
        self.mux = match self.mux {
            Mux::Attached if partner_sync => Mux::CollectingDistributing,
            Mux::CollectingDistributing if !partner_sync => Mux::Attached,
            m => m,
        };
        let bits = state::SYNCHRONIZATION | state::COLLECTING | state::DISTRIBUTING;
        self.actor.state &= !bits;
        match self.mux {
            Mux::Detached => {}
            Mux::Attached => self.actor.state |= state::SYNCHRONIZATION,
            Mux::CollectingDistributing => self.actor.state |= bits,
        }
        if self.actor.state != before {
            self.ntt = true;
        }
    }

    /// The periodic and transmit machines: the frame to send now, if any.
    fn transmit(&mut self, now: Duration) -> Option<[u8; FRAME_LEN]> {
        let anyone_active = self.actor.has(state::ACTIVITY) || self.partner.has(state::ACTIVITY);
        if anyone_active && now >= self.next_periodic {
            self.ntt = true;
            let period = self
                .cfg
                .periodic
                .unwrap_or(if self.partner.has(state::TIMEOUT) {
                    FAST_PERIODIC
                } else {
                    SLOW_PERIODIC
                });
            self.next_periodic = now + period;
        }
        if !self.ntt || self.last_tx.is_some_and(|t| now < t + TX_GAP) {
            return None;
        }
        self.ntt = false;
        self.last_tx = Some(now);
        self.pdus_tx += 1;
        let pdu = Pdu {
            actor: self.actor,
            partner: self.partner,
            collector_max_delay: 0,
        };
        Some(pdu.emit(self.mac))
    }

    fn view(&self, lacp: bool) -> MemberView {
        MemberView {
            port: self.port.clone(),
            pdus_rx: self.pdus_rx,
            pdus_tx: self.pdus_tx,
            rx_errors: self.rx_errors,
            actor: self.actor,
            partner: self.partner,
            rx: self.rx,
            mux: self.mux,
            link_up: self.link_up,
            up: if lacp {
                self.mux == Mux::CollectingDistributing
            } else {
                self.link_up
            },
        }
    }
}

/// One LAG's members and their machines.
#[derive(Debug, Clone)]
pub struct Machine {
    lacp: bool,
    running: bool,
    members: Vec<Member>,
}

impl Machine {
    /// Every member with its link down and the protocol stopped: [`Machine::set_link`] and
    /// [`Machine::set_running`] bring them up.
    pub fn new(spec: &LagSpec) -> Self {
        let (lacp, system_priority, system, key) = match spec.protocol {
            Protocol::Lacp {
                system_id,
                system_priority,
                key,
            } => (true, system_priority, system_id, key),
            Protocol::Static { lag_id } => (false, 0, [0; 6], lag_id),
        };
        let members = spec
            .members
            .iter()
            .map(|m| {
                let mut s = state::AGGREGATION | state::DEFAULTED;
                if m.lacp.active {
                    s |= state::ACTIVITY;
                }
                if m.lacp.short_timeout {
                    s |= state::TIMEOUT;
                }
                Member {
                    port: m.port.clone(),
                    mac: m.mac.unwrap_or_default(),
                    cfg: m.lacp,
                    actor: Info {
                        system_priority,
                        system,
                        key,
                        port_priority: m.lacp.port_priority,
                        port: m.lacp.port_number,
                        state: s,
                    },
                    partner: Info::default(),
                    rx: RxState::Disabled,
                    current_while: Duration::ZERO,
                    mux: Mux::Detached,
                    selected: false,
                    ntt: false,
                    next_periodic: Duration::ZERO,
                    last_tx: None,
                    link_up: false,
                    admin: true,
                    pdus_rx: 0,
                    pdus_tx: 0,
                    rx_errors: 0,
                }
            })
            .collect();
        Self {
            lacp,
            running: false,
            members,
        }
    }

    /// LACP started or stopped (`protocol.all`); a stopped actor is silent and its members
    /// are out of the LAG. A static LAG has nothing to start.
    pub fn set_running(&mut self, on: bool, now: Duration) {
        if on == self.running {
            return;
        }
        self.running = on;
        for m in &mut self.members {
            if on && m.link_up && m.admin {
                m.enable(now);
            } else {
                m.disable();
            }
        }
    }

    /// LACP started or stopped on member `i` alone; stopped, it is silent and out of the LAG.
    pub fn set_admin(&mut self, i: usize, on: bool, now: Duration) {
        let running = self.running;
        let Some(m) = self.members.get_mut(i) else {
            return;
        };
        if m.admin == on {
            return;
        }
        m.admin = on;
        if on && running && m.link_up {
            m.enable(now);
        } else {
            m.disable();
        }
    }

    pub fn running(&self) -> bool {
        self.running
    }

    /// Member `i`'s link went up or down.
    pub fn set_link(&mut self, i: usize, up: bool, now: Duration) {
        let running = self.running;
        let Some(m) = self.members.get_mut(i) else {
            return;
        };
        if m.link_up == up {
            return;
        }
        m.link_up = up;
        if up && running && m.admin {
            m.enable(now);
        } else {
            m.disable();
        }
    }

    /// A Slow Protocols frame of subtype LACP that member `i` received; read and counted only
    /// while the protocol runs on a link that is up.
    pub fn receive(&mut self, i: usize, frame: &[u8], now: Duration) {
        if !self.lacp || !self.running {
            return;
        }
        let Some(m) = self.members.get_mut(i) else {
            return;
        };
        if m.rx == RxState::Disabled {
            return;
        }
        match Pdu::parse(frame) {
            Ok(pdu) => {
                m.pdus_rx += 1;
                m.record(&pdu, now);
            }
            Err(_) => m.rx_errors += 1,
        }
    }

    /// A Marker PDU that member `i` received: the Marker Responder's answer, from the member's
    /// MAC, while LACP runs on it (a static LAG and a member down answer nothing).
    pub fn marker(&self, i: usize, frame: &[u8]) -> Option<[u8; FRAME_LEN]> {
        if !self.lacp || !self.running {
            return None;
        }
        let m = self.members.get(i)?;
        if m.rx == RxState::Disabled {
            return None;
        }
        crate::pdu::marker_response(frame, m.mac)
    }

    /// Runs the machines to `now`: the frames to send, by member.
    pub fn step(&mut self, now: Duration) -> Vec<(usize, [u8; FRAME_LEN])> {
        if !self.lacp || !self.running {
            return Vec::new();
        }
        for m in &mut self.members {
            m.expire(now);
        }
        self.select();
        let mut out = Vec::new();
        for (i, m) in self.members.iter_mut().enumerate() {
            if m.rx == RxState::Disabled {
                continue;
            }
            m.mux();
            if let Some(frame) = m.transmit(now) {
                out.push((i, frame));
            }
        }
        out
    }

    /// One aggregator a LAG: the partner key of a member already attached, else of the first
    /// member that heard a partner; the members with that partner key are selected.
    fn select(&mut self) {
        let attached = self
            .members
            .iter()
            .filter(|m| m.selected && m.mux != Mux::Detached)
            .find_map(Member::partner_key);
        let key = attached.or_else(|| self.members.iter().find_map(Member::partner_key));
        for m in &mut self.members {
            m.selected = key.is_some() && m.partner_key() == key;
        }
    }

    pub fn views(&self) -> Vec<MemberView> {
        self.members.iter().map(|m| m.view(self.lacp)).collect()
    }

    /// The members in the LAG.
    pub fn members_up(&self) -> usize {
        self.views().iter().filter(|v| v.up).count()
    }
}

#[cfg(test)]
mod tests;
