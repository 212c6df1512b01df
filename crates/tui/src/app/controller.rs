//! The input half of the app runtime: the [`Controller`] turns terminal events into state
//! changes and server requests (through the keymap's actions). Requests are spawned, so a
//! slow reply never blocks the keyboard; the intake tasks they start live in `follow`.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use crossterm::event::Event;
use ratatui::layout::Rect;
use tandem_protocol::client_methods::ThreadArchive;
use tandem_protocol::{
    CommandExecutionApprovalDecision, FileChangeApprovalDecision, ProcessResizePtyParams,
    ProcessSpawnParams, ThreadArchiveParams, ThreadForkParams, ThreadListParams,
    ThreadResumeParams, TurnInterruptParams, TurnStatus, TurnSteerParams, UserInput,
};
use tokio::sync::mpsc;

use crate::keymap::{self, Action, Edit, Mode};
use crate::pane::{PaneSource, TermPane};
use crate::state::{AppState, Focus, Screen, TurnState};
use crate::ui;

use super::follow::{attach_process, follow_process, follow_thread, start_turn, thread_events};
use super::{ExitReason, LiveApproval, Tui, lock};

// undo29: `/undo`.
mod undo;

/// Turns terminal events into state changes and server requests.
pub(super) struct Controller {
    pub(super) tui: Tui,
    pub(super) stdin: mpsc::Sender<(String, Bytes)>,
    pub(super) area: Rect,
    pub(super) exit: Option<ExitReason>,
}

fn mode(state: &AppState) -> Mode {
    if state.screen == Screen::Threads {
        Mode::Threads
    } else if !state.approvals.is_empty() {
        Mode::Approval
    } else if state.focus == Focus::Pane
        && let Some(pane) = state.active_pane()
    {
        Mode::Pane {
            live: pane.takes_input(),
        }
    } else {
        Mode::Composer
    }
}

const HELP: &str = "Enter sends (steers a running turn) · Alt-Enter new line · Esc interrupts · \
     Ctrl-C twice quits · Ctrl-T threads · PgUp/PgDn scroll · Tab/Ctrl-O pane focus · Ctrl-N next \
     pane · Ctrl-W hide pane · Ctrl-R reasoning in full/folded · !CMD runs CMD in a terminal pane · /share shows how another client \
     watches the pane's process · /attach HANDLE TOKEN watches one · /undo undoes the last turn \
     and its file changes · /new /threads /quit";

impl Controller {
    pub(super) fn on_event(&mut self, event: Event) {
        match event {
            Event::Key(key) => {
                let (mode, empty) = {
                    let state = self.tui.state();
                    (mode(&state), state.composer.is_blank())
                };
                if let Some(action) = keymap::action(mode, key, empty) {
                    if action != Action::CtrlC {
                        self.tui.update(|state| {
                            state.interrupts = 0;
                            state.hint = None;
                        });
                    }
                    self.on_action(action);
                }
            }
            Event::Paste(text) => {
                let mode = mode(&self.tui.state());
                match mode {
                    Mode::Composer => self.tui.update(|state| state.composer.insert_str(&text)),
                    Mode::Pane { live: true } => self.pane_input(text.into_bytes()),
                    _ => {}
                }
            }
            Event::Resize(width, height) => self.resized(Rect::new(0, 0, width, height)),
            _ => {}
        }
    }

    pub(super) fn resized(&mut self, area: Rect) {
        self.area = area;
        let (rows, cols) = ui::pane_size(area);
        let processes = self.tui.update(|state| state.resize_panes(rows, cols));
        for handle in processes {
            let tui = self.tui.clone();
            tokio::spawn(async move {
                let params = ProcessResizePtyParams::new(&handle, rows, cols);
                if let Err(error) = tui.client.resize_pty(params).await {
                    tui.report("resizing the process's terminal", &error);
                }
            });
        }
    }

    fn page(&self) -> isize {
        (self.area.height.saturating_sub(8) / 2).max(1) as isize
    }

