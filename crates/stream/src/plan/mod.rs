use std::collections::HashMap;
use std::sync::Arc;

use linerate_wire::Patch;

mod compile;
mod lanes;

use compile::{compile_interleaved, compile_one, compile_sequence};
pub use lanes::{Merged, lane_counts, lanes_for_worker, merge};

use crate::mapped::MappedFrames;
use crate::{Limits, Mode, Pacing, StreamError, StreamSpec};

/// Most distinct frames a plan pre-builds. Variable fields whose period would push the cycle past
/// this are patched per frame instead. 4096 frames of 2 KiB fit any UMEM comfortably.
pub const CACHE_LIMIT: u64 = 4096;

/// Longest stream sequence (sum of the counts) that is flattened into pre-built frames.
const SEQUENCE_LIMIT: u64 = 4 * CACHE_LIMIT;

/// What one stream became, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    pub name: String,
    /// Fields folded into the pre-built frames.
    pub cached: Vec<String>,
    /// Fields patched in place for every frame.
    pub patched: Vec<String>,
}

/// Streams compiled for the hot path, in the shape a backend sends: one cycle of frames, or
/// lanes (interleaved streams) each with its own cycle and schedule. Nothing is left to decide
/// while sending.
#[derive(Debug, Clone)]
pub struct Plan {
    pub shape: Shape,
    /// What each stream became, in the order of the spec (lane `i` is stream `i`).
    pub streams: Vec<StreamInfo>,
    /// The flow id of stream 0 (`Limits::first_flow`): stream `i` is flow `first_flow + i`.
    pub first_flow: u16,
}

impl Plan {
    /// The first frame it sends, as sent (a streamed capture's with its addresses rewritten):
    /// what a report looks at to say why nothing arrived.
    pub fn first_frame(&self) -> Option<Vec<u8>> {
        match &self.shape {
            Shape::Cycle { cycle, .. } => cycle.frames.first().cloned(),
            Shape::Lanes(lanes) => lanes.first()?.cycle.frames.first().cloned(),
            Shape::Streamed { frames, .. } if !frames.is_empty() => {
                let mut out = vec![0; frames.max_len()];
                let n = frames.copy_into(0, &mut out);
                out.truncate(n);
                Some(out)
            }
            Shape::Streamed { .. } => None,
        }
    }
}

/// How a plan's frames leave: the two shapes a backend may be asked to send. A backend that
/// cannot send one refuses it by matching here, where it compiles the plan for itself.
#[derive(Debug, Clone)]
pub enum Shape {
    /// One stream, or streams in sequence flattened into one cycle: sent as fast as the port
    /// takes them (`pacing` None) or on one schedule.
    Cycle {
        cycle: Cycle,
        pacing: Option<Pacing>,
    },
    /// Interleaved streams, all sent at once, each on its own schedule (two or more).
    Lanes(Vec<Lane>),
    /// A capture too large to load, sent from its mapped file in order, lap after lap: each
    /// frame is copied into a port buffer as it is sent, since no buffer keeps it for long.
    Streamed {
        frames: Arc<MappedFrames>,
        pacing: Option<Pacing>,
        /// Frames to send in all (None: until stopped).
        count: Option<u64>,
    },
}

/// Frames in one repeating order: frame `n` is `frames[n % frames.len()]` with every patch
/// applied for `n`.
#[derive(Debug, Clone)]
pub struct Cycle {
    /// Pre-built frames without FCS, in send order.
    pub frames: Vec<Vec<u8>>,
    pub patches: Vec<Patch>,
    /// Frames to send in all (None: until stopped).
    pub count: Option<u64>,
    pub seed: u64,
    /// The frames carry the receive side's signature: the worker stamps each as it sends.
    pub stamp: Option<Stamp>,
}

/// How a cycle's frames carry the signature (`linerate_wire::signature`): each pre-built frame
/// already holds its flow id and the magic; the worker writes the flow's sequence number and the
/// transmit time as it sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stamp {
    /// Per cycle frame, its flow id. Empty: every frame is flow `flow`.
    pub flows: Vec<u16>,
    pub flow: u16,
    /// Per cycle frame, (its index among its flow's frames in the cycle, its flow's frames per
    /// cycle). Empty: the cycle is one flow, and frame n's sequence number is n.
    pub seq_map: Vec<(u32, u32)>,
    /// Stamp CLOCK_TAI (two hosts synced by PTP) instead of CLOCK_MONOTONIC (one host).
    pub tai: bool,
}

