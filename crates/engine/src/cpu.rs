//! Where the time went: each worker thread's CPU time and last core (the runner owns the
//! threads), and each core's busy and softirq share over the run (`/proc/stat`), so frames per
//! busy core can be compared across backends and hosts. Linux only; elsewhere the report
//! leaves them out (macOS's `thread_info`/`host_processor_info` are not read yet).

use serde::Serialize;

/// One worker thread's CPU time over its run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ThreadCpu {
    pub user_s: f64,
    pub system_s: f64,
    /// The core the thread last ran on (its pinned core when pinned).
    pub last_core: Option<usize>,
}

/// One core's share of the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CoreLoad {
    pub core: usize,
    /// Share of the run the core was not idle (user, nice, system, irq, softirq, steal), in %.
    pub busy_pct: f64,
    /// Share of the run spent in softirq (where the kernel's transmit path for veth and the
    /// receiving XDP program run), in %.
    pub softirq_pct: f64,
}

/// The calling thread's (user, system) CPU time in seconds.
#[cfg(target_os = "linux")]
pub fn thread_times() -> Option<(f64, f64)> {
    // SAFETY: a zeroed rusage is a valid out-parameter; getrusage writes only into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD asks for the calling thread; `usage` lives across the call.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return None;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some((secs(usage.ru_utime), secs(usage.ru_stime)))
}

#[cfg(not(target_os = "linux"))]
pub fn thread_times() -> Option<(f64, f64)> {
    None
}

/// The core the calling thread runs on now.
#[cfg(target_os = "linux")]
pub fn current_core() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and returns -1 on failure.
    usize::try_from(unsafe { libc::sched_getcpu() }).ok()
}

#[cfg(not(target_os = "linux"))]
pub fn current_core() -> Option<usize> {
    None
}

/// CPU time of `work` on the calling thread, and the core it ended on.
pub fn measure<R>(work: impl FnOnce() -> R) -> (R, Option<ThreadCpu>) {
    let before = thread_times();
    let r = work();
    let cpu = before.zip(thread_times()).map(|(b, a)| ThreadCpu {
        user_s: a.0 - b.0,
        system_s: a.1 - b.1,
        last_core: current_core(),
    });
    (r, cpu)
}

/// Per core (busy, softirq, total) jiffies, from `/proc/stat`.
#[derive(Debug, Clone, Default)]
pub struct CoreTimes(Vec<(usize, u64, u64, u64)>);

impl CoreTimes {
    /// Now; empty where `/proc/stat` is not there.
    pub fn read() -> CoreTimes {
        std::fs::read_to_string("/proc/stat")
            .map(|s| CoreTimes::parse(&s))
            .unwrap_or_default()
    }

    fn parse(stat: &str) -> CoreTimes {
        let cores = stat
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let core = f.next()?.strip_prefix("cpu")?.parse::<usize>().ok()?;
                let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
                // user nice system idle iowait irq softirq steal [guest guest_nice]
                if v.len() < 8 {
                    return None;
                }
                let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
                let total = busy + v[3] + v[4];
                Some((core, busy, v[6], total))
            })
            .collect();
        CoreTimes(cores)
    }

    /// Each core's load between `self` (earlier) and `later`.
    pub fn load_until(&self, later: &CoreTimes) -> Vec<CoreLoad> {
        later
            .0
            .iter()
            .filter_map(|&(core, busy, soft, total)| {
                let &(_, b0, s0, t0) = self.0.iter().find(|c| c.0 == core)?;
                let dt = total.checked_sub(t0).filter(|&d| d > 0)?;
                let pct = |a: u64, b: u64| a.saturating_sub(b) as f64 * 100.0 / dt as f64;
                Some(CoreLoad {
                    core,
                    busy_pct: pct(busy, b0),
                    softirq_pct: pct(soft, s0),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_lines_become_busy_and_softirq_shares() {
        let a = CoreTimes::parse(
            "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 100 0 50 800 0 10 40 0 0 0\ncpu1 0 0 0 1000 0 0 0 0 0 0\nintr 5\n",
        );
        let b = CoreTimes::parse(
            "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 150 0 100 850 0 10 90 0 0 0\ncpu1 0 0 0 1200 0 0 0 0 0 0\n",
        );
        let l = a.load_until(&b);
        assert_eq!(l.len(), 2);
        // cpu0: busy +150 (user 50, system 50, softirq 50) of +200 jiffies.
        assert_eq!(
            (l[0].core, l[0].busy_pct, l[0].softirq_pct),
            (0, 75.0, 25.0)
        );
        assert_eq!((l[1].core, l[1].busy_pct), (1, 0.0));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_busy_thread_is_charged_its_cpu_time() {
        let (_, cpu) = measure(|| {
            let t = std::time::Instant::now();
            let mut x = 0u64;
            while t.elapsed() < std::time::Duration::from_millis(200) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        });
        let cpu = cpu.expect("getrusage works on Linux");
        assert!(cpu.user_s + cpu.system_s >= 0.05, "{cpu:?}");
        assert!(cpu.last_core.is_some());
    }
}
