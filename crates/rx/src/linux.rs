//! The XDP receiver: `bpf/rx.bpf.c` loaded with its table sizes and clock, attached to an
//! interface (in a network namespace if asked), its per-CPU maps read and merged.

use libbpf_rs::{MapCore, MapFlags, Object};
use std::os::fd::AsFd;

use linerate_xdp::{AttachMode, HolderKind, LinkSwap, MapAbi, XdpLink};

use crate::flow::{FlowStats, RxFlow, RxGlobal, RxProgress, RxTotals};
use crate::{RxError, hist};

const FLOWS: &str = "rx_flows";
const HISTS: &str = "rx_hists";
const GAP_HISTS: &str = "rx_gap_hists";
const GLOBAL: &str = "rx_global";

/// The program's read-only data, `struct rx_ro` of `bpf/rx.bpf.c`.
#[repr(C)]
struct RxRodata {
    pass: u32,
    clock_tai: u32,
    every_frame: u32,
    gaps: u32,
}

const ABI: [MapAbi; 5] = [
    MapAbi::of::<u32, RxFlow>(FLOWS),
    MapAbi::sized(HISTS, size_of::<u32>(), hist::BUCKETS * size_of::<u64>()),
    MapAbi::sized(
        GAP_HISTS,
        size_of::<u32>(),
        hist::BUCKETS * size_of::<u64>(),
    ),
    MapAbi::of::<u32, RxGlobal>(GLOBAL),
    MapAbi::rodata::<RxRodata>(),
];

/// Flow ids are 16 bits: a table never needs more entries.
pub const MAX_FLOWS: u32 = 1 << 16;
/// Histograms cost 15 KiB per flow and CPU: at most this many flows get one.
pub const MAX_HIST_FLOWS: u32 = 4096;

/// Which clock both ends stamp with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    /// CLOCK_MONOTONIC: one host (the lab).
    #[default]
    Monotonic,
    /// CLOCK_TAI: two hosts whose clocks PTP keeps together (phc2sys).
    Tai,
}

/// How to set up the receiver.
#[derive(Debug, Clone)]
pub struct RxConfig {
    /// Flow ids below this are tracked; frames of higher ones are counted as untracked.
    pub flows: u32,
    /// Flow ids below this also get a latency histogram (percentiles).
    pub hist_flows: u32,
    pub clock: Clock,
    /// Pass the frames on to the stack (for a capture) instead of dropping them.
    pub pass: bool,
    /// Time every frame's latency, not one frame a departure stamp (bpf/rx.bpf.c).
    pub every_frame: bool,
    /// Time every frame's arrival and keep a histogram of the gaps between a flow's arrivals
    /// (its first `hist_flows` flows).
    pub gaps: bool,
}

impl Default for RxConfig {
    fn default() -> Self {
        RxConfig {
            flows: 4096,
            hist_flows: 256,
            clock: Clock::Monotonic,
            pass: false,
            every_frame: false,
            gaps: false,
        }
    }
}

/// The receive program, loaded; attached when made by [`Receiver::attach`].
#[derive(Debug)]
pub struct Receiver {
    // Declared before the object: dropped (detached, or the lab's sink put back) first.
    link: Option<XdpLink>,
    swap: Option<LinkSwap>,
    object: Object,
    config: RxConfig,
}