impl Stamp {
    /// The flow sequence number of frame `n` of a cycle of `period` frames.
    #[inline]
    pub fn seq(&self, n: u64, period: u64) -> u32 {
        if self.seq_map.is_empty() {
            return n as u32;
        }
        let (k, c) = self.seq_map[(n % period) as usize];
        ((n / period) * u64::from(c) + u64::from(k)) as u32
    }

    /// The flow id of frame `n` of a cycle of `period` frames.
    pub fn flow_of(&self, n: u64, period: u64) -> u16 {
        if self.flows.is_empty() {
            self.flow
        } else {
            self.flows[(n % period) as usize]
        }
    }
}

/// One interleaved stream: its cycle and its schedule, which every lane has (a lane at max rate
/// would crowd out the others).
#[derive(Debug, Clone)]
pub struct Lane {
    pub cycle: Cycle,
    pub pacing: Pacing,
}

/// One worker's share of a cycle: worker `w` of `W` sends frames `w, w+W, w+2W, …`, so the
/// workers together send exactly the cycle's sequence, every value of every field included.
#[derive(Debug, Clone)]
pub struct WorkerPlan<'a> {
    /// The worker's own cycle: its k-th frame is `frames[k % frames.len()]`.
    pub frames: Vec<&'a [u8]>,
    pub patches: &'a [Patch],
    pub first_seq: u64,
    pub stride: u64,
    /// Frames this worker sends (None: until stopped).
    pub count: Option<u64>,
    pub seed: u64,
    /// Stamp the signature; `period` is the whole cycle's length, which its sequence map needs.
    pub stamp: Option<&'a Stamp>,
    pub period: u64,
}

impl Plan {
    /// Stamps with CLOCK_TAI instead of CLOCK_MONOTONIC (the receiver must read the same clock).
    pub fn set_stamp_clock(&mut self, tai: bool) {
        let cycles: Vec<&mut Cycle> = match &mut self.shape {
            Shape::Cycle { cycle, .. } => vec![cycle],
            Shape::Lanes(lanes) => lanes.iter_mut().map(|l| &mut l.cycle).collect(),
            Shape::Streamed { .. } => Vec::new(),
        };
        for c in cycles {
            if let Some(s) = &mut c.stamp {
                s.tai = tai;
            }
        }
    }

    /// Whether the frames carry the signature.
    pub fn stamped(&self) -> bool {
        self.cycles().any(|c| c.stamp.is_some())
    }

    /// Compiles streams that run one after another (a single stream is the common case), or
    /// interleaved streams into lanes.
    pub fn compile(streams: &[StreamSpec], limits: &Limits) -> Result<Self, StreamError> {
        let first = streams.first().ok_or_else(|| StreamError::Invalid {
            stream: "-".into(),
            why: "no stream to send".into(),
        })?;
        crate::spec::check_stream_count(streams)?;
        let resolved = streams
            .iter()
            .map(|s| s.resolve(limits))
            .collect::<Result<Vec<_>, _>>()?;
        crate::spec::check_plan_size(streams, &resolved)?;
        let interleaved = streams
            .iter()
            .filter(|s| s.mode == Mode::Interleaved)
            .count();
        if interleaved > 0 {
            if interleaved < streams.len() {
                return Err(StreamError::Invalid {
                    stream: first.name.clone(),
                    why: "some streams are interleaved and some in sequence: pick one mode".into(),
                });
            }
            compile_interleaved(streams, &resolved, limits)
        } else if streams.len() == 1 {
            let (cycle, pacing, info) =
                compile_one(first, &resolved[0], limits, limits.first_flow)?;
            Ok(Plan {
                shape: Shape::Cycle { cycle, pacing },
                streams: vec![info],
                first_flow: limits.first_flow,
            })
        } else {
            compile_sequence(streams, &resolved, limits)
        }
    }

