//! The strings the CLI hands to the stream crate: `--vary`, `--rate`, `--size-mode` and
//! durations. The first byte picks the parser; what parses is then used as a run would.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_stream::{Rate, SizeMode, Vary, parse_duration};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 4 {
        0 => {
            if let Ok(vary) = text.parse::<Vary>() {
                // What is written out reads back the same.
                assert_eq!(vary.to_string().parse::<Vary>().ok(), Some(vary.clone()));
                let _ = vary.resolve(which & 0x80 != 0);
            }
        }
        1 => {
            if let Ok(rate) = Rate::parse(text) {
                for size in [64, 1518, 65553] {
                    let _ = rate.interval_ps(size, Some(10_000));
                    let _ = rate.interval_ps(size, None);
                }
            }
        }
        2 => {
            if let Ok(mode) = text.parse::<SizeMode>() {
                // What is written out reads back the same.
                assert_eq!(
                    mode.to_string().parse::<SizeMode>().ok(),
                    Some(mode.clone())
                );
                let sizes = mode.with_size(64);
                let schedule = sizes.schedule(u64::from(which));
                assert!(!schedule.is_empty());
                assert!(
                    schedule
                        .iter()
                        .all(|&s| (sizes.min()..=sizes.max()).contains(&s))
                );
            }
        }
        _ => {
            if let Ok(d) = parse_duration(text) {
                assert!(!d.is_zero());
            }
        }
    }
});
