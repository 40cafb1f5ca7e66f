//! The terminal: the table drawn with ratatui each reading, keys read between readings, and
//! the plain-text loop of `--no-tui`.

use std::io::Write;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::{DefaultTerminal, Frame};

use crate::ConsoleError;
use crate::client::OtgClient;
use crate::keys::{Action, HELP, Key, action};
use crate::view::{View, latency_us, spark};

/// How the console runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Between readings.
    pub interval: Duration,
    /// Said in the title line.
    pub location: String,
}

/// What the screen holds between readings.
struct Screen {
    view: View,
    selected: usize,
    /// The last action's outcome, or the last reading's error.
    message: String,
    error: bool,
    read_at: Option<Instant>,
}

/// Runs the table in the terminal until `q`, Esc or Ctrl-C (or `stop`).
pub fn run(
    client: &OtgClient,
    options: &Options,
    stop: &dyn Fn() -> bool,
) -> Result<(), ConsoleError> {
    let mut terminal = ratatui::try_init()?;
    let result = run_on(&mut terminal, client, options, stop);
    ratatui::restore();
    result
}

fn run_on(
    terminal: &mut DefaultTerminal,
    client: &OtgClient,
    options: &Options,
    stop: &dyn Fn() -> bool,
) -> Result<(), ConsoleError> {
    let start = Instant::now();
    let mut screen = Screen {
        view: View::default(),
        selected: 0,
        message: String::new(),
        error: false,
        read_at: None,
    };
    let mut next = Instant::now();
    while !stop() {
        if Instant::now() >= next {
            read(client, &mut screen, start);
            next = Instant::now() + options.interval;
        }
        terminal.draw(|f| draw(f, &screen, options))?;
        let wait = next.saturating_duration_since(Instant::now());
        // A terminal that went away (its tmux pane closed, its SSH session dropped) ends the
        // console as a quit would.
        let Some(events) = events(wait.min(Duration::from_millis(200)))? else {
            break;
        };
        for key in events.iter().filter_map(key_of) {
            match action(key) {
                Some(Action::Quit) => return Ok(()),
                Some(a) => {
                    act(client, &mut screen, a);
                    // Show what the action did at once.
                    next = Instant::now();
                }
                None => {}
            }
        }
    }
    Ok(())
}

/// The key a terminal event is, if it is a key press the console reads.
fn key_of(event: &Event) -> Option<Key> {
    let Event::Key(k) = event else {
        return None;
    };
    if k.kind != KeyEventKind::Press {
        return None;
    }
    Some(match k.code {
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Esc => Key::Esc,
        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => Key::CtrlC,
        KeyCode::Char(c) => Key::Char(c),
        _ => return None,
    })
}

/// What the terminal (standard input) holds within `wait`.
#[derive(Debug, PartialEq, Eq)]
enum Terminal {
    Nothing,
    Input,
    /// Hung up or closed: nothing will ever come.
    Gone,
}

fn terminal(wait: Duration) -> Result<Terminal, ConsoleError> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
    match poll(&mut fds, PollTimeout::from(ms)) {
        Ok(0) | Err(nix::errno::Errno::EINTR) => Ok(Terminal::Nothing),
        Ok(_) => {
            let got = fds[0].revents().unwrap_or(PollFlags::empty());
            Ok(
                if got.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) {
                    Terminal::Gone
                } else if got.contains(PollFlags::POLLIN) {
                    Terminal::Input
                } else {
                    Terminal::Nothing
                },
            )
        }
        Err(e) => Err(ConsoleError::Terminal(e.into())),
    }
}

/// The events the terminal has within `wait` (none when it has nothing); None once it is gone.
/// crossterm 0.28 re-reads a hung-up terminal forever inside `event::poll`, its timeout never
/// checked (crossterm issue #793), so the terminal is polled here first and crossterm asked
/// only for what is there: a read of what arrived, then what its parser still holds.
fn events(wait: Duration) -> Result<Option<Vec<Event>>, ConsoleError> {
    match terminal(wait)? {
        Terminal::Gone => return Ok(None),
        Terminal::Nothing => return Ok(Some(Vec::new())),
        Terminal::Input => {}
    }
    let mut got = vec![event::read()?];
    while terminal(Duration::ZERO)? != Terminal::Gone && event::poll(Duration::ZERO)? {
        got.push(event::read()?);
    }
    Ok(Some(got))
}

/// One reading of the server's metrics into the screen; an error is shown, not fatal.
fn read(client: &OtgClient, screen: &mut Screen, start: Instant) {
    match client.flows().and_then(|f| Ok((f, client.ports()?))) {
        Ok((flows, ports)) => {
            screen
                .view
                .update(start.elapsed().as_secs_f64(), flows, ports);
            screen.selected = screen
                .selected
                .min(screen.view.flows.len().saturating_sub(1));
            screen.read_at = Some(Instant::now());
            if screen.error {
                screen.message.clear();
                screen.error = false;
            }
        }
        Err(e) => {
            screen.message = e.to_string();
            screen.error = true;
        }
    }
}

