//! The keymap: which [`Action`] a key means where the user is. Kept apart from the app so that
//! every binding is in one table and tested without a terminal.
//!
//! | where | keys |
//! |---|---|
//! | anywhere | Ctrl-C interrupts the turn, twice quits; Ctrl-T thread list |
//! | composer | Enter sends (steers a running turn); Alt-Enter or Ctrl-J new line; Esc interrupts; Up/Down history; PgUp/PgDn scroll; Tab/Ctrl-O focus the pane; Ctrl-N next pane; Ctrl-R shows reasoning in full or folds it; Ctrl-D on an empty composer quits |
//! | approval (a command or a file change) | y accept, a accept for the session, n or Esc decline; PgUp/PgDn scroll (to read a diff); Ctrl-R reasoning |
//! | pane | keys go to the process; Ctrl-O or (for a finished pane) Esc/Tab back; PgUp/PgDn scroll; Ctrl-W hides it |
//! | thread list | Up/Down (k/j) move; Enter resume; n new; f fork; a archive; r refresh; Esc back |

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use tandem_protocol::CommandExecutionApprovalDecision;

/// Where keys go now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The thread list.
    Threads,
    /// An approval prompt is shown.
    Approval,
    /// The composer has the focus.
    Composer,
    /// The pane has the focus; `live` when its process takes input.
    Pane {
        /// Whether the pane's process still runs and takes input.
        live: bool,
    },
}

/// An editing key of the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Type a character.
    Char(char),
    /// Split the row.
    Newline,
    /// Delete before the cursor.
    Backspace,
    /// Delete under the cursor.
    Delete,
    /// Cursor left.
    Left,
    /// Cursor right.
    Right,
    /// Row start.
    Home,
    /// Row end.
    End,
    /// Row up or older history.
    Up,
    /// Row down or newer history.
    Down,
    /// Empty the composer.
    Clear,
}

/// What a key asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Ctrl-C: interrupt the turn; a second in a row quits.
    CtrlC,
    /// Leave the app.
    Quit,
    /// Send the composer's text.
    Submit,
    /// Edit the composer.
    Edit(Edit),
    /// Interrupt the running turn.
    Interrupt,
    /// Scroll the transcript (or the focused pane) by rows; negative towards the end.
    Scroll(isize),
    /// Scroll by a page back (`true`) or forward.
    Page(bool),
    /// Move the focus between composer and pane.
    ToggleFocus,
    /// Show the next pane.
    NextPane,
    /// Hide the pane area.
    HidePane,
    /// Show the thread list.
    ShowThreads,
    /// Back to the chat.
    ShowChat,
    /// Move the thread list's highlight.
    SelectThread(isize),
    /// Resume the highlighted thread.
    ResumeThread,
    /// Start a new chat (the thread is created by the first message).
    NewThread,
    /// Fork the highlighted thread.
    ForkThread,
    /// Archive the highlighted thread.
    ArchiveThread,
    /// Reload the thread list.
    RefreshThreads,
    /// Show reasoning in full, or fold it to one row.
    ToggleReasoning,
    /// Answer the approval prompt.
    Decide(CommandExecutionApprovalDecision),
    /// Bytes for the focused pane's process.
    PaneInput(Vec<u8>),
}

