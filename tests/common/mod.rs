//! Helpers shared by the end-to-end tests: run the real binary, decode with real tcpdump.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

pub fn linerate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(args)
        .output()
        .expect("run linerate")
}

/// Runs linerate and insists it succeeded.
pub fn linerate_ok(args: &[&str]) -> String {
    let out = linerate(args);
    assert!(
        out.status.success(),
        "linerate {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// Runs linerate, insists on exit code 2 and one clear line on stderr, and returns that line.
pub fn linerate_usage_error(args: &[&str]) -> String {
    let out = linerate(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "linerate {args:?}: {stderr}");
    let line = stderr.trim();
    assert!(!line.is_empty(), "linerate {args:?}: no message");
    line.to_owned()
}

/// One decoded frame per element, as `tcpdump -nn -vv -e` prints it (continuation lines joined).
pub fn tcpdump(pcap: &Path) -> Vec<String> {
    let out = Command::new("tcpdump")
        .args(["-r"])
        .arg(pcap)
        .args(["-nn", "-vv", "-e", "-tt"])
        .output()
        .expect("tcpdump is installed (scripts/setup.sh)");
    assert!(
        out.status.success(),
        "tcpdump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut frames: Vec<String> = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line.starts_with(char::is_whitespace) {
            if let Some(last) = frames.last_mut() {
                last.push(' ');
                last.push_str(line.trim());
            }
        } else {
            frames.push(line.to_owned());
        }
    }
    frames
}

/// The word after `key` in a decoded line, e.g. `after(line, "length")`.
pub fn after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(key)? + key.len();
    line[at..].split_whitespace().next()
}

/// The `length N:` of the Ethernet header line (bytes captured, FCS excluded).
pub fn frame_len(line: &str) -> usize {
    after(line, ", length ")
        .and_then(|w| w.trim_end_matches(':').parse().ok())
        .unwrap_or_else(|| panic!("no frame length in {line}"))
}