impl Receiver {
    /// Loads the program without attaching it (for `BPF_PROG_RUN` tests and benchmarks).
    pub fn load(config: RxConfig) -> Result<Receiver, RxError> {
        if config.flows == 0 || config.flows > MAX_FLOWS {
            return Err(RxError::FlowTable {
                asked: config.flows,
                max: MAX_FLOWS,
            });
        }
        if config.hist_flows > MAX_HIST_FLOWS.min(config.flows) {
            return Err(RxError::HistFlows {
                asked: config.hist_flows,
                max: MAX_HIST_FLOWS.min(config.flows),
                bytes: hist::BUCKETS * size_of::<u64>(),
            });
        }
        let rodata = RxRodata {
            pass: config.pass.into(),
            clock_tai: (config.clock == Clock::Tai).into(),
            every_frame: config.every_frame.into(),
            gaps: config.gaps.into(),
        };
        let flows = config.flows;
        // An empty array map cannot be made: one entry that no flow id reaches stands for none.
        let hist_flows = config.hist_flows.max(1);
        let gap_flows = if config.gaps { hist_flows } else { 1 };
        let object =
            linerate_xdp::load_object_checked("rx", linerate_xdp::rx_object(), &ABI, |open| {
                for mut map in open.maps_mut() {
                    let name = map.name().to_string_lossy().into_owned();
                    if name == FLOWS {
                        map.set_max_entries(flows)?;
                    } else if name == HISTS {
                        map.set_max_entries(hist_flows)?;
                    } else if name == GAP_HISTS {
                        map.set_max_entries(gap_flows)?;
                    } else if name.ends_with(".rodata") {
                        let data = map.initial_value_mut().ok_or_else(|| {
                            libbpf_rs::Error::from(std::io::Error::other("no read-only data"))
                        })?;
                        data[0..4].copy_from_slice(&rodata.pass.to_ne_bytes());
                        data[4..8].copy_from_slice(&rodata.clock_tai.to_ne_bytes());
                        data[8..12].copy_from_slice(&rodata.every_frame.to_ne_bytes());
                        data[12..16].copy_from_slice(&rodata.gaps.to_ne_bytes());
                    }
                }
                Ok(())
            })?;
        Ok(Receiver {
            link: None,
            swap: None,
            object,
            config,
        })
    }

    /// Loads the program and attaches it to `iface` in network namespace `netns` (None = ours).
    pub fn attach(
        iface: &str,
        netns: Option<&str>,
        mode: AttachMode,
        config: RxConfig,
    ) -> Result<Receiver, RxError> {
        Receiver::load(config)?.attach_loaded(iface, netns, mode)
    }

    /// Attaches a program [`Receiver::load`]ed before: what its maps were given in between
    /// (the hosts it answers for, the MACs it passes to the stack) holds from its first frame.
    pub fn attach_loaded(
        mut self,
        iface: &str,
        netns: Option<&str>,
        mode: AttachMode,
    ) -> Result<Receiver, RxError> {
        self.link = Some(linerate_xdp::attach_object(
            &self.object,
            iface,
            netns,
            mode,
        )?);
        Ok(self)
    }

    /// Loads the program and puts it in place of the program on the link pinned under `dir` (a
    /// lab's sink) until dropped: the lab's receive end counts per flow for a run.
    pub fn swap_into(dir: &std::path::Path, config: RxConfig) -> Result<Receiver, RxError> {
        Self::swap_into_as(dir, config, HolderKind::Run)
    }

    /// [`Receiver::swap_into`] for a `kind` of command, which the receive end's lock names to
    /// whoever finds it busy: a lone receiver ([`HolderKind::Receiver`]) counts any sender's
    /// frames, so a plain `tx` may send to it.
    pub fn swap_into_as(
        dir: &std::path::Path,
        config: RxConfig,
        kind: HolderKind,
    ) -> Result<Receiver, RxError> {
        Receiver::load(config)?.swap_loaded(dir, kind)
    }

    /// [`Receiver::swap_into_as`] for a program [`Receiver::load`]ed before, its maps given
    /// what must hold from its first frame.
    pub fn swap_loaded(
        mut self,
        dir: &std::path::Path,
        kind: HolderKind,
    ) -> Result<Receiver, RxError> {
        let swap = LinkSwap::new(dir, self.program().as_fd(), kind)?;
        self.swap = Some(swap);
        Ok(self)
    }

    /// Still attached to its interface: false once the interface was deleted (or moved out
    /// of its namespace, or, for a lab's borrowed receive end, the lab taken down), after which
    /// nothing more arrives. A loaded-only program always answers true.
    pub fn attached(&self) -> bool {
        self.link.as_ref().is_none_or(XdpLink::attached)
            && self.swap.as_ref().is_none_or(LinkSwap::attached)
    }

    /// The port's emulated hosts: the maps of `bpf/hosts.h` in this program, which answers ARP,
    /// neighbour solicitations and pings for the hosts added to them, before counting.
    pub fn hosts(&self) -> Result<linerate_hosts::HostTable, linerate_hosts::HostError> {
        linerate_hosts::HostTable::from_object(&self.object)
    }

