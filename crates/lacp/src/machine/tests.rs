use super::*;
use crate::spec::MemberSpec;

const TICK: Duration = Duration::from_millis(100);

fn lag(name: &str, system: u8, members: usize, lacp: MemberLacp) -> LagSpec {
    LagSpec {
        name: name.into(),
        min_links: 1,
        members: (0..members)
            .map(|i| MemberSpec {
                port: format!("{name}p{i}"),
                location: format!("{name}{i}"),
                mac: Some([0, 0, 1, 1, system, i as u8]),
                lacp: MemberLacp {
                    port_number: i as u16 + 1,
                    ..lacp
                },
            })
            .collect(),
        protocol: Protocol::Lacp {
            system_id: [system; 6],
            system_priority: 1,
            key: 1,
        },
    }
}

/// Two LAGs whose members are wired in order, member i to member i.
struct Wire {
    a: Machine,
    b: Machine,
    now: Duration,
    /// Frames sent by a and by b.
    sent: (usize, usize),
    /// Whether a's frames reach b (a cut cable one way).
    a_to_b: bool,
}

impl Wire {
    fn new(a: &LagSpec, b: &LagSpec) -> Self {
        let (mut a, mut b) = (Machine::new(a), Machine::new(b));
        for m in [&mut a, &mut b] {
            for i in 0..m.members.len() {
                m.set_link(i, true, Duration::ZERO);
            }
            m.set_running(true, Duration::ZERO);
        }
        Wire {
            a,
            b,
            now: Duration::ZERO,
            sent: (0, 0),
            a_to_b: true,
        }
    }

    fn run(&mut self, time: Duration) {
        let end = self.now + time;
        while self.now < end {
            self.now += TICK;
            let now = self.now;
            for (i, f) in self.a.step(now) {
                self.sent.0 += 1;
                if self.a_to_b {
                    self.b.receive(i, &f, now);
                }
            }
            for (i, f) in self.b.step(now) {
                self.sent.1 += 1;
                self.a.receive(i, &f, now);
            }
        }
    }
}

#[test]
fn two_active_members_reach_collecting_distributing_and_know_each_other() {
    let (a, b) = (
        lag("a", 1, 1, MemberLacp::default()),
        lag("b", 2, 1, MemberLacp::default()),
    );
    let mut w = Wire::new(&a, &b);
    w.run(Duration::from_millis(500));
    for (m, other) in [(&w.a, 2u8), (&w.b, 1u8)] {
        let v = &m.views()[0];
        assert_eq!(v.mux, Mux::CollectingDistributing, "{v:?}");
        assert_eq!(v.rx, RxState::Current);
        assert!(v.up);
        assert_eq!(v.partner.system, [other; 6]);
        assert_eq!(v.partner.key, 1);
        assert_eq!(v.partner.port, 1);
        assert_eq!(
            v.actor.state & 0x3f,
            0x3f,
            "active, short, aggregatable, in sync, collecting, distributing"
        );
        assert_eq!(v.actor.state & (state::DEFAULTED | state::EXPIRED), 0);
    }
    assert_eq!(w.a.members_up(), 1);
}

#[test]
fn a_silent_partner_expires_after_the_short_timeout_and_is_then_forgotten() {
    let (a, b) = (
        lag("a", 1, 1, MemberLacp::default()),
        lag("b", 2, 1, MemberLacp::default()),
    );
    let mut w = Wire::new(&a, &b);
    w.run(Duration::from_secs(2));
    assert!(w.b.views()[0].up);
    // a stops right after it sent: b heard it last then.
    let sent = w.sent.0;
    while w.sent.0 == sent {
        w.run(TICK);
    }
    w.a.set_running(false, w.now);
    assert!(
        w.a.step(w.now + TICK).is_empty(),
        "a stopped actor sends nothing"
    );
    w.run(Duration::from_millis(2800));
    assert_eq!(w.b.views()[0].rx, RxState::Current, "not yet 3 s");
    w.run(Duration::from_millis(400));
    let v = &w.b.views()[0];
    assert_eq!(v.rx, RxState::Expired);
    assert!(
        !v.up,
        "a partner out of sync takes the member out of collecting-distributing"
    );
    assert!(!v.partner.has(state::SYNCHRONIZATION));
    w.run(Duration::from_secs(3));
    let v = &w.b.views()[0];
    assert_eq!(v.rx, RxState::Defaulted);
    assert_eq!(v.mux, Mux::Detached);
    assert!(!v.actor.has(state::SYNCHRONIZATION));
    assert_eq!(v.partner.system, [0; 6]);
    // Started again, back in the LAG within a second.
    w.a.set_running(true, w.now);
    w.run(Duration::from_secs(1));
    assert!(w.a.views()[0].up && w.b.views()[0].up);
}

