//! `linerate console`: the OTG client's options from the flags (or a `linerate serve` of its own
//! on loopback, for `--config`), then the TUI or the text loop.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use linerate_cli::ConsoleArgs;
use linerate_console::ConsoleError;
use linerate_console::client::{ClientOptions, OtgClient};
use linerate_console::tui::{self, Options};

use crate::usage::usage;

pub fn run(args: &ConsoleArgs) -> Result<()> {
    if args.interval < Duration::from_millis(100) {
        return Err(usage("--interval: at least 100ms"));
    }
    // The keys are read from standard input: the table needs a terminal there.
    if !args.no_tui && !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Err(usage(
            "standard input is not a terminal: run the console in one, or give --no-tui",
        ));
    }
    // Kept until the console quits: dropped, it stops the server and what it set up.
    let local = args.config.as_deref().map(LocalServe::start).transpose()?;
    let (location, token) = match &local {
        Some(l) => (l.url.clone(), Some(l.token.clone())),
        None => (args.location.clone(), token(args)?),
    };
    if !(location.starts_with("https://") || location.starts_with("http://")) {
        return Err(usage(format!(
            "--location {location}: give the server's URL, e.g. https://127.0.0.1:8443"
        )));
    }
    let ca = args
        .ca
        .as_ref()
        .map(|f| std::fs::read(f).map_err(|e| usage(format!("--ca {}: {e}", f.display()))))
        .transpose()?;
    // The token goes to whoever answers: beyond loopback the server must prove who it is.
    if local.is_none() && ca.is_none() && !args.insecure && !on_loopback(&location) {
        return Err(usage(format!(
            "--location {location}: beyond loopback give --ca FILE (the CA the server's \
             certificate chains to), or --insecure to take any certificate"
        )));
    }
    let client = OtgClient::new(&ClientOptions {
        location: location.clone(),
        token,
        ca,
        timeout: Duration::from_secs(10),
    })
    .map_err(|e| usage(e.to_string()))?;
    if let (Some(l), Some(file)) = (&local, &args.config) {
        l.set_config(&client, file)?;
    }
    let stop = crate::signal::stop_flag()?;
    let stopped = || stop.load(Ordering::Relaxed);
    let options = Options {
        interval: args.interval,
        location: match &args.config {
            Some(f) => format!("{} (serve of its own)", f.display()),
            None => location.clone(),
        },
    };
    if args.no_tui {
        let mut out = std::io::stdout().lock();
        return tui::print(&client, &options, &mut out, &stopped).context("print the table");
    }
    // A first reading before the screen is taken: a server that cannot be reached is one line
    // on a terminal left as it was.
    if let Err(e) = client.flows() {
        return Err(match e {
            ConsoleError::Transport(why) => anyhow!(
                "no OTG server answers at {location} ({why}): start `linerate serve` there, or \
                 give its --location"
            ),
            other => anyhow::Error::new(other).context(location),
        });
    }
    tui::run(&client, &options, &stopped).context("the console")
}

/// Whether `url`'s host is this machine's loopback (`localhost`, 127.0.0.0/8, ::1).
fn on_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn token(args: &ConsoleArgs) -> Result<Option<String>> {
    Ok(match (&args.token, &args.token_file) {
        (_, Some(file)) => Some(crate::options::read_token(file, "--token-file")?),
        (t, None) => t.clone(),
    })
}

/// A `linerate serve` of the console's own, on a loopback port the kernel picks, with a token
/// only the two know; stopped (SIGTERM: traffic stopped, programs detached, the lab's sink given
/// back) when dropped.
struct LocalServe {
    child: Child,
    url: String,
    token: String,
    /// What it said on stderr, for the error of a config it refused or an early exit.
    said: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl LocalServe {
    fn start(config: &Path) -> Result<LocalServe> {
        // Read and parsed first: a missing or malformed file starts nothing.
        let text = std::fs::read(config)
            .map_err(|e| usage(format!("--config {}: {e}", config.display())))?;
        serde_json::from_slice::<serde_json::Value>(&text).map_err(|e| {
            usage(format!(
                "--config {}: not OTG JSON ({e}): give a config as snappi's serialize() writes it",
                config.display()
            ))
        })?;
        let token = random_token()?;
        // Removed when this returns, whichever way: serve reads the token at its start.
        let dir = PrivateDir::new(&token[..8])?;
        let token_file = dir.0.join("token");
        std::fs::write(&token_file, &token).context("write the local server's token")?;
        let exe = std::env::current_exe().context("find linerate's own binary")?;
        let mut child = Command::new(exe)
            .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(&token_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("start linerate serve")?;
        let stderr = child.stderr.take().context("the server's stderr")?;
        let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let keep = std::sync::Arc::clone(&said);
        let (first_tx, first_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr)
                .lines()
                .map_while(std::result::Result::ok);
            let _ = first_tx.send(lines.next().unwrap_or_default());
            for line in lines {
                let mut kept = keep.lock().unwrap_or_else(|p| p.into_inner());
                kept.push(line);
                let over = kept.len().saturating_sub(20);
                kept.drain(..over);
            }
        });
        // serve says where it listens as it starts; one that hangs before that is not waited
        // for forever.
        let first = first_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| "(nothing within 30 s)".into());
        drop(dir);
        let url = first.split_whitespace().find(|w| w.starts_with("http"));
        let Some(url) = url.map(str::to_owned) else {
            let mut serve = LocalServe {
                child,
                url: String::new(),
                token,
                said,
            };
            serve.stop();
            return Err(anyhow!("linerate serve did not start: {first}"));
        };
        Ok(LocalServe {
            child,
            url,
            token,
            said,
        })
    }

    /// set_config of the file; a refusal in the server's words.
    fn set_config(&self, client: &OtgClient, file: &Path) -> Result<()> {
        let text = std::fs::read(file)?;
        let config: serde_json::Value = serde_json::from_slice(&text)?;
        client.set_config(&config).map_err(|e| match e {
            ConsoleError::Refused { errors, .. } => {
                usage(format!("--config {}: refused: {errors}", file.display()))
            }
            other => anyhow!("--config {}: {other}", file.display()),
        })
    }

    /// SIGTERM, then waits for it to clean up (10 s at most, then SIGKILL).
    fn stop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let said = self.said.lock().map(|s| s.join("\n")).unwrap_or_default();
        eprintln!("linerate console: the local server did not stop in 10 s; killed it\n{said}");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LocalServe {
    fn drop(&mut self) {
        self.stop();
    }
}

/// 32 hex digits from the kernel's random source.
fn random_token() -> Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("read /dev/urandom for the local server's token")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A directory only this user may enter, for the token file, named so no one can take the name
/// first; removed when dropped.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn new(unique: &str) -> Result<PrivateDir> {
        use std::os::unix::fs::DirBuilderExt;
        let dir =
            std::env::temp_dir().join(format!("linerate-console-{}-{unique}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("create {}", dir.display()))?;
        Ok(PrivateDir(dir))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::on_loopback;

    #[test]
    fn only_this_machines_loopback_is_taken_on_any_certificate() {
        for url in [
            "https://127.0.0.1:8443",
            "https://localhost:1/",
            "https://[::1]:8443",
            "http://127.9.0.1",
        ] {
            assert!(on_loopback(url), "{url}");
        }
        for url in [
            "https://10.0.0.5:8443",
            "https://example.com",
            "https://[2001:db8::1]:1",
            "https://127.0.0.1.example:1",
        ] {
            assert!(!on_loopback(url), "{url}");
        }
    }
}