    /// The program, for `BPF_PROG_RUN` (tests, the cost benchmark).
    pub fn program(&mut self) -> libbpf_rs::ProgramMut<'_> {
        self.object
            .progs_mut()
            .next()
            .expect("the rx object holds its program (checked at load)")
    }

    /// Everything counted so far: the flows that received anything and the global counters.
    pub fn read(&self) -> Result<RxTotals, RxError> {
        self.read_ids(0..self.config.flows, true)
    }

    /// [`RxProgram::read`] of the flows `ids` only (and every global counter), without latency
    /// percentiles: one lookup per id instead of one per table entry, and no histogram to
    /// merge (the costly part: ~10 ms a flow in a debug build). For a caller that polls and
    /// knows which flows come here (an agent, whose controller asks several times a second).
    pub fn read_flows(&self, ids: &[u16]) -> Result<RxTotals, RxError> {
        let mut ids: Vec<u32> = ids
            .iter()
            .map(|&i| u32::from(i))
            .filter(|&i| i < self.config.flows)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        self.read_ids(ids, false)
    }

    fn read_ids(
        &self,
        ids: impl IntoIterator<Item = u32>,
        percentiles: bool,
    ) -> Result<RxTotals, RxError> {
        let flows = self.map(FLOWS)?;
        let hists = self.map(HISTS)?;
        let gap_hists = self.map(GAP_HISTS)?;
        let global = self.map(GLOBAL)?;
        let mut totals = RxTotals::default();
        for cpu in percpu::<RxGlobal>(&global, 0, GLOBAL)? {
            totals.global.add(&cpu);
        }
        for id in ids {
            let cpus = percpu::<RxFlow>(&flows, id, FLOWS)?;
            if cpus.iter().all(|c| c.frames == 0) {
                continue;
            }
            let with_hist = percentiles && id < self.config.hist_flows;
            let h = with_hist
                .then(|| per_cpu_buckets(&hists, id, HISTS))
                .transpose()?;
            let mut stats = FlowStats::merge(id as u16, &cpus, h.as_deref());
            if with_hist && self.config.gaps {
                // Gaps are between one CPU's arrivals: the CPU that took most of the flow
                // (a stray frame on another, or a flow spread by RSS, would mix two clocks'
                // sequences).
                let (cpu, most) = cpus
                    .iter()
                    .enumerate()
                    .max_by_key(|(_, c)| c.frames)
                    .expect("a flow that arrived has a CPU");
                if most.frames >= 2 {
                    let mut buckets = per_cpu_buckets(&gap_hists, id, GAP_HISTS)?;
                    let mean = (most.last_ns - most.first_ns) as f64 / (most.frames - 1) as f64;
                    stats.gap_buckets = Some((buckets.swap_remove(cpu), mean));
                }
            }
            totals.flows.push(stats);
        }
        Ok(totals)
    }

    /// Forgets everything counted so far, so the next run's flows start afresh (their sequence
    /// numbers restart at 0; without this the state of the last run would call them late or
    /// old). Zeroes the global counters and every flow (and its histogram) that received
    /// anything: one lookup per table entry and one write per flow seen, much cheaper than
    /// loading and verifying the program again, which a trial loop would do hundreds of times.
    /// Frames arriving while it runs may survive it: call it when nothing is on its way.
    pub fn reset(&self) -> Result<(), RxError> {
        let flows = self.map(FLOWS)?;
        let hists = self.map(HISTS)?;
        let global = self.map(GLOBAL)?;
        zero(&global, 0, GLOBAL)?;
        for id in 0..self.config.flows {
            let cpus = percpu::<RxFlow>(&flows, id, FLOWS)?;
            if cpus.iter().all(|c| *c == RxFlow::default()) {
                continue;
            }
            zero(&flows, id, FLOWS)?;
            if id < self.config.hist_flows {
                zero(&hists, id, HISTS)?;
                if self.config.gaps {
                    zero(&self.map(GAP_HISTS)?, id, GAP_HISTS)?;
                }
            }
        }
        Ok(())
    }

    /// The flows' frames and duplicates summed over every CPU, and the other frames: the flow
    /// table's entries without the histograms, for a status line once a tick.
    pub fn progress(&self) -> Result<RxProgress, RxError> {
        let flows = self.map(FLOWS)?;
        let global = self.map(GLOBAL)?;
        let mut p = RxProgress::default();
        for cpu in percpu::<RxGlobal>(&global, 0, GLOBAL)? {
            p.other += cpu.other_frames + cpu.untracked_frames;
        }
        for id in 0..self.config.flows {
            for cpu in percpu::<RxFlow>(&flows, id, FLOWS)? {
                p.frames += cpu.frames;
                p.duplicates += cpu.dups;
            }
        }
        Ok(p)
    }

    fn map(&self, name: &'static str) -> Result<libbpf_rs::Map<'_>, RxError> {
        self.object
            .maps()
            .find(|m| m.name() == name)
            .ok_or(RxError::Read {
                map: name,
                message: "missing from the object".into(),
            })
    }
}

