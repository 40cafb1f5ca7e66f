use std::time::{Duration, Instant};

use crate::PortError;

/// The drain of a queue whose completions come back from the kernel in their own time (AF_XDP,
/// AF_PACKET): `step` pushes out what is unsent and reaps, returning (frames reaped, frames
/// still outstanding). Polls every 20 µs until nothing is outstanding; after `timeout` the
/// frames still missing are an error that names the queue. Returns the frames reaped.
pub fn drain_polling(
    iface: &str,
    queue: u32,
    timeout: Duration,
    mut step: impl FnMut() -> Result<(u32, u32), PortError>,
) -> Result<u32, PortError> {
    let start = Instant::now();
    let mut reaped = 0;
    loop {
        let (now, outstanding) = step()?;
        reaped += now;
        if outstanding == 0 {
            return Ok(reaped);
        }
        if start.elapsed() >= timeout {
            return Err(PortError::io(
                format!(
                    "queue {queue} of {iface}: {outstanding} frame(s) still not completed after \
                     {timeout:?}"
                ),
                std::io::ErrorKind::TimedOut.into(),
            ));
        }
        std::thread::sleep(Duration::from_micros(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Usage;

    #[test]
    fn counts_every_reap_until_nothing_is_outstanding() {
        let mut left = 5u32;
        let got = drain_polling("x", 0, Duration::from_secs(5), || {
            left -= 1;
            Ok((1, left))
        })
        .unwrap();
        assert_eq!(got, 5);
    }

    #[test]
    fn frames_that_never_complete_time_out_naming_the_queue() {
        let e = drain_polling("lr0", 3, Duration::from_millis(1), || Ok((0, 7))).unwrap_err();
        assert!(!e.is_usage());
        assert_eq!(
            e.to_string(),
            "queue 3 of lr0: 7 frame(s) still not completed after 1ms: timed out"
        );
    }
}