/// The action of `key` in `mode`; `None` for keys that mean nothing there. `composer_empty`
/// lets Ctrl-D quit only when nothing is typed.
pub fn action(mode: Mode, key: KeyEvent, composer_empty: bool) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    match key.code {
        KeyCode::Char('c') if ctrl => return Some(Action::CtrlC),
        KeyCode::Char('t') if ctrl => {
            return Some(if mode == Mode::Threads {
                Action::ShowChat
            } else {
                Action::ShowThreads
            });
        }
        _ => {}
    }
    match mode {
        Mode::Threads => Some(match key.code {
            KeyCode::Up | KeyCode::Char('k') => Action::SelectThread(-1),
            KeyCode::Down | KeyCode::Char('j') => Action::SelectThread(1),
            KeyCode::PageUp => Action::SelectThread(-10),
            KeyCode::PageDown => Action::SelectThread(10),
            KeyCode::Enter => Action::ResumeThread,
            KeyCode::Char('n') => Action::NewThread,
            KeyCode::Char('f') => Action::ForkThread,
            KeyCode::Char('a') => Action::ArchiveThread,
            KeyCode::Char('r') => Action::RefreshThreads,
            KeyCode::Esc | KeyCode::Char('q') => Action::ShowChat,
            _ => return None,
        }),
        Mode::Approval => Some(match key.code {
            KeyCode::Char('y') => Action::Decide(CommandExecutionApprovalDecision::Accept),
            KeyCode::Char('a') => {
                Action::Decide(CommandExecutionApprovalDecision::AcceptForSession)
            }
            KeyCode::Char('n') | KeyCode::Esc => {
                Action::Decide(CommandExecutionApprovalDecision::Decline)
            }
            KeyCode::PageUp => Action::Page(true),
            KeyCode::PageDown => Action::Page(false),
            KeyCode::Char('r') if ctrl => Action::ToggleReasoning,
            _ => return None,
        }),
        Mode::Pane { live } => match key.code {
            KeyCode::Char('o') if ctrl => Some(Action::ToggleFocus),
            KeyCode::Char('w') if ctrl => Some(Action::HidePane),
            KeyCode::Char('n') if ctrl && !live => Some(Action::NextPane),
            KeyCode::PageUp => Some(Action::Page(true)),
            KeyCode::PageDown => Some(Action::Page(false)),
            KeyCode::Esc | KeyCode::Tab if !live => Some(Action::ToggleFocus),
            _ if live => key_bytes(key).map(Action::PaneInput),
            KeyCode::Up => Some(Action::Scroll(1)),
            KeyCode::Down => Some(Action::Scroll(-1)),
            _ => None,
        },
        Mode::Composer => Some(match key.code {
            KeyCode::Enter if alt => Action::Edit(Edit::Newline),
            KeyCode::Char('j') if ctrl => Action::Edit(Edit::Newline),
            KeyCode::Enter => Action::Submit,
            KeyCode::Esc => Action::Interrupt,
            KeyCode::Char('d') if ctrl && composer_empty => Action::Quit,
            KeyCode::Char('u') if ctrl => Action::Edit(Edit::Clear),
            KeyCode::Char('o') if ctrl => Action::ToggleFocus,
            KeyCode::Char('n') if ctrl => Action::NextPane,
            KeyCode::Char('w') if ctrl => Action::HidePane,
            KeyCode::Char('r') if ctrl => Action::ToggleReasoning,
            KeyCode::Char('a') if ctrl => Action::Edit(Edit::Home),
            KeyCode::Char('e') if ctrl => Action::Edit(Edit::End),
            KeyCode::Tab => Action::ToggleFocus,
            KeyCode::Char(c) if !ctrl => Action::Edit(Edit::Char(c)),
            KeyCode::Backspace => Action::Edit(Edit::Backspace),
            KeyCode::Delete => Action::Edit(Edit::Delete),
            KeyCode::Left => Action::Edit(Edit::Left),
            KeyCode::Right => Action::Edit(Edit::Right),
            KeyCode::Home => Action::Edit(Edit::Home),
            KeyCode::End => Action::Edit(Edit::End),
            KeyCode::Up => Action::Edit(Edit::Up),
            KeyCode::Down => Action::Edit(Edit::Down),
            KeyCode::PageUp => Action::Page(true),
            KeyCode::PageDown => Action::Page(false),
            _ => return None,
        }),
    }
}

