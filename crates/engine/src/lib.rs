//! Workers, core pinning, pacing, counters and run control