    fn on_action(&mut self, action: Action) {
        match action {
            Action::CtrlC => {
                let (count, running) = self.tui.update(|state| {
                    state.interrupts += 1;
                    (state.interrupts, state.turn.turn_id().is_some())
                });
                if count >= 2 {
                    self.exit = Some(ExitReason::Interrupted);
                } else {
                    if running {
                        self.interrupt();
                    }
                    self.tui
                        .update(|state| state.hint = Some("Ctrl-C again quits".into()));
                }
            }
            Action::Quit => self.exit = Some(ExitReason::Quit),
            Action::Submit => self.submit(),
            Action::Edit(edit) => self.tui.update(|state| {
                let composer = &mut state.composer;
                match edit {
                    Edit::Char(c) => composer.insert_char(c),
                    Edit::Newline => composer.insert_newline(),
                    Edit::Backspace => composer.backspace(),
                    Edit::Delete => composer.delete(),
                    Edit::Left => composer.left(),
                    Edit::Right => composer.right(),
                    Edit::Home => composer.home(),
                    Edit::End => composer.end(),
                    Edit::Up => composer.up(),
                    Edit::Down => composer.down(),
                    Edit::Clear => composer.clear(),
                }
            }),
            Action::Interrupt => {
                if self.tui.state().turn.turn_id().is_some() {
                    self.interrupt();
                } else {
                    self.tui
                        .update(|state| state.hint = Some("no turn is running".into()));
                }
            }
            Action::Scroll(rows) => self.scroll(rows),
            Action::Page(back) => {
                let page = self.page();
                self.scroll(if back { page } else { -page });
            }
            Action::ToggleFocus => self.tui.update(|state| {
                if state.focus == Focus::Pane {
                    state.focus = Focus::Composer;
                } else {
                    if state.active_pane.is_none() {
                        state.next_pane();
                    }
                    if state.active_pane.is_some() {
                        state.focus = Focus::Pane;
                    }
                }
            }),
            Action::NextPane => self.tui.update(AppState::next_pane),
            Action::HidePane => self.tui.update(AppState::hide_pane),
            Action::ShowThreads => {
                self.tui.update(|state| state.screen = Screen::Threads);
                self.load_threads();
            }
            Action::ShowChat => self.tui.update(|state| state.screen = Screen::Chat),
            Action::SelectThread(delta) => self.tui.update(|state| state.select_thread(delta)),
            Action::ResumeThread => {
                if let Some(id) = self.selected_thread_if_idle() {
                    self.resume(id);
                }
            }
            Action::NewThread => {
                if self.selected_thread_if_idle().is_some() || self.idle() {
                    self.tui.update(AppState::new_chat);
                }
            }
            Action::ForkThread => {
                if let Some(id) = self.selected_thread_if_idle() {
                    self.fork(id);
                }
            }
            Action::ArchiveThread => {
                let selected = self.tui.state().threads.selected().map(|t| t.id.clone());
                if let Some(id) = selected {
                    self.archive(id);
                }
            }
            Action::RefreshThreads => self.load_threads(),
            Action::Decide(decision) => self.decide(decision),
            Action::ToggleReasoning => self.tui.update(AppState::toggle_reasoning),
            Action::PaneInput(bytes) => self.pane_input(bytes),
        }
    }

    fn idle(&self) -> bool {
        let busy = self.tui.state().turn.is_busy();
        if busy {
            self.tui.update(|state| {
                state.hint = Some("a turn is running: interrupt it (Esc) first".into());
            });
        }
        !busy
    }

    fn selected_thread_if_idle(&self) -> Option<String> {
        if !self.idle() {
            return None;
        }
        self.tui.state().threads.selected().map(|t| t.id.clone())
    }

    fn scroll(&self, rows: isize) {
        self.tui.update(|state| {
            if state.focus == Focus::Pane
                && let Some(pane) = state.active_pane_mut()
            {
                if rows > 0 {
                    pane.scroll_up(rows.unsigned_abs());
                } else {
                    pane.scroll_down(rows.unsigned_abs());
                }
            } else {
                state.scroll_transcript(rows);
            }
        });
    }

    fn interrupt(&self) {
        let (thread, turn) = {
            let state = self.tui.state();
            (
                state.thread.as_ref().map(|thread| thread.id.clone()),
                state.turn.turn_id().map(str::to_owned),
            )
        };
        let (Some(thread), Some(turn)) = (thread, turn) else {
            return;
        };
        self.tui.update(|state| {
            state.turn = TurnState::Interrupting {
                turn_id: turn.clone(),
            };
        });
        let tui = self.tui.clone();
        tokio::spawn(async move {
            let params = TurnInterruptParams::new(thread, turn);
            // A turn that completed meanwhile has nothing to interrupt.
            if let Err(error) = tui.client.interrupt_turn(params).await
                && error.server_error().is_none()
            {
                tui.report("interrupting the turn", &error);
            }
        });
    }