/// Does what a key asked, and says how it went.
fn act(client: &OtgClient, screen: &mut Screen, action: Action) {
    let flows = &screen.view.flows;
    let selected = flows.get(screen.selected).map(|f| f.now.name.clone());
    let outcome = match action {
        Action::Up => {
            screen.selected = screen.selected.saturating_sub(1);
            return;
        }
        Action::Down => {
            screen.selected = (screen.selected + 1).min(flows.len().saturating_sub(1));
            return;
        }
        Action::Quit => return,
        Action::Transmit { state, all: true } => client
            .transmit(state, &[])
            .map(|w| said(format!("{state}: every flow"), w)),
        Action::Transmit { state, all: false } => match &selected {
            Some(name) => client
                .transmit(state, std::slice::from_ref(name))
                .map(|w| said(format!("{state}: {name}"), w)),
            None => Ok("no flow to act on".into()),
        },
        Action::Rate(factor) => match &selected {
            Some(name) => client
                .scale_rate(name, factor)
                .map(|rate| format!("{name}: rate {rate}")),
            None => Ok("no flow to act on".into()),
        },
    };
    (screen.message, screen.error) = match outcome {
        Ok(m) => (m, false),
        Err(e) => (e.to_string(), true),
    };
}

fn said(done: String, warnings: Vec<String>) -> String {
    if warnings.is_empty() {
        done
    } else {
        format!("{done} ({})", warnings.join("; "))
    }
}

fn draw(frame: &mut Frame<'_>, screen: &Screen, options: &Options) {
    let flows = screen.view.flows.len() as u16;
    let ports = screen.view.ports.len() as u16;
    let [title, flow_area, _, port_area, _, message, help] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(flows + 1),
        Constraint::Length(1),
        Constraint::Length(ports + 1),
        Constraint::Min(0),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    let updated = screen
        .read_at
        .map_or("waiting for a first reading".to_owned(), |t| {
            format!("read {:.1} s ago", t.elapsed().as_secs_f64())
        });
    frame.render_widget(
        Paragraph::new(format!(
            "linerate console · {} · {} flows · {updated}",
            options.location, flows
        ))
        .style(Style::new().add_modifier(Modifier::BOLD)),
        title,
    );
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let spark_width = usize::from(flow_area.width.saturating_sub(62)).max(4);
    let rows = screen.view.flows.iter().enumerate().map(|(i, f)| {
        let n = &f.now;
        let colour = match n.transmit.as_str() {
            "started" => Color::Green,
            "paused" => Color::Yellow,
            _ => Color::Gray,
        };
        let row = Row::new(vec![
            Cell::from(format!(
                "{}{}",
                if i == screen.selected { '>' } else { ' ' },
                n.name
            )),
            Cell::from(n.transmit.clone()).style(Style::new().fg(colour)),
            Cell::from(format!("{:.0}", f.tx_fps)),
            Cell::from(format!("{:.0}", f.rx_fps)),
            Cell::from(format!("{:.3}", n.loss)),
            Cell::from(latency_us(n)),
            Cell::from(spark(&f.history, spark_width)),
        ]);
        if i == screen.selected {
            row.style(Style::new().add_modifier(Modifier::REVERSED))
        } else {
            row
        }
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(14),
            Constraint::Length(8),
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(7),
            Constraint::Length(8),
            Constraint::Min(4),
        ],
    )
    .header(
        Row::new([
            "flow",
            "state",
            "tx fps",
            "rx fps",
            "loss %",
            "lat µs",
            "rx, last minute",
        ])
        .style(bold),
    );
    frame.render_widget(table, flow_area);
    let port_rows = screen.view.ports.iter().map(|p| {
        Row::new(vec![
            p.now.name.clone(),
            p.now.link.clone(),
            format!("{:.0}", p.tx_fps),
            format!("{:.0}", p.rx_fps),
            p.now.frames_tx.to_string(),
            p.now.frames_rx.to_string(),
        ])
    });
    let port_table = Table::new(
        port_rows,
        [
            Constraint::Length(14),
            Constraint::Length(8),
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(14),
            Constraint::Length(14),
        ],
    )
    .header(Row::new(["port", "link", "tx fps", "rx fps", "frames tx", "frames rx"]).style(bold));
    frame.render_widget(port_table, port_area);
    let style = if screen.error {
        Style::new().fg(Color::Red)
    } else {
        Style::new()
    };
    frame.render_widget(
        Paragraph::new(Line::from(screen.message.as_str())).style(style),
        message,
    );
    frame.render_widget(
        Paragraph::new(HELP).style(Style::new().fg(Color::DarkGray)),
        help,
    );
}

/// `--no-tui`: the table as text once an interval on `out` until `stop`; a reading's error is
/// printed and the loop goes on.
pub fn print(
    client: &OtgClient,
    options: &Options,
    out: &mut dyn Write,
    stop: &dyn Fn() -> bool,
) -> Result<(), ConsoleError> {
    let start = Instant::now();
    let mut view = View::default();
    while !stop() {
        match client.flows().and_then(|f| Ok((f, client.ports()?))) {
            Ok((flows, ports)) => {
                view.update(start.elapsed().as_secs_f64(), flows, ports);
                writeln!(out, "{}", view.plain())?;
            }
            Err(e) => writeln!(out, "linerate console: {e}")?,
        }
        out.flush()?;
        let until = Instant::now() + options.interval;
        while Instant::now() < until && !stop() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(())
}