#[test]
fn a_long_timeout_actor_is_kept_90_seconds() {
    let long = MemberLacp {
        short_timeout: false,
        ..MemberLacp::default()
    };
    let (a, b) = (lag("a", 1, 1, MemberLacp::default()), lag("b", 2, 1, long));
    let mut w = Wire::new(&a, &b);
    w.run(Duration::from_secs(1));
    w.a_to_b = false;
    w.run(Duration::from_secs(89));
    assert_eq!(w.b.views()[0].rx, RxState::Current);
    w.run(Duration::from_millis(1200));
    assert_eq!(w.b.views()[0].rx, RxState::Expired);
}

#[test]
fn auto_periodic_follows_the_partners_timeout() {
    // b asks for long timeouts: a sends slowly (30 s) once it knows; b, asked for short ones
    // by a, sends every second.
    let long = MemberLacp {
        short_timeout: false,
        ..MemberLacp::default()
    };
    let (a, b) = (lag("a", 1, 1, MemberLacp::default()), lag("b", 2, 1, long));
    let mut w = Wire::new(&a, &b);
    w.run(Duration::from_secs(5));
    let before = w.sent;
    w.run(Duration::from_secs(60));
    assert_eq!(w.sent.0 - before.0, 2, "a: slow periodic, one every 30 s");
    assert!(
        (59..=61).contains(&(w.sent.1 - before.1)),
        "b: fast periodic: {:?}",
        w.sent
    );
    // A period given is kept whatever the partner asks (within the partner's 3 s: a longer
    // one lets it expire between PDUs, as 802.1AX would).
    let every2 = MemberLacp {
        periodic: Some(Duration::from_secs(2)),
        ..MemberLacp::default()
    };
    let (a, b) = (
        lag("a", 1, 1, every2),
        lag("b", 2, 1, MemberLacp::default()),
    );
    let mut w = Wire::new(&a, &b);
    w.run(Duration::from_secs(5));
    let before = w.sent;
    w.run(Duration::from_secs(60));
    assert_eq!(w.sent.0 - before.0, 30);
    assert_eq!(w.b.views()[0].rx, RxState::Current);
}

#[test]
fn passive_members_talk_only_to_an_active_one() {
    let passive = MemberLacp {
        active: false,
        ..MemberLacp::default()
    };
    let (a, b) = (lag("a", 1, 1, passive), lag("b", 2, 1, passive));
    let mut w = Wire::new(&a, &b);
    w.run(Duration::from_secs(10));
    assert_eq!(w.sent, (0, 0), "two passive ends are silent");
    assert!(!w.a.views()[0].up);
    let (a, b) = (
        lag("a", 1, 1, passive),
        lag("b", 2, 1, MemberLacp::default()),
    );
    let mut w = Wire::new(&a, &b);
    w.run(Duration::from_secs(1));
    assert!(w.a.views()[0].up && w.b.views()[0].up);
    assert!(!w.a.views()[0].actor.has(state::ACTIVITY));
}

#[test]
fn members_with_the_same_partner_aggregate_and_others_stand_by() {
    let (a, b) = (
        lag("a", 1, 2, MemberLacp::default()),
        lag("b", 2, 2, MemberLacp::default()),
    );
    let mut w = Wire::new(&a, &b);
    w.run(Duration::from_secs(1));
    assert_eq!(w.a.members_up(), 2);
    assert_eq!(w.b.members_up(), 2);
    // A third system answers on a's second member: another partner key, not aggregated.
    let c = lag("c", 3, 1, MemberLacp::default());
    let mut other = Machine::new(&c);
    other.set_link(0, true, w.now);
    other.set_running(true, w.now);
    for _ in 0..20 {
        w.now += TICK;
        for (i, f) in w.a.step(w.now) {
            if i == 0 {
                w.b.receive(0, &f, w.now);
            } else {
                other.receive(0, &f, w.now);
            }
        }
        for (i, f) in w.b.step(w.now) {
            if i == 0 {
                w.a.receive(0, &f, w.now);
            }
        }
        for (_, f) in other.step(w.now) {
            w.a.receive(1, &f, w.now);
        }
    }
    let v = w.a.views();
    assert!(v[0].up, "{:?}", v[0]);
    assert_eq!(v[1].partner.system, [3; 6]);
    assert_eq!(
        v[1].mux,
        Mux::Detached,
        "another partner: not in this aggregator"
    );
    assert_eq!(w.a.members_up(), 1);
}

