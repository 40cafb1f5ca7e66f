//! Every `linerate …` command in README.md, docs/*.md and the `--help` examples, parsed by the
//! real clap parser (not run): a renamed or removed flag fails here, not in a reader's shell.
//!
//! A command is a shell segment (split at `&&`, `;`, ` | ` and `||`, a comment cut at ` #`)
//! whose first word, after `sudo`, `nice -n N`, `timeout N` and `VAR=value`, is `linerate` or a
//! path ending in `/linerate`; in prose, a backtick span that starts that way. Syntax summaries
//! are expanded, not skipped: `[…]` brackets are dropped (the optional part is parsed too),
//! `a|b` words are tried one alternative per variant, and the placeholders of [`PLACEHOLDERS`]
//! and shell expansions (`$X`, `"$(…)"`, `<(…)`) become a value of the right shape. An elision
//! (`…`) drops that word alone; `linerate … --json`, where the command itself is elided, has
//! nothing to parse. A sentence's `linerate rx` names a command: the name must exist.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};

use super::Cli;

/// Upper-case words the docs use for a value, and a value that stands for them.
const PLACEHOLDERS: &[(&str, &str)] = &[
    ("COMMAND", "tx"),
    ("IFACE", "eth1"),
    ("NETNS", "far"),
    ("NS", "far"),
    ("TX", "eth1"),
    ("RX", "eth2"),
    ("N", "2"),
    ("R", "1M"),
    ("B", "afxdp"),
    ("C", "0"),
    ("F", "file"),
    ("FILE", "file"),
    ("T", "0123456789abcdef"),
    ("ADDR:PORT", "127.0.0.1:8443"),
    ("MAC", "02:00:00:00:00:02"),
];

/// Backtick spans that start with `linerate ` and are no command: the alias linerate gives the
/// interfaces of a lab.
const NOT_COMMANDS: &[&str] = &["linerate lab <name>"];

/// One command found, where it was found, and its words.
#[derive(Debug)]
struct Found {
    at: String,
    text: String,
}

/// The shell segments of a line: split at `&&`, `||`, `;` and a pipe with blanks around it (a
/// `drv|skb` word is an alternative, not a pipe), after cutting a `#` comment.
fn segments(line: &str) -> Vec<String> {
    let line = match line.find(" #") {
        Some(i) => &line[..i],
        None if line.trim_start().starts_with('#') => "",
        None => line,
    };
    let mut parts = vec![line.to_string()];
    for sep in ["&&", "||", ";", " | "] {
        parts = parts
            .iter()
            .flat_map(|p| p.split(sep).map(str::to_string).collect::<Vec<_>>())
            .collect();
    }
    parts
}

/// Brackets inside quotes are the word's own (an IPv6 socket address, `'[2001:db8::2]:80'`),
/// not a summary's optional part: carried through as these until [`value_for`] has dropped the
/// summary's.
const QUOTED_BRACKETS: [(char, char); 2] = [('[', '\u{e000}'), (']', '\u{e001}')];