    /// Every cycle of the plan: the one, or each lane's (none for a streamed capture).
    pub fn cycles(&self) -> impl Iterator<Item = &Cycle> {
        let (one, lanes) = match &self.shape {
            Shape::Cycle { cycle, .. } => (Some(cycle), &[][..]),
            Shape::Lanes(lanes) => (None, &lanes[..]),
            Shape::Streamed { .. } => (None, &[][..]),
        };
        one.into_iter().chain(lanes.iter().map(|l| &l.cycle))
    }

    /// Longest frame, without FCS.
    pub fn max_len(&self) -> usize {
        match &self.shape {
            Shape::Streamed { frames, .. } => frames.max_len(),
            _ => self.cycles().map(Cycle::max_len).max().unwrap_or(0),
        }
    }

    /// Pre-built frames, all lanes together.
    pub fn frame_count(&self) -> usize {
        self.cycles().map(|c| c.frames.len()).sum()
    }

    /// Frames the plan sends in all (None: until stopped, as when any lane is endless).
    pub fn count(&self) -> Option<u64> {
        match &self.shape {
            Shape::Streamed { count, .. } => *count,
            _ => self.cycles().map(|c| c.count).sum(),
        }
    }

    /// The average rate the plan asks for in frames per second, all lanes together (None: max).
    pub fn requested_pps(&self) -> Option<f64> {
        match &self.shape {
            Shape::Cycle { pacing, .. } | Shape::Streamed { pacing, .. } => {
                pacing.as_ref().map(Pacing::pps)
            }
            Shape::Lanes(lanes) => Some(lanes.iter().map(|l| l.pacing.pps()).sum()),
        }
    }
}