/// Entry `key` of a per-CPU histogram map: each CPU's buckets.
fn per_cpu_buckets(
    map: &impl MapCore,
    key: u32,
    name: &'static str,
) -> Result<Vec<Vec<u64>>, RxError> {
    Ok(lookup(map, key, name)?
        .iter()
        .map(|b| {
            b.chunks_exact(8)
                .map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")))
                .collect()
        })
        .collect())
}

fn lookup(map: &impl MapCore, key: u32, name: &'static str) -> Result<Vec<Vec<u8>>, RxError> {
    map.lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| RxError::Read {
            map: name,
            message: e.to_string(),
        })?
        .ok_or(RxError::Read {
            map: name,
            message: format!("no entry {key}"),
        })
}

/// Writes zeroes into every CPU's copy of entry `key` of a per-CPU array.
fn zero(map: &impl MapCore, key: u32, name: &'static str) -> Result<(), RxError> {
    let cpus = libbpf_rs::num_possible_cpus().map_err(|e| RxError::Write {
        map: name,
        message: e.to_string(),
    })?;
    let values = vec![vec![0u8; map.value_size() as usize]; cpus];
    map.update_percpu(&key.to_ne_bytes(), &values, MapFlags::ANY)
        .map_err(|e| RxError::Write {
            map: name,
            message: e.to_string(),
        })
}

/// One entry of a per-CPU array, one `T` per possible CPU. `T` is a plain `repr(C)` struct of
/// integers whose size the loader checked against the map's value size.
fn percpu<T: Copy + Default + Plain>(
    map: &impl MapCore,
    key: u32,
    name: &'static str,
) -> Result<Vec<T>, RxError> {
    lookup(map, key, name)?
        .iter()
        .map(|bytes| {
            T::from_bytes(bytes).ok_or_else(|| RxError::Read {
                map: name,
                message: format!(
                    "{} bytes where {} were expected",
                    bytes.len(),
                    size_of::<T>()
                ),
            })
        })
        .collect()
}

/// A `repr(C)` struct of integers only, read field by field from native-endian bytes.
trait Plain: Sized {
    fn from_bytes(b: &[u8]) -> Option<Self>;
}

fn words(b: &[u8]) -> impl Iterator<Item = u64> + '_ {
    b.chunks_exact(8)
        .map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")))
}

impl Plain for RxGlobal {
    fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < size_of::<Self>() {
            return None;
        }
        let w: Vec<u64> = words(b).collect();
        Some(RxGlobal {
            other_frames: w[0],
            other_bytes: w[1],
            untracked_frames: w[2],
            untracked_bytes: w[3],
            future: w[4],
        })
    }
}

impl Plain for RxFlow {
    fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < size_of::<Self>() {
            return None;
        }
        let w: Vec<u64> = words(b).collect();
        Some(RxFlow {
            frames: w[0],
            bytes: w[1],
            first_ns: w[2],
            last_ns: w[3],
            lat_min: w[4],
            lat_max: w[5],
            lat_sum: w[6],
            lat_count: w[7],
            late: w[8],
            dups: w[9],
            old: w[10],
            gaps: w[11],
            window: w[12],
            jitter16: w[13],
            prev_transit: w[14] as i64,
            next_seq: u32::from_ne_bytes(b[120..124].try_into().expect("4 bytes")),
            timed_tx: u32::from_ne_bytes(b[124..128].try_into().expect("4 bytes")),
        })
    }
}
