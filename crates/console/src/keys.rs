//! What each key does, apart from any terminal: the TUI maps its key events here, so the
//! mapping is tested without one.

/// What a key asks of the server or the view.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Up,
    Down,
    /// `flow_transmit` with this state (`start`, `stop`, `pause`, `resume`) for the selected
    /// flow, or for every flow (`all`).
    Transmit {
        state: &'static str,
        all: bool,
    },
    /// The selected flow's rate times this factor (update_config).
    Rate(f64),
    Quit,
}

/// The help line the console shows.
/// One line of a 80-column terminal: +/- double and halve the rate, a and z start and stop all.
pub const HELP: &str =
    "↑↓ select s start x stop p pause r resume +/- rate a/z all start/stop q quit";

/// The action of a key (a character, or one of the named keys), if any.
pub fn action(key: Key) -> Option<Action> {
    Some(match key {
        Key::Up | Key::Char('k') => Action::Up,
        Key::Down | Key::Char('j') => Action::Down,
        Key::Char('s') => Action::Transmit {
            state: "start",
            all: false,
        },
        Key::Char('x') => Action::Transmit {
            state: "stop",
            all: false,
        },
        Key::Char('p') => Action::Transmit {
            state: "pause",
            all: false,
        },
        Key::Char('r') => Action::Transmit {
            state: "resume",
            all: false,
        },
        Key::Char('a') => Action::Transmit {
            state: "start",
            all: true,
        },
        Key::Char('z') => Action::Transmit {
            state: "stop",
            all: true,
        },
        Key::Char('+') | Key::Char('=') => Action::Rate(2.0),
        Key::Char('-') => Action::Rate(0.5),
        Key::Char('q') | Key::Esc | Key::CtrlC => Action::Quit,
        _ => return None,
    })
}

/// A key as the console reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    Esc,
    CtrlC,
    Char(char),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_of_the_help_line_does_what_it_says() {
        assert_eq!(action(Key::Down), Some(Action::Down));
        assert_eq!(
            action(Key::Char('p')),
            Some(Action::Transmit {
                state: "pause",
                all: false
            })
        );
        assert_eq!(
            action(Key::Char('z')),
            Some(Action::Transmit {
                state: "stop",
                all: true
            })
        );
        assert_eq!(action(Key::Char('-')), Some(Action::Rate(0.5)));
        assert_eq!(action(Key::CtrlC), Some(Action::Quit));
        assert_eq!(action(Key::Char('?')), None);
        for word in ["select", "start", "stop", "pause", "resume", "rate", "quit"] {
            assert!(HELP.contains(word), "{word}");
        }
        assert!(HELP.chars().count() <= 80);
    }
}