#[test]
fn a_link_down_takes_the_member_out_and_a_bad_pdu_is_counted() {
    let (a, b) = (
        lag("a", 1, 1, MemberLacp::default()),
        lag("b", 2, 1, MemberLacp::default()),
    );
    let mut w = Wire::new(&a, &b);
    w.run(Duration::from_secs(1));
    w.a.set_link(0, false, w.now);
    let v = &w.a.views()[0];
    assert!(!v.up && v.rx == RxState::Disabled && !v.link_up);
    let mut bad = Pdu::default().emit([0; 6]);
    bad[crate::pdu::field::ACTOR] = 9;
    w.b.receive(0, &bad, w.now);
    assert_eq!(w.b.views()[0].rx_errors, 1);
}

#[test]
fn a_static_member_is_up_while_its_link_is_and_sends_nothing() {
    let spec = LagSpec {
        protocol: Protocol::Static { lag_id: 7 },
        ..lag("s", 1, 2, MemberLacp::default())
    };
    let mut m = Machine::new(&spec);
    m.set_running(true, Duration::ZERO);
    m.set_link(0, true, Duration::ZERO);
    assert!(m.step(Duration::from_secs(5)).is_empty());
    assert_eq!(m.members_up(), 1);
    m.set_link(1, true, Duration::ZERO);
    assert_eq!(m.members_up(), 2);
    m.set_running(false, Duration::ZERO);
    m.set_link(1, false, Duration::ZERO);
    assert_eq!(m.members_up(), 1);
}

#[test]
fn lacp_stopped_on_one_member_takes_it_and_its_partner_out() {
    let (a, b) = (
        lag("a", 1, 1, MemberLacp::default()),
        lag("b", 2, 1, MemberLacp::default()),
    );
    let mut w = Wire::new(&a, &b);
    w.run(Duration::from_secs(1));
    w.a.set_admin(0, false, w.now);
    assert!(!w.a.views()[0].up);
    assert!(!w.a.views()[0].actor.has(state::SYNCHRONIZATION));
    let sent = w.sent.0;
    w.run(Duration::from_millis(3200));
    assert_eq!(w.sent.0, sent, "stopped: silent");
    let v = &w.b.views()[0];
    assert_eq!(v.rx, RxState::Expired);
    assert!(!v.up);
    w.a.set_admin(0, true, w.now);
    w.run(Duration::from_secs(1));
    assert!(w.a.views()[0].up && w.b.views()[0].up);
}

#[test]
fn a_marker_is_answered_from_the_members_mac_while_lacp_runs_on_it() {
    let a = lag("a", 1, 2, MemberLacp::default());
    let mut m = Machine::new(&a);
    m.set_running(true, Duration::ZERO);
    m.set_link(0, true, Duration::ZERO);
    // A Marker PDU (802.1AX-2014 §6.5.3.3): requester port 9, system 02:…, transaction 5.
    let mut asked = [0u8; FRAME_LEN];
    asked[0..6].copy_from_slice(&crate::pdu::SLOW_PROTOCOLS_MAC);
    asked[12..18].copy_from_slice(&[0x88, 0x09, 2, 1, 1, 16]);
    asked[18..30].copy_from_slice(&[0, 9, 2, 2, 2, 2, 2, 2, 0, 0, 0, 5]);
    let answer = m.marker(0, &asked).expect("member 0 answers");
    assert_eq!(answer[6..12], [0, 0, 1, 1, 1, 0], "from member 0's MAC");
    assert_eq!(answer[16], 2, "a Marker Response");
    assert_eq!(answer[18..30], asked[18..30]);
    // Member 1's link is down; LACP stopped; a static LAG: no answer.
    assert!(m.marker(1, &asked).is_none());
    m.set_running(false, Duration::ZERO);
    assert!(m.marker(0, &asked).is_none());
    let s = LagSpec {
        protocol: Protocol::Static { lag_id: 7 },
        ..lag("s", 1, 1, MemberLacp::default())
    };
    let mut m = Machine::new(&s);
    m.set_running(true, Duration::ZERO);
    m.set_link(0, true, Duration::ZERO);
    assert!(m.marker(0, &asked).is_none());
}