/// Words of a segment: quotes removed, `$(…)` and `$X` kept as one word, a redirection and its
/// target dropped, and a background job's `&`.
fn words(segment: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut depth = 0usize;
    let mut any = false;
    for c in segment.chars() {
        match (quote, c) {
            (None, '\'' | '"') if depth == 0 => {
                quote = Some(c);
                any = true;
            }
            (Some(q), _) if c == q && depth == 0 => quote = None,
            (_, '(') if word.ends_with('$') || word.ends_with('<') || depth > 0 => {
                depth += 1;
                word.push(c);
            }
            (_, ')') if depth > 0 => {
                depth -= 1;
                word.push(c);
            }
            (None, c) if c.is_whitespace() && depth == 0 => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (Some(_), c) => word.push(
                QUOTED_BRACKETS
                    .iter()
                    .find(|(b, _)| *b == c)
                    .map_or(c, |(_, kept)| *kept),
            ),
            _ => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    let mut kept = Vec::new();
    let mut skip_next = false;
    for w in words {
        if skip_next {
            skip_next = false;
        } else if matches!(w.as_str(), ">" | ">>" | "<" | "2>" | "2>&1") {
            skip_next = w != "2>&1";
        } else if w != "&" && !w.starts_with('>') && !w.starts_with("2>") {
            kept.push(w);
        }
    }
    kept
}

/// The arguments after `linerate`, when the segment runs linerate.
fn linerate_args(words: &[String]) -> Option<Vec<String>> {
    let mut rest = words;
    loop {
        let first = rest.first()?;
        rest = match first.as_str() {
            // sudo -E, nice -n -20, timeout 10s, VAR=value: what runs is further on.
            "sudo" | "exec" | "time" | "env" | "nice" | "timeout" | "-E" | "-n" => &rest[1..],
            w if w.contains('=') && !w.starts_with('-') => &rest[1..],
            w if w.trim_end_matches('s').parse::<i64>().is_ok() => &rest[1..],
            w if w == "linerate" || w.ends_with("/linerate") => return Some(rest[1..].to_vec()),
            _ => return None,
        };
    }
}

/// The word with placeholders and shell expansions replaced by values of their shape.
fn value_for(word: &str) -> String {
    if word.starts_with("<(") {
        return "/dev/fd/63".into();
    }
    let mut word = word.replace(['[', ']'], "");
    for (bracket, kept) in QUOTED_BRACKETS {
        word = word.replace(kept, &bracket.to_string());
    }
    if word.starts_with('$') {
        return "1".into();
    }
    let swap = |part: &str| {
        PLACEHOLDERS
            .iter()
            .find(|(name, _)| *name == part)
            .map_or_else(|| part.to_string(), |(_, value)| (*value).to_string())
    };
    match word.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => format!("{flag}={}", swap(value)),
        _ => word.split('@').map(swap).collect::<Vec<_>>().join("@"),
    }
}

/// Every variant of a command: one per alternative of its `a|b` words, the same index in each.
fn variants(args: &[String]) -> Vec<Vec<String>> {
    let args: Vec<String> = args
        .iter()
        .filter(|w| !matches!(w.as_str(), "…" | "..." | "[" | "]" | "\\"))
        .map(|w| value_for(w))
        .filter(|w| !w.is_empty())
        .collect();
    let widest = args.iter().map(|w| w.split('|').count()).max().unwrap_or(1);
    (0..widest)
        .map(|i| {
            let mut v = vec!["linerate".to_string()];
            v.extend(args.iter().map(|w| {
                let alts: Vec<&str> = w.split('|').collect();
                alts[i % alts.len()].to_string()
            }));
            v
        })
        .collect()
}

/// The commands of a markdown text: every line of a fenced block (continuation lines joined)
/// and every backtick span outside the blocks.
fn commands(name: &str, text: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let mut in_block = false;
    let mut prose = String::new();
    let mut pending = String::new();
    let mut start = 0;
    let add = |at: usize, line: &str, found: &mut Vec<Found>| {
        for segment in segments(line) {
            if linerate_args(&words(&segment)).is_some() {
                found.push(Found {
                    at: format!("{name}:{at}"),
                    text: segment.trim().to_string(),
                });
            }
        }
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            prose.push('\n');
            continue;
        }
        if !in_block {
            prose.push_str(line);
            prose.push('\n');
            continue;
        }
        prose.push('\n');
        let line = line.trim_start().strip_prefix("$ ").unwrap_or(line);
        if pending.is_empty() {
            start = i + 1;
        }
        match line.trim_end().strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line);
                add(start, &std::mem::take(&mut pending), &mut found);
            }
        }
    }
    // Backtick spans may run over a line end; the line number is where the span starts.
    let mut rest = prose.as_str();
    let mut offset = 0;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        let span = &rest[open + 1..open + 1 + len];
        let line = prose[..offset + open].matches('\n').count() + 1;
        // In a table, a pipe inside code is written `\|`.
        let span = span.replace('\n', " ").replace("\\|", "|");
        if !NOT_COMMANDS.contains(&span.as_str()) {
            add(line, &span, &mut found);
        }
        offset += open + len + 2;
        rest = &rest[open + len + 2..];
    }
    found
}

/// The markdown files the test reads: README.md and every docs/*.md.
fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// True when the words name a command without running it (`linerate rx` in a sentence) and
/// every name is one of linerate's commands.
fn names_a_command(args: &[String]) -> bool {
    let mut command = Cli::command();
    for name in args {
        match command.find_subcommand(name) {
            Some(sub) => command = sub.clone(),
            None => return false,
        }
    }
    true
}

