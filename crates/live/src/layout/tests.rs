//! The layout checked against the model and the engine's frames.

use super::model::pick;
use super::*;
use linerate_port::Usage;
use linerate_stream::{Limits, StreamSpec};

fn plan(vary: &[&str], size_mode: &str) -> Plan {
    let spec = StreamSpec {
        vary: vary.iter().map(|s| s.parse().unwrap()).collect(),
        size_mode: size_mode.parse().unwrap(),
        ..StreamSpec::default()
    };
    Plan::compile(&[spec], &Limits::default()).expect("plan")
}

#[test]
fn rng_state_matches_the_wire_rng() {
    for seed in [0, 1, 42, u64::MAX] {
        let mut a = linerate_wire::Rng::new(seed);
        let mut s = rng_state(seed);
        for _ in 0..5 {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            assert_eq!(a.next_u64(), s.wrapping_mul(0x2545_F491_4F6C_DD1D));
        }
    }
}

/// The model of the program, on a recycled pool, sends exactly the AF_XDP frames.
#[test]
fn the_model_sends_the_plans_frames_on_recycled_pages() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "fixed"),
        (&["src-port:inc:1000-1099"], "fixed"),
        (
            &["src-port:random:5000-5999", "dst-port:dec:8000-9000"],
            "fixed",
        ),
        (
            &["src-ip:inc:10.0.0.1-10.0.19.255", "ttl:inc:1-200"],
            "fixed",
        ),
        (
            &["src-port:inc:1-7", "dst-port:random:1-65535"],
            "inc:64-128:4",
        ),
        (&["ip-id:inc:0-65535,mask=0x0ff0"], "fixed"),
        (&["dst-port:inc:1-4095"], "imix"),
        // Patched inc fields whose count is below the worker count, and a random field past
        // 32 bits (the program's 64-bit pick).
        (&["src-port:inc:1-65535", "dst-port:inc:7-8"], "fixed"),
        (
            &["dst-mac:random:02:00:00:00:00:01-02:00:ff:ff:ff:ff"],
            "fixed",
        ),
        (
            &["src-mac:inc:00:00:00:00:00:01-00:00:00:01:00:00"],
            "random:64-200",
        ),
    ];
    for (vary, size) in cases {
        let plan = plan(vary, size);
        for workers in [1, 2, 3] {
            let layout = Layout::compile(&plan, workers, None).expect("layout");
            for w in 0..workers {
                let Shape::Cycle { cycle, .. } = &plan.shape else {
                    panic!("one stream is one cycle")
                };
                let want = expected(cycle, w, workers, 5000, || 0);
                for pages in [1, 3, 64] {
                    let got = simulate(&layout, w, 5000, pages, || 0);
                    assert_eq!(got.len(), want.len());
                    for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g, e,
                            "{vary:?} {size}: worker {w}/{workers} frame {i}, {pages} pages"
                        );
                    }
                }
            }
        }
    }
}

/// Every frame the model stamps is the frame the engine's worker stamps for the same
/// sequence number and clock reading, on recycled pages: one flow (the counter), several
/// flows in one cycle (streams in sequence, merged lanes: each frame's start and step),
/// sizes that move the trailer, and fields beside it.
#[test]
fn the_model_stamps_the_engines_signature() {
    let signed = |vary: &[&str], size_mode: &str, count: Option<u64>, port: u16| StreamSpec {
        vary: vary.iter().map(|s| s.parse().unwrap()).collect(),
        size_mode: size_mode.parse().unwrap(),
        signature: true,
        count,
        src_port: port,
        ..StreamSpec::default()
    };
    let lane = |port, rate: &str| StreamSpec {
        rate: rate.parse().unwrap(),
        mode: linerate_stream::Mode::Interleaved,
        ..signed(&[], "fixed", None, port)
    };
    let plans = [
        ("one flow", vec![signed(&[], "fixed", None, 1)]),
        (
            "one flow, fields and sizes",
            vec![signed(
                &["src-port:inc:1000-1099", "dst-port:random:1-65535"],
                "inc:64-100:4",
                None,
                1,
            )],
        ),
        (
            "a sequence of three",
            vec![
                StreamSpec {
                    next: linerate_stream::Next::Next,
                    ..signed(&[], "fixed", Some(5), 1)
                },
                StreamSpec {
                    next: linerate_stream::Next::Next,
                    ..signed(&[], "inc:64-80:2", Some(3), 2)
                },
                StreamSpec {
                    next: linerate_stream::Next::GotoFirst,
                    ..signed(&["dst-port:inc:1-4"], "fixed", Some(7), 3)
                },
            ],
        ),
        (
            "three merged lanes",
            vec![lane(1, "20k"), lane(2, "10k"), lane(3, "5k")],
        ),
    ];
    for (name, specs) in plans {
        let plan = Plan::compile(&specs, &Limits::default()).expect(name);
        let (cycle, _) = cycle_of(&plan).expect(name);
        let mapped = !cycle.stamp.as_ref().expect("signed").seq_map.is_empty();
        assert_eq!(mapped, specs.len() > 1, "{name}");
        for workers in [1, 2, 3] {
            let layout = Layout::compile_cycle(&cycle, workers, None).expect(name);
            assert_eq!(layout.stamp.map(|s| s.mapped), Some(mapped));
            for w in 0..workers {
                // The engine reads a time per frame here; the model one per bulk.
                let mut k = 0u64;
                let want = expected(&cycle, w, workers, 3000, || {
                    k += 1;
                    (1 << 47) + (k - 1) / STAMP_EVERY * 997
                });
                for pages in [1, 3, 64] {
                    let mut bulk = 0u64;
                    let got = simulate(&layout, w, 3000, pages, || {
                        bulk += 1;
                        (1 << 47) + (bulk - 1) * 997
                    });
                    assert_eq!(got.len(), want.len());
                    for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g, e,
                            "{name}: worker {w}/{workers} frame {i}, {pages} pages"
                        );
                        assert!(signature::parse(g).is_some());
                    }
                }
            }
        }
    }
}