    fn submit(&mut self) {
        let mut state = self.tui.state();
        if state.turn == TurnState::Starting {
            state.hint = Some("the turn is starting; send again in a moment".into());
            drop(state);
            return self.tui.update(|_| {});
        }
        let Some(text) = state.composer.take_submission() else {
            return;
        };
        drop(state);
        let trimmed = text.trim();
        // Bound first: a guard in an `if let` scrutinee would live through the block, and
        // answering locks the state again.
        let question = self.tui.state().questions.front().map(|q| q.key.clone());
        if let Some(key) = question {
            return self.answer(key, text);
        }
        if let Some(command) = trimmed.strip_prefix('!') {
            return self.run_process(command.trim().to_owned());
        }
        let mut words = trimmed.split_whitespace();
        match (words.next(), words.next(), words.next(), words.next()) {
            (Some("/share"), None, ..) => return self.share(),
            (Some("/attach"), Some(handle), Some(token), None) => {
                return self.attach(handle.to_owned(), token.to_owned());
            }
            (Some("/attach"), ..) => {
                return self.tui.update(|state| {
                    state.hint =
                        Some("/attach HANDLE TOKEN (what /share shows on the other side)".into());
                });
            }
            _ => {}
        }
        match trimmed {
            "/quit" | "/exit" => return self.exit = Some(ExitReason::Quit),
            "/threads" => return self.on_action(Action::ShowThreads),
            "/new" => return self.on_action(Action::NewThread),
            "/help" => return self.tui.update(|state| state.notice(HELP)),
            "/undo" => return self.undo(),
            _ => {}
        }
        let (thread, turn) = {
            let state = self.tui.state();
            (
                state.thread.as_ref().map(|thread| thread.id.clone()),
                state.turn.clone(),
            )
        };
        match (turn, thread) {
            (TurnState::Running { turn_id }, Some(thread)) => {
                self.tui.update(|state| state.user_sent(&text, true));
                let tui = self.tui.clone();
                tokio::spawn(async move {
                    let params = TurnSteerParams::new(thread, turn_id, vec![UserInput::text(text)]);
                    if let Err(error) = tui.client.steer_turn(params).await {
                        tui.report("steering the turn", &error);
                    }
                });
            }
            (TurnState::Idle, thread) => {
                self.tui.update(|state| {
                    state.user_sent(&text, false);
                    state.turn = TurnState::Starting;
                });
                tokio::spawn(start_turn(self.tui.clone(), thread, text));
            }
            (_, _) => self.tui.update(|state| {
                state.composer.set_text(&text);
                state.hint = Some("the turn is ending; send again in a moment".into());
            }),
        }
    }

    fn answer(&self, key: String, text: String) {
        self.tui.update(|state| {
            state.questions.retain(|question| question.key != key);
            state.user_sent(&text, false);
        });
        let request = lock(&self.tui.shared.questions).remove(&key);
        if let Some(request) = request {
            let tui = self.tui.clone();
            tokio::spawn(async move {
                if let Err(error) = request.answer_all(text).await {
                    tui.report("answering the question", &error);
                }
            });
        }
    }

    fn decide(&self, decision: CommandExecutionApprovalDecision) {
        let Some(view) = self.tui.update(|state| state.approvals.pop_front()) else {
            return;
        };
        let request = lock(&self.tui.shared.approvals).remove(&view.key);
        if decision == CommandExecutionApprovalDecision::AcceptForSession {
            self.tui.update(|state| {
                state.notice(match view.command() {
                    Some(command) => {
                        format!("(accepted for the session: `{command}` and the like)")
                    }
                    None => "(accepted for the session: changes to these files)".to_owned(),
                });
            });
        }
        if let Some(request) = request {
            let tui = self.tui.clone();
            tokio::spawn(async move {
                let answered = match request {
                    LiveApproval::Command(request) => request.decide(decision).await,
                    LiveApproval::FileChange(request) => {
                        request.decide(file_change_decision(decision)).await
                    }
                };
                if let Err(error) = answered {
                    tui.report("answering the approval", &error);
                }
            });
        }
    }

    fn pane_input(&self, bytes: Vec<u8>) {
        let handle = {
            let state = self.tui.state();
            match state.active_pane().map(|pane| &pane.source) {
                Some(PaneSource::Process { handle }) => handle.clone(),
                _ => return,
            }
        };
        if self.stdin.try_send((handle, Bytes::from(bytes))).is_err() {
            self.tui.update(|state| {
                state.hint = Some("the process is not reading its input; key dropped".into());
            });
        }
    }

    fn load_threads(&self) {
        self.tui.update(|state| state.threads.loading = true);
        let tui = self.tui.clone();
        tokio::spawn(async move {
            match tui
                .client
                .list_threads(ThreadListParams::new().limit(100))
                .await
            {
                Ok(page) => {
                    tui.reached_server();
                    tui.update(|state| state.threads_loaded(&page.data));
                }
                Err(error) => {
                    tui.update(|state| state.threads.loading = false);
                    tui.report("listing threads", &error);
                }
            }
        });
    }