/// The failures of the commands: where, the command, clap's message.
fn failures(found: &[Found]) -> Vec<String> {
    let mut failed = Vec::new();
    for f in found {
        let Some(args) = linerate_args(&words(&f.text)) else {
            continue;
        };
        // `linerate … --json`: any command; there is none to parse.
        if args.first().is_some_and(|a| a == "…") || names_a_command(&args) {
            continue;
        }
        for variant in variants(&args) {
            if let Err(e) = Cli::try_parse_from(&variant) {
                use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
                if matches!(e.kind(), DisplayHelp | DisplayVersion) {
                    continue;
                }
                let why = e.render().to_string();
                let why = why.lines().next().unwrap_or_default().to_string();
                failed.push(format!("{}: `{}` ({variant:?}): {why}", f.at, f.text));
            }
        }
    }
    failed
}

#[test]
fn every_command_in_the_docs_parses() {
    let mut found = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).expect("a doc is readable");
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        found.extend(commands(&name, &text));
    }
    // The docs hold well over a hundred; far fewer means the finder broke, not the docs.
    assert!(found.len() > 100, "only {} commands found", found.len());
    let failed = failures(&found);
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Every visible command that runs something (not a group such as `lab`, whose own help lists
/// its commands' examples too), with its full name.
fn leaf_commands(command: &clap::Command, name: &str, out: &mut Vec<(String, clap::Command)>) {
    for sub in command.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        let full = format!("{name} {}", sub.get_name());
        if sub.has_subcommands() {
            leaf_commands(sub, &full, out);
        }
        out.push((full, sub.clone()));
    }
}

#[test]
fn every_help_example_parses() {
    let mut all = Vec::new();
    leaf_commands(&Cli::command(), "linerate", &mut all);
    let mut found = Vec::new();
    for (name, command) in &all {
        let examples = command.get_after_help().map(ToString::to_string);
        let block = format!("```\n{}\n```", examples.unwrap_or_default());
        let before = found.len();
        found.extend(commands(&format!("{name} --help"), &block));
        assert!(found.len() > before, "{name} has no example");
    }
    assert!(all.len() > 15, "{all:?}");
    let failed = failures(&found);
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn the_finder_reads_shell_as_a_reader_does() {
    let found = commands(
        "t",
        "run `linerate ports`, not `linerate_stream::x`\n```sh\n\
         sudo -E target/release/linerate tx -i lr0 \\\n  --rate 1M   # a comment\n\
         linerate lab up && linerate lab down; echo linerate\n\
         nice -n -20 linerate tx … -d 4s | jq .\n\
         linerate rx -i IFACE [--netns NS] --rx-mode drv|skb\n\
         linerate tcp server -i lr1 --address 2001:db8::1/64 &\n\
         linerate tcp client -i lr0 --src 2001:db8:1::/120 --server '[2001:db8::1]:80'\n```\n",
    );
    let texts: Vec<&str> = found.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "sudo -E target/release/linerate tx -i lr0   --rate 1M",
            "linerate lab up",
            "linerate lab down",
            "nice -n -20 linerate tx … -d 4s",
            "linerate rx -i IFACE [--netns NS] --rx-mode drv|skb",
            "linerate tcp server -i lr1 --address 2001:db8::1/64 &",
            "linerate tcp client -i lr0 --src 2001:db8:1::/120 --server '[2001:db8::1]:80'",
            "linerate ports",
        ]
    );
    let client = linerate_args(&words(texts[6])).unwrap();
    assert_eq!(variants(&client)[0].last().unwrap(), "[2001:db8::1]:80");
    let rx = linerate_args(&words(texts[4])).unwrap();
    assert_eq!(
        variants(&rx),
        [
            [
                "linerate",
                "rx",
                "-i",
                "eth1",
                "--netns",
                "far",
                "--rx-mode",
                "drv"
            ],
            [
                "linerate",
                "rx",
                "-i",
                "eth1",
                "--netns",
                "far",
                "--rx-mode",
                "skb"
            ],
        ]
    );
    assert!(failures(&found).is_empty());
    // A flag that does not exist, written as the docs would: the test must catch it.
    let broken = commands("t", "```\nlinerate tx -i lr0 --rxmode skb\n```\n");
    assert_eq!(failures(&broken).len(), 1, "{broken:?}");
}