#[test]
fn the_programs_pick_is_the_wire_crates() {
    let mut rng = linerate_wire::Rng::new(5);
    for count in [1, 1000, 1 << 32, (1 << 32) + 1, 1 << 40, 1 << 48, u64::MAX] {
        for r in [0, u64::MAX, 1 << 63, 12345]
            .into_iter()
            .chain((0..1000).map(|_| rng.next_u64()))
        {
            assert_eq!(
                pick(r, count),
                linerate_wire::pick(r, count),
                "{r} of {count}"
            );
        }
    }
}

#[test]
fn limits_split_exactly() {
    let plan = plan(&[], "fixed");
    let layout = Layout::compile(&plan, 2, Some(11)).unwrap();
    assert_eq!(layout.workers[0].limit, Some(6));
    assert_eq!(layout.workers[1].limit, Some(5));
    assert_eq!(layout.workers[0].win_len, 0);
    assert!(Layout::compile(&plan, 0, None).is_err());
}

#[test]
fn lanes_are_sent_merged_or_refused_where_the_layout_is_built() {
    let lane = |port, count| StreamSpec {
        src_port: port,
        rate: "1k".parse().unwrap(),
        count,
        mode: linerate_stream::Mode::Interleaved,
        ..StreamSpec::default()
    };
    let plan = Plan::compile(&[lane(1, None), lane(2, None)], &Limits::default()).unwrap();
    let layout = Layout::compile(&plan, 1, None).unwrap();
    // Both lanes' frames, due together every millisecond.
    let (cycle, pacing) = cycle_of(&plan).unwrap();
    assert_eq!(cycle.frames.len(), 2);
    assert_eq!(pacing.unwrap().pps(), 2000.0);
    assert_eq!(layout.workers[0].frames.len(), 2);
    let counted = Plan::compile(&[lane(1, Some(5)), lane(2, None)], &Limits::default()).unwrap();
    let err = Layout::compile(&counted, 1, None).unwrap_err();
    assert!(err.is_usage());
    let text = err.to_string();
    assert!(
        text.contains("2 interleaved streams") && text.contains("afxdp"),
        "{text}"
    );
}

/// Which plans the program sends from words in the worker entry: one-word windows at one
/// offset, cycles of `WORDS` frames at most a worker, frames as long as the template, no
/// mapped signature; the words are the frames' window bytes.
#[test]
fn word_cycles_are_short_one_word_cycles() {
    let words = |plan: &Plan, workers| Layout::compile(plan, workers, None).unwrap().words;
    let seed = Plan::compile(&[StreamSpec::seed()], &Limits::default()).unwrap();
    for workers in [1, 2, 3] {
        let layout = Layout::compile(&seed, workers, None).unwrap();
        assert_eq!(layout.words, Some(layout.workers[0].win_off), "{workers}");
        for w in &layout.workers {
            assert_eq!(w.win_len, 8);
            for ((_, bytes), word) in w.frames.iter().zip(w.words()) {
                assert_eq!(&word.to_ne_bytes()[..], &bytes[..]);
            }
        }
    }
    assert!(words(&plan(&["src-port:inc:1-16"], "fixed"), 1).is_some());
    // 18 frames: one worker's cycle is too long for its entry; two workers' halves are not
    // (an odd cycle is not halved: each of two workers sends all 17 in turn).
    assert!(words(&plan(&["src-port:inc:1-18"], "fixed"), 1).is_none());
    assert!(words(&plan(&["src-port:inc:1-18"], "fixed"), 2).is_some());
    assert!(words(&plan(&["src-port:inc:1-17"], "fixed"), 2).is_none());
    // Frames to trim, a window of two words, no window at all.
    assert!(words(&plan(&["src-port:inc:1-4"], "inc:64-70:2"), 1).is_none());
    assert!(
        words(
            &plan(
                &["src-ip:inc:10.0.0.1-10.0.0.4", "dst-port:inc:1-4"],
                "fixed"
            ),
            1
        )
        .is_none()
    );
    assert!(words(&plan(&[], "fixed"), 1).is_none());
    // A mapped signature reads its sequences from the frame entries.
    let lane = |port| StreamSpec {
        src_port: port,
        signature: true,
        rate: "1k".parse().unwrap(),
        mode: linerate_stream::Mode::Interleaved,
        ..StreamSpec::default()
    };
    let lanes = Plan::compile(&[lane(1), lane(2)], &Limits::default()).unwrap();
    let layout = Layout::compile(&lanes, 1, None).unwrap();
    assert!(layout.stamp.unwrap().mapped && layout.words.is_none());
}