    fn resume(&self, id: String) {
        let tui = self.tui.clone();
        tokio::spawn(async move {
            // Subscribed before the resume: nothing another client's turn sends after it is
            // missed.
            let events = thread_events(&tui, &id);
            match tui.client.resume_thread(ThreadResumeParams::new(&id)).await {
                Ok(resumed) => {
                    let running = resumed
                        .thread
                        .turns
                        .last()
                        .filter(|turn| turn.status == TurnStatus::InProgress)
                        .map(|turn| turn.id.clone());
                    tui.update(|state| {
                        state.open_thread(&resumed.thread);
                        if let Some(turn) = &running {
                            state.foreign_turn_started(turn);
                        }
                    });
                    follow_thread(tui, id, events);
                }
                Err(error) => tui.report("resuming the thread", &error),
            }
        });
    }

    fn fork(&self, id: String) {
        let tui = self.tui.clone();
        tokio::spawn(async move {
            match tui.client.fork_thread(ThreadForkParams::new(&id)).await {
                Ok(forked) => {
                    let events = thread_events(&tui, &forked.thread.id);
                    tui.update(|state| {
                        state.open_thread(&forked.thread);
                        state.notice(format!("(forked from thread {id})"));
                    });
                    follow_thread(tui, forked.thread.id, events);
                }
                Err(error) => tui.report("forking the thread", &error),
            }
        });
    }

    fn archive(&self, id: String) {
        let tui = self.tui.clone();
        let controller_tui = self.tui.clone();
        tokio::spawn(async move {
            let params = ThreadArchiveParams { thread_id: id };
            match tui.client.call::<ThreadArchive>(params).await {
                Ok(_) => {
                    let page = tui
                        .client
                        .list_threads(ThreadListParams::new().limit(100))
                        .await;
                    match page {
                        Ok(page) => tui.update(|state| state.threads_loaded(&page.data)),
                        Err(error) => tui.report("listing threads", &error),
                    }
                }
                Err(error) => controller_tui.report("archiving the thread", &error),
            }
        });
    }

    /// attach19: `/share`: asks the server for the attach token of the shown pane's process
    /// and tells the user what another client types to watch it.
    fn share(&self) {
        let handle = {
            let state = self.tui.state();
            match state.active_pane() {
                Some(pane) if pane.takes_input() => pane.source.process_handle().map(str::to_owned),
                _ => None,
            }
        };
        let Some(handle) = handle else {
            return self.tui.update(|state| {
                state.hint = Some("/share shares the running process of the pane shown".into());
            });
        };
        let tui = self.tui.clone();
        tokio::spawn(async move {
            match tui.client.share_process(&handle).await {
                Ok(token) => tui.update(|state| {
                    state.notice(format!(
                        "(another client watches this process with: /attach {handle} {token})"
                    ));
                }),
                Err(error) => tui.report("sharing the process", &error),
            }
        });
    }

    /// attach19: `/attach HANDLE TOKEN`: watches another client's PTY process in a new pane,
    /// which draws the server's present screen of it, then follows its output.
    fn attach(&self, handle: String, token: String) {
        tokio::spawn(attach_process(self.tui.clone(), handle, token));
    }

    /// `!CMD`: runs CMD under a PTY the size of the pane, in a new pane that gets the focus.
    fn run_process(&self, command: String) {
        if command.is_empty() {
            return self
                .tui
                .update(|state| state.hint = Some("!CMD runs CMD in a terminal pane".into()));
        }
        let number = self.tui.next_process.fetch_add(1, Ordering::Relaxed);
        let handle = format!("tui-{}-{number}", std::process::id());
        let (rows, cols) = self.tui.update(|state| {
            let (rows, cols) = state.pane_size;
            let pane = TermPane::new(
                format!("! {command}"),
                PaneSource::Process {
                    handle: handle.clone(),
                },
                rows,
                cols,
                state.limits.scrollback_rows,
            );
            state.add_pane(pane);
            state.focus = Focus::Pane;
            (rows, cols)
        });
        let params = ProcessSpawnParams::new(
            &handle,
            ["sh", "-c", command.as_str()],
            self.tui.options.cwd.clone(),
        )
        .tty()
        .stream_stdin()
        .streaming()
        .size(rows, cols)
        .unlimited_output()
        .no_timeout();
        tokio::spawn(follow_process(self.tui.clone(), handle, params));
    }
}

/// The file change decision of an approval key: the prompt's keys mean the same for both
/// kinds of approval.
fn file_change_decision(decision: CommandExecutionApprovalDecision) -> FileChangeApprovalDecision {
    match decision {
        CommandExecutionApprovalDecision::Accept => FileChangeApprovalDecision::Accept,
        CommandExecutionApprovalDecision::AcceptForSession => {
            FileChangeApprovalDecision::AcceptForSession
        }
        CommandExecutionApprovalDecision::Decline => FileChangeApprovalDecision::Decline,
        CommandExecutionApprovalDecision::Cancel => FileChangeApprovalDecision::Cancel,
    }
}