/// The bytes a terminal sends for `key` (xterm's encoding), for a process in a pane.
pub fn key_bytes(key: KeyEvent) -> Option<Vec<u8>> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let mut bytes = match key.code {
        KeyCode::Char(c) if ctrl && c.is_ascii_alphabetic() => {
            vec![(c.to_ascii_lowercase() as u8) - b'a' + 1]
        }
        KeyCode::Char(' ') if ctrl => vec![0],
        KeyCode::Char(c) => c.to_string().into_bytes(),
        KeyCode::Enter => vec![b'\r'],
        KeyCode::Backspace => vec![0x7f],
        KeyCode::Tab => vec![b'\t'],
        KeyCode::BackTab => b"\x1b[Z".to_vec(),
        KeyCode::Esc => vec![0x1b],
        KeyCode::Up => b"\x1b[A".to_vec(),
        KeyCode::Down => b"\x1b[B".to_vec(),
        KeyCode::Right => b"\x1b[C".to_vec(),
        KeyCode::Left => b"\x1b[D".to_vec(),
        KeyCode::Home => b"\x1b[H".to_vec(),
        KeyCode::End => b"\x1b[F".to_vec(),
        KeyCode::Delete => b"\x1b[3~".to_vec(),
        KeyCode::Insert => b"\x1b[2~".to_vec(),
        KeyCode::PageUp => b"\x1b[5~".to_vec(),
        KeyCode::PageDown => b"\x1b[6~".to_vec(),
        _ => return None,
    };
    if alt {
        bytes.insert(0, 0x1b);
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn enter_sends_and_alt_enter_breaks_the_line() {
        let none = KeyModifiers::NONE;
        assert_eq!(
            action(Mode::Composer, key(KeyCode::Enter, none), false),
            Some(Action::Submit)
        );
        assert_eq!(
            action(
                Mode::Composer,
                key(KeyCode::Enter, KeyModifiers::ALT),
                false
            ),
            Some(Action::Edit(Edit::Newline))
        );
        assert_eq!(
            action(Mode::Composer, key(KeyCode::Esc, none), false),
            Some(Action::Interrupt)
        );
        assert_eq!(
            action(
                Mode::Composer,
                key(KeyCode::Char('d'), KeyModifiers::CONTROL),
                false
            ),
            None
        );
        assert_eq!(
            action(
                Mode::Composer,
                key(KeyCode::Char('d'), KeyModifiers::CONTROL),
                true
            ),
            Some(Action::Quit)
        );
    }

    #[test]
    fn ctrl_c_means_the_same_everywhere() {
        for mode in [
            Mode::Threads,
            Mode::Approval,
            Mode::Composer,
            Mode::Pane { live: true },
        ] {
            assert_eq!(
                action(mode, key(KeyCode::Char('c'), KeyModifiers::CONTROL), false),
                Some(Action::CtrlC)
            );
        }
    }

    #[test]
    fn a_live_pane_gets_the_keys_a_terminal_sends() {
        let live = Mode::Pane { live: true };
        assert_eq!(
            action(live, key(KeyCode::Char('x'), KeyModifiers::NONE), false),
            Some(Action::PaneInput(b"x".to_vec()))
        );
        assert_eq!(
            action(live, key(KeyCode::Char('d'), KeyModifiers::CONTROL), false),
            Some(Action::PaneInput(vec![4]))
        );
        assert_eq!(
            action(live, key(KeyCode::Up, KeyModifiers::NONE), false),
            Some(Action::PaneInput(b"\x1b[A".to_vec()))
        );
        assert_eq!(
            action(live, key(KeyCode::Char('o'), KeyModifiers::CONTROL), false),
            Some(Action::ToggleFocus)
        );
    }

    #[test]
    fn approvals_offer_three_answers() {
        let decide = |c| {
            action(
                Mode::Approval,
                key(KeyCode::Char(c), KeyModifiers::NONE),
                false,
            )
        };
        assert_eq!(
            decide('y'),
            Some(Action::Decide(CommandExecutionApprovalDecision::Accept))
        );
        assert_eq!(
            decide('a'),
            Some(Action::Decide(
                CommandExecutionApprovalDecision::AcceptForSession
            ))
        );
        assert_eq!(
            decide('n'),
            Some(Action::Decide(CommandExecutionApprovalDecision::Decline))
        );
        assert_eq!(decide('x'), None);
    }

    #[test]
    fn ctrl_r_toggles_reasoning_where_text_is_read() {
        let ctrl_r = key(KeyCode::Char('r'), KeyModifiers::CONTROL);
        for mode in [Mode::Composer, Mode::Approval] {
            assert_eq!(action(mode, ctrl_r, false), Some(Action::ToggleReasoning));
        }
        // A live pane's process gets Ctrl-R (a shell's history search).
        assert_eq!(
            action(Mode::Pane { live: true }, ctrl_r, false),
            Some(Action::PaneInput(vec![18]))
        );
    }
}