impl Cycle {
    /// Longest frame, without FCS.
    pub fn max_len(&self) -> usize {
        self.frames.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// Splits the cycle between `workers`; `limit` caps the total count (e.g. `--count`).
    pub fn for_worker(&self, worker: usize, workers: usize, limit: Option<u64>) -> WorkerPlan<'_> {
        let (w, n) = (worker as u64, workers.max(1) as u64);
        let p = self.frames.len() as u64;
        let own_period = p / gcd(p, n);
        let frames = (0..own_period)
            .map(|k| self.frames[((w + k * n) % p) as usize].as_slice())
            .collect();
        let total = match (self.count, limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        WorkerPlan {
            frames,
            patches: &self.patches,
            first_seq: w,
            stride: n,
            count: total.map(|t| if t > w { (t - w).div_ceil(n) } else { 0 }),
            seed: self.seed ^ (w + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            stamp: self.stamp.as_ref(),
            period: p,
        }
    }

    /// Frames of each flow among the `sent` frames worker `worker` of `workers` sent (its
    /// frames `worker, worker + workers, …`), as (flow id, frames); empty without a signature.
    pub fn flow_counts(&self, worker: usize, workers: usize, sent: u64) -> Vec<(u16, u64)> {
        let Some(stamp) = &self.stamp else {
            return Vec::new();
        };
        if stamp.flows.is_empty() {
            return vec![(stamp.flow, sent)];
        }
        let (w, n) = (worker as u64, workers.max(1) as u64);
        let p = self.frames.len() as u64;
        // The worker's frames repeat their flows every p / gcd(p, n) frames.
        let own = p / gcd(p, n);
        let mut per_lap: HashMap<u16, u64> = HashMap::new();
        let mut tail: HashMap<u16, u64> = HashMap::new();
        for k in 0..own {
            let flow = stamp.flow_of(w + k * n, p);
            *per_lap.entry(flow).or_default() += sent / own;
            if k < sent % own {
                *tail.entry(flow).or_default() += 1;
            }
        }
        for (flow, extra) in tail {
            *per_lap.entry(flow).or_default() += extra;
        }
        let mut counts: Vec<(u16, u64)> = per_lap.into_iter().collect();
        counts.sort_unstable();
        counts
    }
}

pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}

pub(crate) fn lcm(a: u64, b: u64) -> Option<u64> {
    (a / gcd(a, b)).checked_mul(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Next;
    use linerate_wire::Field;
    use linerate_wire::Rng;

    /// The cycle of a plan that is not lanes.
    pub(crate) fn cycle(plan: &Plan) -> &Cycle {
        match &plan.shape {
            Shape::Cycle { cycle, .. } => cycle,
            _ => panic!("not one cycle"),
        }
    }

    fn field_values(plan: &Plan, field: Field, n: u64) -> Vec<u64> {
        let template = StreamSpec::default()
            .resolve(&Limits::default())
            .unwrap()
            .frame;
        let loc = field.locate(&template.build(64).unwrap().layout).unwrap();
        let mut rng = Rng::new(cycle(plan).seed);
        (0..n)
            .map(|i| {
                let mut frame =
                    cycle(plan).frames[(i % cycle(plan).frames.len() as u64) as usize].clone();
                for p in &cycle(plan).patches {
                    p.apply(&mut frame, i, &mut rng);
                }
                loc.read(&frame)
            })
            .collect()
    }

    fn spec(vary: &[&str]) -> StreamSpec {
        StreamSpec {
            vary: vary.iter().map(|s| s.parse().unwrap()).collect(),
            ..StreamSpec::default()
        }
    }

    pub(crate) fn signed(mut s: StreamSpec) -> StreamSpec {
        s.signature = true;
        s
    }

    #[test]
    fn signed_frames_carry_their_flow_and_valid_checksums() {
        let plan =
            Plan::compile(&[signed(spec(&["src-port:inc:1-4"]))], &Limits::default()).unwrap();
        let c = cycle(&plan);
        assert!(plan.stamped());
        for f in &c.frames {
            let sig = linerate_wire::signature::parse(f).expect("signature template");
            assert_eq!((sig.flow, sig.seq, sig.tx_ns), (0, 0, 0));
            let p = etherparse::SlicedPacket::from_ethernet(f).unwrap();
            let (Some(etherparse::NetSlice::Ipv4(ip)), Some(etherparse::TransportSlice::Udp(u))) =
                (p.net, p.transport)
            else {
                panic!("ipv4/udp");
            };
            let h = u.to_header();
            let want = h
                .calc_checksum_ipv4(&ip.header().to_header(), u.payload())
                .unwrap();
            assert_eq!(want, h.checksum);
        }
        // Single flow: the sequence number is the frame's index, whatever the worker.
        let stamp = c.stamp.as_ref().unwrap();
        assert_eq!(stamp.seq(12345, 4), 12345);
        assert_eq!(c.flow_counts(1, 2, 10), vec![(0, 10)]);
    }

    #[test]
    fn a_signed_sequence_numbers_each_flow_on_its_own() {
        let mut a = signed(spec(&[]));
        a.count = Some(3);
        a.next = Next::Next;
        let mut b = signed(spec(&[]));
        b.count = Some(2);
        b.next = Next::GotoFirst;
        let plan = Plan::compile(&[a.clone(), b.clone()], &Limits::default()).unwrap();
        let c = cycle(&plan);
        let stamp = c.stamp.as_ref().unwrap();
        let p = c.frames.len() as u64;
        // Frames n = 0..10: a0 a1 a2 b0 b1 a3 a4 a5 b2 b3.
        let got: Vec<(u16, u32)> = (0..10)
            .map(|n| (stamp.flow_of(n, p), stamp.seq(n, p)))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 0),
                (0, 1),
                (0, 2),
                (1, 0),
                (1, 1),
                (0, 3),
                (0, 4),
                (0, 5),
                (1, 2),
                (1, 3)
            ]
        );
        // Two workers, 7 frames each: worker 0 sends n = 0, 2, …, 12; worker 1 n = 1, …, 13.
        for w in 0..2u64 {
            let mut want = std::collections::BTreeMap::new();
            for j in 0..7 {
                *want.entry(stamp.flow_of(w + 2 * j, p)).or_insert(0u64) += 1;
            }
            let want: Vec<(u16, u64)> = want.into_iter().collect();
            assert_eq!(c.flow_counts(w as usize, 2, 7), want, "worker {w}");
        }
        b.signature = false;
        let err = Plan::compile(&[a, b], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("all or none"), "{err}");
    }

    #[test]
    fn a_signature_that_does_not_fit_or_is_overwritten_is_refused() {
        let mut v6 = signed(spec(&[]));
        v6.ipv6 = true;
        v6.size = 70;
        let err = Plan::compile(&[v6.clone()], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("at least 84 B"), "{err}");
        v6.size = 84;
        assert!(Plan::compile(&[v6], &Limits::default()).is_ok());
        let err = Plan::compile(&[signed(spec(&["byte@50:inc:0-9"]))], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("overlaps the signature"), "{err}");
    }

    #[test]
    fn seed_stream_is_ten_distinct_frames() {
        let plan = Plan::compile(&[StreamSpec::seed()], &Limits::default()).unwrap();
        assert_eq!(cycle(&plan).frames.len(), 10);
        assert!(cycle(&plan).patches.is_empty());
        let mut distinct = cycle(&plan).frames.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), 10);
        assert!(cycle(&plan).frames.iter().all(|f| f.len() == 60));
    }

    #[test]
    fn small_periods_are_cached_and_large_ones_patched() {
        let plan = Plan::compile(&[spec(&["src-port:inc:1000-1999"])], &Limits::default()).unwrap();
        assert_eq!(cycle(&plan).frames.len(), 1000);
        assert!(cycle(&plan).patches.is_empty());
        let plan = Plan::compile(
            &[spec(&["src-port:inc:1000-1999", "dst-port:inc:1-7"])],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(cycle(&plan).frames.len(), 1000);
        assert_eq!(cycle(&plan).patches.len(), 1);
        assert_eq!(plan.streams[0].patched, vec!["dst-port".to_string()]);
        let values = field_values(&plan, Field::DstPort, 14);
        assert_eq!(values, vec![1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn workers_share_the_sequence_without_overlap() {
        let plan = Plan::compile(&[spec(&["src-port:inc:0-9"])], &Limits::default()).unwrap();
        let a = cycle(&plan).for_worker(0, 2, Some(11));
        let b = cycle(&plan).for_worker(1, 2, Some(11));
        assert_eq!((a.count, b.count), (Some(6), Some(5)));
        assert_eq!((a.frames.len(), b.frames.len()), (5, 5));
        assert_eq!(a.frames[1], cycle(&plan).frames[2].as_slice());
        assert_eq!(b.frames[0], cycle(&plan).frames[1].as_slice());
        let c = cycle(&plan).for_worker(2, 3, Some(2));
        assert_eq!(c.count, Some(0));
    }

    #[test]
    fn sequences_flatten_in_order_and_count() {
        let mut a = spec(&["src-port:inc:1-3"]);
        a.count = Some(3);
        a.next = Next::Next;
        let mut b = spec(&[]);
        b.src_port = 7;
        b.count = Some(2);
        b.next = Next::GotoFirst;
        b.loops = Some(4);
        let plan = Plan::compile(&[a.clone(), b.clone()], &Limits::default()).unwrap();
        assert_eq!(cycle(&plan).frames.len(), 5);
        assert_eq!(plan.count(), Some(20));
        assert_eq!(
            field_values(&plan, Field::SrcPort, 6),
            vec![1, 2, 3, 7, 7, 1]
        );
        a.next = Next::Stop;
        let err = Plan::compile(&[a, b], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("never reached"), "{err}");
    }

    #[test]
    fn goto_first_loops_over_count_frames() {
        let mut s = spec(&["src-port:inc:100-199"]);
        s.count = Some(10);
        s.next = Next::GotoFirst;
        let plan = Plan::compile(&[s], &Limits::default()).unwrap();
        assert_eq!(cycle(&plan).frames.len(), 10);
        assert_eq!(plan.count(), None);
        assert_eq!(field_values(&plan, Field::SrcPort, 12)[10..], [100, 101]);
    }

    #[test]
    fn lists_are_folded_into_the_cycle_in_their_order() {
        // Not evenly spaced, not sorted, a value repeated: frame n carries list[n % 5].
        let plan = Plan::compile(
            &[signed(spec(&[
                "dst-port:list:5000,5013,4,5013,9",
                "src-port:inc:1-3",
            ]))],
            &Limits::default(),
        )
        .unwrap();
        let c = cycle(&plan);
        assert_eq!(c.frames.len(), 15);
        assert!(c.patches.is_empty(), "a list never reaches the hot path");
        assert_eq!(plan.streams[0].cached, ["dst-port", "src-port"]);
        let values = field_values(&plan, Field::DstPort, 11);
        assert_eq!(
            values,
            [5000, 5013, 4, 5013, 9, 5000, 5013, 4, 5013, 9, 5000]
        );
        assert_eq!(field_values(&plan, Field::SrcPort, 4), [1, 2, 3, 1]);
        // Every pre-built frame's checksums hold over the value its list gave it.
        for f in &c.frames {
            let p = etherparse::SlicedPacket::from_ethernet(f).unwrap();
            let (Some(etherparse::NetSlice::Ipv4(ip)), Some(etherparse::TransportSlice::Udp(u))) =
                (p.net, p.transport)
            else {
                panic!("ipv4/udp");
            };
            let h = u.to_header();
            let want = h
                .calc_checksum_ipv4(&ip.header().to_header(), u.payload())
                .unwrap();
            assert_eq!(want, h.checksum);
        }
    }

    #[test]
    fn a_list_whose_cycle_cannot_be_prebuilt_is_refused() {
        // 4093 and 4091 are coprime: the cycle would be their product.
        let list = |field: &str, n: u64| {
            let values: Vec<String> = (0..n).map(|v| v.to_string()).collect();
            format!("{field}:list:{}", values.join(","))
        };
        let err = Plan::compile(
            &[spec(&[&list("dst-port", 4093), &list("src-port", 4091)])],
            &Limits::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("src-port takes a list of 4091 values"),
            "{err}"
        );
        // A counter given first that would crowd a list out of the cycle is patched instead.
        let plan = Plan::compile(
            &[spec(&["src-port:inc:1-4000", "dst-port:list:7,1,8"])],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(plan.streams[0].patched, ["src-port"]);
        assert_eq!(field_values(&plan, Field::DstPort, 4), [7, 1, 8, 7]);
        assert_eq!(field_values(&plan, Field::SrcPort, 3), [1, 2, 3]);
        // In a goto-first stream the cycle is its count, whatever the list.
        let mut s = spec(&["dst-port:list:7,1,8"]);
        s.count = Some(4);
        s.next = Next::GotoFirst;
        let plan = Plan::compile(&[s], &Limits::default()).unwrap();
        assert_eq!(field_values(&plan, Field::DstPort, 5), [7, 1, 8, 7, 7]);
    }

    #[test]
    fn a_sequence_takes_its_lists_frame_by_frame() {
        let mut a = spec(&["src-port:list:9,3"]);
        a.count = Some(3);
        a.next = Next::Next;
        let mut b = spec(&[]);
        b.src_port = 7;
        b.count = Some(1);
        let plan = Plan::compile(&[a, b], &Limits::default()).unwrap();
        assert_eq!(field_values(&plan, Field::SrcPort, 4), [9, 3, 9, 7]);
    }

    #[test]
    fn random_fields_are_patched_and_stay_in_range() {
        let plan =
            Plan::compile(&[spec(&["src-port:random:5000-5009"])], &Limits::default()).unwrap();
        assert_eq!(cycle(&plan).patches.len(), 1);
        let values = field_values(&plan, Field::SrcPort, 1000);
        assert!(values.iter().all(|v| (5000..=5009).contains(v)));
        let distinct: std::collections::BTreeSet<_> = values.into_iter().collect();
        assert_eq!(distinct.len(), 10);
    }
}

#[cfg(test)]
mod interleaved_tests {
    use super::tests::signed;
    use super::*;
    use crate::Next;

    #[test]
    fn merged_interleaved_streams_keep_each_flows_sequence() {
        let a = signed(lane("a", 1, "2000", None));
        let b = signed(lane("b", 2, "1000", None));
        let plan = Plan::compile(&[a.clone(), b], &Limits::default()).unwrap();
        let merged = merge(lanes(&plan)).expect("two endless lanes merge");
        let c = &merged.cycle;
        let stamp = c
            .stamp
            .as_ref()
            .expect("a merged cycle of signed lanes is signed");
        let p = c.frames.len() as u64;
        let mut next = [0u32; 2];
        for n in 0..3 * p {
            let flow = stamp.flow_of(n, p) as usize;
            assert_eq!(stamp.seq(n, p), next[flow], "frame {n}");
            let sig = linerate_wire::signature::parse(&c.frames[(n % p) as usize]).unwrap();
            assert_eq!(sig.flow as usize, flow);
            next[flow] += 1;
        }
        assert_eq!(next[0], 2 * next[1]);
        let unsigned = lane("c", 3, "1000", None);
        let err = Plan::compile(&[a, unsigned], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("all or none"), "{err}");
    }

    fn lanes(plan: &Plan) -> &[Lane] {
        match &plan.shape {
            Shape::Lanes(lanes) => lanes,
            _ => panic!("not lanes"),
        }
    }

    fn lane(name: &str, src_port: u16, rate: &str, count: Option<u64>) -> StreamSpec {
        StreamSpec {
            name: name.into(),
            src_port,
            rate: rate.parse().unwrap(),
            count,
            mode: Mode::Interleaved,
            ..StreamSpec::seed()
        }
    }

    fn refusal(streams: &[StreamSpec], limits: &Limits) -> String {
        Plan::compile(streams, limits).unwrap_err().to_string()
    }

    #[test]
    fn each_stream_becomes_a_lane() {
        let plan = Plan::compile(
            &[
                lane("a", 1, "20k", Some(400)),
                lane("b", 2, "5k", Some(100)),
            ],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(lanes(&plan).len(), 2);
        assert_eq!(plan.count(), Some(500));
        assert_eq!(plan.frame_count(), 20);
        assert_eq!(lanes(&plan)[0].cycle.frames.len(), 10);
        assert_eq!(plan.streams.len(), 2);
        let pps = plan.requested_pps().unwrap();
        assert!((pps - 25_000.0).abs() < 1e-6, "{pps}");
        let endless = Plan::compile(
            &[lane("a", 1, "20k", None), lane("b", 2, "5k", Some(100))],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(endless.count(), None);
    }

    #[test]
    fn a_single_interleaved_stream_is_a_plain_plan() {
        let plan = Plan::compile(&[lane("a", 1, "1k", None)], &Limits::default()).unwrap();
        assert!(matches!(
            plan.shape,
            Shape::Cycle {
                pacing: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn unnamed_lanes_are_numbered() {
        let mut a = lane("", 1, "1k", None);
        let mut b = lane("", 2, "1k", None);
        a.name = StreamSpec::default().name;
        b.name = StreamSpec::default().name;
        let plan = Plan::compile(&[a, b], &Limits::default()).unwrap();
        let names: Vec<_> = plan.streams.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["stream0", "stream1"]);
    }

    #[test]
    fn sequence_keys_max_and_mixed_modes_are_refused() {
        let limits = Limits::default();
        let mut next = lane("b", 2, "5k", Some(10));
        next.next = Next::GotoFirst;
        let err = refusal(&[lane("a", 1, "1k", None), next], &limits);
        assert!(
            err.contains("'b'") && err.contains("next and loops"),
            "{err}"
        );
        let mut loops = lane("b", 2, "5k", Some(10));
        loops.loops = Some(3);
        let err = refusal(&[lane("a", 1, "1k", None), loops], &limits);
        assert!(err.contains("next and loops"), "{err}");
        let err = refusal(
            &[lane("a", 1, "max", None), lane("b", 2, "1k", None)],
            &limits,
        );
        assert!(err.contains("'a'") && err.contains("not max"), "{err}");
        let mut seq = lane("b", 2, "5k", Some(10));
        seq.mode = Mode::Sequence;
        let err = refusal(&[lane("a", 1, "1k", Some(10)), seq], &limits);
        assert!(err.contains("pick one mode"), "{err}");
    }

    #[test]
    fn lanes_together_must_fit_the_link() {
        let limits = Limits {
            link_mbps: Some(1000),
            ..Limits::default()
        };
        // 1 Mpps of 64-byte frames is 672 Mbit/s on the wire: each fits, both do not.
        let both = [lane("a", 1, "1M", None), lane("b", 2, "1M", None)];
        let err = refusal(&both, &limits);
        assert!(
            err.contains("together") && err.contains("above the link"),
            "{err}"
        );
        let fits = [lane("a", 1, "700k", None), lane("b", 2, "50%", None)];
        assert!(Plan::compile(&fits, &limits).is_ok());
    }

    /// The first `limit` frames of the merged schedules, counted per lane by brute force.
    fn merged(plan: &Plan, limit: u64) -> Vec<u64> {
        let lanes = lanes(plan);
        let mut next = vec![0u64; lanes.len()];
        for _ in 0..limit {
            let pick = (0..lanes.len())
                .filter(|&i| lanes[i].cycle.count.is_none_or(|c| next[i] < c))
                .min_by_key(|&i| (lanes[i].pacing.due_ps(next[i]), i));
            match pick {
                Some(i) => next[i] += 1,
                None => break,
            }
        }
        next
    }

    #[test]
    fn a_total_limit_takes_the_first_frames_by_due_time() {
        let mut b = lane("b", 2, "5k", Some(7));
        b.bursts = Some(crate::Bursts {
            frames: 3,
            per_second: 1000.0,
        });
        let plan = Plan::compile(
            &[lane("a", 1, "20k", None), b, lane("c", 3, "3k", Some(1000))],
            &Limits::default(),
        )
        .unwrap();
        for limit in [0, 1, 2, 3, 5, 64, 100, 1001, 50_000] {
            let counts: Vec<u64> = lane_counts(lanes(&plan), Some(limit))
                .into_iter()
                .map(Option::unwrap)
                .collect();
            assert_eq!(counts, merged(&plan, limit), "limit {limit}");
            assert_eq!(counts.iter().sum::<u64>(), limit);
        }
        assert_eq!(
            lane_counts(lanes(&plan), None),
            vec![None, Some(7), Some(1000)]
        );
        let finite = Plan::compile(
            &[lane("a", 1, "20k", Some(4)), lane("b", 2, "5k", Some(1))],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(
            lane_counts(lanes(&finite), Some(64)),
            vec![Some(4), Some(1)]
        );
        let shares = lanes_for_worker(lanes(&finite), 1, 2, Some(3));
        assert_eq!(
            shares.iter().map(|w| w.count).collect::<Vec<_>>(),
            [Some(1), Some(0)]
        );
    }

    #[test]
    fn lanes_merge_ahead_of_time_when_their_rates_allow() {
        let merged = |streams: &[StreamSpec]| {
            merge(lanes(&Plan::compile(streams, &Limits::default()).unwrap()))
        };
        // 20 kpps and 5 kpps: every 200 µs, four frames of one and one of the other.
        let m = merged(&[lane("a", 1, "20k", None), lane("b", 2, "5k", None)]).unwrap();
        assert_eq!((m.pacing.cycle_frames, m.pacing.cycle_ps), (5, 200_000_000));
        assert_eq!(
            m.pacing.offsets_ps,
            [0, 0, 50_000_000, 100_000_000, 150_000_000]
        );
        assert_eq!(m.pacing.burst, 2);
        // The seed stream's ten frames: ten periods until both lanes' cycles line up again.
        assert_eq!(m.cycle.frames.len(), 50);
        assert_eq!(m.lane_of[..10], [0, 1, 0, 0, 0, 0, 1, 0, 0, 0]);
        let src = |f: &Vec<u8>| u16::from_be_bytes([f[34], f[35]]);
        assert!(
            m.cycle
                .frames
                .iter()
                .zip(&m.lane_of)
                .all(|(f, &l)| src(f) == l as u16 + 1)
        );
        // In due order, it is the merged schedule `lane_counts` counts.
        let counts: Vec<u32> = (0..2)
            .map(|l| m.lane_of[..37].iter().filter(|&&x| x == l).count() as u32)
            .collect();
        let plan = Plan::compile(
            &[lane("a", 1, "20k", None), lane("b", 2, "5k", None)],
            &Limits::default(),
        )
        .unwrap();
        let want: Vec<u32> = lane_counts(lanes(&plan), Some(37))
            .into_iter()
            .map(|c| c.unwrap() as u32)
            .collect();
        assert_eq!(counts, want);
        // Counts, patches, and rates without a short common period are left to the lanes loop.
        assert!(merged(&[lane("a", 1, "20k", Some(5)), lane("b", 2, "5k", None)]).is_none());
        let mut patched = lane("b", 2, "5k", None);
        patched.vary = vec!["dst-port:random:1-9".parse().unwrap()];
        assert!(merged(&[lane("a", 1, "20k", None), patched]).is_none());
        assert!(merged(&[lane("a", 1, "7001", None), lane("b", 2, "11003", None)]).is_none());
    }
}
