//! `tandem chat`: an interactive session on one thread, through `tandem-client`. Lines are
//! read with a line editor (rustyline) when stdin is a terminal and as plain lines otherwise,
//! on a thread of their own, so the session reacts to input while a turn streams.
//!
//! Lines typed while a turn runs wait for it, except the answer to an approval or a question
//! the turn is waiting for, and `/interrupt`. Ctrl-C interrupts the running turn; a second
//! Ctrl-C exits.
//!
//! A file change is shown as its diff (with its approval question when it needs one), the
//! plan as a checklist (replaced in place on a terminal while nothing came between), and
//! reasoning dimmed and folded to one line (`/reasoning` shows it in full); see
//! [`crate::agent_view`].

use std::collections::VecDeque;
use std::io::{self, BufRead, IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Args;
use rustyline::ExternalPrinter;
use rustyline::error::ReadlineError;
use tandem_client::{
    ApprovalRequest, Client, ClientError, FileChangeApprovalRequest, TurnEvent, TurnHandle,
    UserInputRequest,
};
use tandem_protocol::{
    FileChangeApprovalDecision, ServerNotification, SessionSource, ThreadItem, ThreadListParams,
    ThreadResumeParams, Turn, TurnInterruptParams, TurnStatus, UserInput,
};
use tokio::sync::mpsc;

use crate::agent_view::AgentView;
use crate::render;
use crate::run::retry_line;
use crate::session::{
    SCRIPTED_COMMANDS, SCRIPTED_NOTICE, ServerArgs, SessionError, approval_question,
    file_change_decision, is_scripted, is_yes, stdin_is_terminal,
};
use crate::settings::GlobalOptions;
use crate::signals::ShutdownSignals;

/// Exit code after a second Ctrl-C (128 + SIGINT).
const INTERRUPTED_EXIT_CODE: i32 = 130;

const PROMPT: &str = "> ";

/// The prompt while the running turn waits for an answer (an approval or a question), so that
/// the line after the question does not look like the start of a new message. As wide as
/// [`PROMPT`]: the line editor measures the prompt once per line.
const ANSWER_PROMPT: &str = "? ";

/// The line editor's prompt: [`ANSWER_PROMPT`] while the session waits for an answer, else
/// [`PROMPT`]. The editor reads it on every redraw, which printing the question causes.
#[derive(Clone, Default)]
struct SharedPrompt(Arc<AtomicBool>);

impl SharedPrompt {
    fn set_answering(&self, answering: bool) {
        self.0.store(answering, Ordering::Release);
    }
}

impl rustyline::Prompt for SharedPrompt {
    fn raw(&self) -> &str {
        if self.0.load(Ordering::Acquire) {
            ANSWER_PROMPT
        } else {
            PROMPT
        }
    }
}

const HELP: &str = "\
Type a message for the agent; a line ending in \\ continues it on the next line. Commands:
  /threads      list recent threads
  /resume ID    continue thread ID
  /interrupt    stop the running turn (Ctrl-C does too; a second Ctrl-C exits)
  /reasoning    show the agent's reasoning in full, or folded to one line (the default)
  /undo         undo the last turn: drop it and put back the files its patches changed
  /quit         leave (Ctrl-D does too)";

/// The options of `tandem chat`.
#[derive(Debug, Args)]
#[command(after_help = HELP)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    server: ServerArgs,
}

/// What the input thread hands the session.
#[derive(Debug)]
enum Input {
    Line(String),
    /// Ctrl-C at the line editor.
    Interrupt,
    Eof,
}

/// Where the session writes: stdout, or above the line editor's prompt.
struct Output {
    sink: Sink,
    /// How many writes there were: a plan replaces the last one only if it is still the last
    /// thing written.
    writes: u64,
}

enum Sink {
    /// Whether the cursor is at the start of a line.
    Plain { at_line_start: bool },
    /// The editor's printer takes whole lines; a partial line waits here.
    Editor {
        printer: Box<dyn ExternalPrinter + Send>,
        partial: String,
    },
}

impl Output {
    fn new(sink: Sink) -> Self {
        Self { sink, writes: 0 }
    }

    fn write(&mut self, text: &str) {
        if !text.is_empty() {
            self.writes += 1;
        }
        match &mut self.sink {
            Sink::Plain { at_line_start } => {
                if text.is_empty() {
                    return;
                }
                let mut stdout = io::stdout().lock();
                let _ = stdout.write_all(text.as_bytes());
                let _ = stdout.flush();
                *at_line_start = text.ends_with('\n');
            }
            Sink::Editor { printer, partial } => {
                partial.push_str(text);
                if let Some(end) = partial.rfind('\n') {
                    let lines: String = partial.drain(..=end).collect();
                    // With the newline: between two readline calls the printer writes the text
                    // as is, and the next prompt would overwrite a line left open.
                    let _ = printer.print(lines);
                }
            }
        }
    }

    /// Ends the current line if something is on it.
    fn end_line(&mut self) {
        match &self.sink {
            Sink::Plain {
                at_line_start: false,
            } => self.write("\n"),
            Sink::Editor { partial, .. } if !partial.is_empty() => self.write("\n"),
            Sink::Plain { .. } | Sink::Editor { .. } => {}
        }
    }

    fn line(&mut self, text: &str) {
        self.end_line();
        self.write(&format!("{text}\n"));
    }
}

/// Starts the thread that reads input, with the line editor (showing `prompt`) when stdin is a
/// terminal.
fn start_input(prompt: SharedPrompt) -> io::Result<(mpsc::Receiver<Input>, Output)> {
    let (tx, rx) = mpsc::channel(64);
    if !stdin_is_terminal() {
        std::thread::spawn(move || {
            let mut continued = None;
            for line in io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                let Some(line) = join_continued(&mut continued, line) else {
                    continue;
                };
                if tx.blocking_send(Input::Line(line)).is_err() {
                    return;
                }
            }
            let _ = tx.blocking_send(Input::Eof);
        });
        return Ok((
            rx,
            Output::new(Sink::Plain {
                at_line_start: true,
            }),
        ));
    }
    let mut editor = rustyline::DefaultEditor::new().map_err(io::Error::other)?;
    let printer = editor.create_external_printer().map_err(io::Error::other)?;
    std::thread::spawn(move || {
        let mut continued = None;
        loop {
            let input = match editor.readline(&prompt) {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    match join_continued(&mut continued, line) {
                        Some(line) => Input::Line(line),
                        None => continue,
                    }
                }
                Err(ReadlineError::Interrupted) => Input::Interrupt,
                Err(ReadlineError::Eof) => Input::Eof,
                Err(error) => {
                    tracing::warn!(%error, "the line editor failed");
                    Input::Eof
                }
            };
            let eof = matches!(input, Input::Eof);
            if tx.blocking_send(input).is_err() || eof {
                return;
            }
        }
    });
    let output = Output::new(Sink::Editor {
        printer: Box::new(printer),
        partial: String::new(),
    });
    Ok((rx, output))
}

/// Joins a message typed over several lines: a line ending in `\` is kept (without it) in
/// `continued` and `None` returned; the next line that does not end in one completes the
/// message, its lines joined by newlines.
fn join_continued(continued: &mut Option<String>, line: String) -> Option<String> {
    let (text, more) = match line.strip_suffix('\\') {
        Some(text) => (text, true),
        None => (line.as_str(), false),
    };
    let joined = match continued.take() {
        Some(mut earlier) => {
            earlier.push('\n');
            earlier.push_str(text);
            earlier
        }
        None => text.to_owned(),
    };
    if more {
        *continued = Some(joined);
        None
    } else {
        Some(joined)
    }
}

/// What the running turn is waiting for from the user.
enum Waiting {
    Approval(ApprovalRequest),
    FileChange(FileChangeApprovalRequest),
    Question(UserInputRequest),
}

/// The session's state.
struct Chat {
    client: Client,
    server: ServerArgs,
    thread_id: String,
    input: mpsc::Receiver<Input>,
    output: Output,
    /// Lines typed while a turn ran, for after it.
    queued: VecDeque<String>,
    eof: bool,
    interrupts: u32,
    /// Whether the scripted agent answers on the current thread (no model configured).
    scripted: bool,
    /// Whether this chat has told the user that the scripted agent answers: once is enough,
    /// where `run` (one answer) says it each time.
    told_scripted: bool,
    prompt: SharedPrompt,
    /// File changes, plans and reasoning of the running turn.
    view: AgentView,
}

/// Runs `tandem chat` and returns the exit code; errors are reported on stderr.
pub(crate) async fn run(args: ChatArgs, global: GlobalOptions) -> i32 {
    match execute(args, global).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("tandem: {error}");
            1
        }
    }
}

async fn execute(args: ChatArgs, global: GlobalOptions) -> Result<i32, SessionError> {
    // SIGTERM and SIGHUP (the terminal closed) shut the server down cleanly; Ctrl-C keeps its
    // meaning inside the chat.
    let mut signals =
        ShutdownSignals::install_without_interrupt().map_err(SessionError::Signals)?;
    let client = args.server.client(SessionSource::Cli, &global).await?;
    let thread = client
        .start_thread(args.server.thread_params()?)
        .await?
        .thread;
    let scripted = is_scripted(&thread);
    let prompt = SharedPrompt::default();
    let (input, output) = start_input(prompt.clone()).map_err(|error| {
        SessionError::Client(ClientError::Connect {
            reason: format!("cannot read the terminal: {error}"),
        })
    })?;
    let mut chat = Chat {
        client: client.clone(),
        server: args.server,
        thread_id: thread.id,
        input,
        output,
        queued: VecDeque::new(),
        eof: false,
        interrupts: 0,
        scripted,
        told_scripted: false,
        prompt,
        view: AgentView::new(render::stdout_colour()),
    };
    let (ended, chatting) = signals
        .run_session(
            "chat",
            "stopping; a running turn is interrupted",
            async move {
                chat.output.line(&format!(
                    "thread {} (type /help for commands)",
                    chat.thread_id
                ));
                chat.run().await
            },
        )
        .await;
    let code = ended.unwrap_or_else(|signal| signal.exit_code());
    crate::shutdown_deadline::arm("chat", crate::shutdown_deadline::SESSION);
    client.close().await;
    // A chat still blocked in a write stays so until the process exits.
    chatting.abort();
    Ok(code)
}

impl Chat {
    /// The next line: one typed earlier, else one from the input thread. `None` at the end.
    async fn next_input(&mut self) -> Option<Input> {
        if let Some(line) = self.queued.pop_front() {
            return Some(Input::Line(line));
        }
        if self.eof {
            return None;
        }
        tokio::select! {
            input = self.input.recv() => match input {
                Some(Input::Eof) | None => {
                    self.eof = true;
                    None
                }
                other => other,
            },
            _ = tokio::signal::ctrl_c() => Some(Input::Interrupt),
        }
    }

    async fn run(&mut self) -> i32 {
        while let Some(input) = self.next_input().await {
            let line = match input {
                Input::Interrupt => {
                    self.interrupts += 1;
                    if self.interrupts > 1 {
                        return INTERRUPTED_EXIT_CODE;
                    }
                    self.output
                        .line("(no turn is running; Ctrl-C again or Ctrl-D to leave)");
                    continue;
                }
                Input::Line(line) => line,
                Input::Eof => break,
            };
            self.interrupts = 0;
            let text = line.trim();
            match text.split_once(char::is_whitespace).unwrap_or((text, "")) {
                ("", _) => {}
                ("/quit" | "/exit", _) => break,
                ("/help", _) => {
                    self.output.line(HELP);
                    if self.scripted {
                        self.output.line(SCRIPTED_COMMANDS);
                    }
                }
                ("/threads", _) => self.list_threads().await,
                ("/resume", id) => self.resume(id.trim()).await,
                ("/interrupt", _) => self.output.line("(no turn is running)"),
                ("/undo", _) => self.undo().await,
                ("/reasoning", _) => {
                    self.view.full_reasoning = !self.view.full_reasoning;
                    self.output.line(if self.view.full_reasoning {
                        "(reasoning is shown in full; /reasoning folds it again)"
                    } else {
                        "(reasoning is folded to one line; /reasoning shows it in full)"
                    });
                }
                _ => {
                    let params = self.server.turn_params(&self.thread_id, &line);
                    match self.client.start_turn(params).await {
                        Ok(turn) => {
                            if self.scripted && !self.server.quiet_notices && !self.told_scripted {
                                self.told_scripted = true;
                                self.notice(SCRIPTED_NOTICE);
                            }
                            if let Some(code) = self.follow(turn).await {
                                return code;
                            }
                        }
                        Err(error) => self.output.line(&format!("error: {error}")),
                    }
                }
            }
        }
        0
    }

    async fn list_threads(&mut self) {
        match self
            .client
            .list_threads(ThreadListParams::new().limit(20))
            .await
        {
            Ok(page) if page.data.is_empty() => self.output.line("(no threads)"),
            Ok(page) => {
                for thread in page.data {
                    let marker = if thread.id == self.thread_id {
                        "*"
                    } else {
                        " "
                    };
                    let title = thread.name.as_deref().unwrap_or(&thread.preview);
                    self.output
                        .line(&format!("{marker} {}  {}", thread.id, title.trim()));
                }
            }
            Err(error) => self.output.line(&format!("error: {error}")),
        }
    }

    /// undo29: `/undo`: the last turn dropped, its files put back where nothing changed them
    /// since, and what became of each file shown.
    async fn undo(&mut self) {
        match self.client.undo_last_turn(&self.thread_id).await {
            Ok(None) => self.output.line("(no turn to undo)"),
            Ok(Some(undone)) => {
                for line in tandem_client::undo_report(&undone.file_restore) {
                    self.output.line(&line);
                }
            }
            Err(error) => self.output.line(&format!("error: {error}")),
        }
    }

    async fn resume(&mut self, id: &str) {
        if id.is_empty() {
            return self.output.line("usage: /resume ID (see /threads)");
        }
        match self.client.resume_thread(ThreadResumeParams::new(id)).await {
            Ok(resumed) => {
                self.scripted = is_scripted(&resumed.thread);
                self.thread_id = resumed.thread.id;
                self.output
                    .line(&format!("resumed thread {}:", self.thread_id));
                for line in history(&resumed.thread.turns) {
                    self.output.line(&line);
                }
            }
            Err(error) => self.output.line(&format!("error: {error}")),
        }
    }

    /// A notice on stderr (or, under the line editor, above its prompt: writing to the
    /// terminal behind the editor's back would garble the line being typed).
    fn notice(&mut self, text: &str) {
        match self.output.sink {
            Sink::Plain { .. } => eprintln!("{text}"),
            Sink::Editor { .. } => self.output.line(text),
        }
    }

    /// Shows the turn until it completes, answering what it waits for from the input.
    /// `Some(code)` if the session must end now.
    async fn follow(&mut self, mut turn: TurnHandle) -> Option<i32> {
        let mut waiting: Option<Waiting> = None;
        self.view.forget_plan();
        loop {
            if let Some(pending) = waiting.take() {
                waiting = self.answer_from_queue(pending).await;
            }
            tokio::select! {
                event = turn.next_event() => match event {
                    Some(Ok(TurnEvent::Completed(done))) => {
                        self.prompt.set_answering(false);
                        self.output.end_line();
                        match done.status {
                            TurnStatus::Failed => {
                                let reason = done.error.map(|e| e.message).unwrap_or_default();
                                self.output.line(&format!("(turn failed: {reason})"));
                            }
                            TurnStatus::Interrupted => self.output.line("(interrupted)"),
                            _ => {}
                        }
                        return None;
                    }
                    Some(Ok(event)) => {
                        if let Some(pending) = self.show(event) {
                            waiting = Some(pending);
                        }
                    }
                    Some(Err(error)) => {
                        self.output.line(&format!("({error})"));
                        let _ = turn.wait_completed().await;
                        return None;
                    }
                    None => return None,
                },
                input = self.input.recv(), if !self.eof => match input {
                    Some(Input::Line(line)) => {
                        self.interrupts = 0;
                        // The editor echoed the line below the plan.
                        self.view.forget_plan();
                        if line.trim() == "/interrupt" {
                            self.interrupt(&turn);
                        } else {
                            self.queued.push_back(line);
                        }
                    }
                    Some(Input::Interrupt) => {
                        if let Some(code) = self.on_interrupt(&turn) {
                            return Some(code);
                        }
                    }
                    Some(Input::Eof) | None => self.eof = true,
                },
                _ = tokio::signal::ctrl_c() => {
                    if let Some(code) = self.on_interrupt(&turn) {
                        return Some(code);
                    }
                }
            }
        }
    }

    fn on_interrupt(&mut self, turn: &TurnHandle) -> Option<i32> {
        self.interrupts += 1;
        if self.interrupts > 1 {
            return Some(INTERRUPTED_EXIT_CODE);
        }
        self.interrupt(turn);
        None
    }

    fn interrupt(&mut self, turn: &TurnHandle) {
        self.output.line("(interrupting; Ctrl-C again to leave)");
        let client = self.client.clone();
        let params = TurnInterruptParams::new(turn.thread_id(), turn.id());
        tokio::spawn(async move {
            // A turn that already finished has nothing to interrupt.
            let _ = client.interrupt_turn(params).await;
        });
    }

    /// Prints one event; returns what the turn now waits for, if anything.
    fn show(&mut self, event: TurnEvent) -> Option<Waiting> {
        match event {
            TurnEvent::AgentText { delta, .. } => self.output.write(&delta),
            TurnEvent::CommandOutput { delta, .. } => self.output.write(&delta),
            TurnEvent::ItemStarted(item) => self.view.item_started(&item),
            TurnEvent::ItemCompleted(item) => {
                self.output.end_line();
                let lines = self.view.item_completed(&item);
                self.lines(&lines);
            }
            TurnEvent::Other(ServerNotification::TurnPlanUpdated(update)) => {
                self.output.end_line();
                // The line editor's printer writes above the prompt, after clearing it, so
                // moving up from there reaches the plan just as on a plain terminal.
                let size = crate::terminal::window_size()
                    .filter(|_| stdout_is_terminal())
                    .map(|size| (usize::from(size.cols), usize::from(size.rows)));
                let plan = self.view.plan(&update, self.output.writes, size);
                self.output.write(&plan.text);
                self.view.plan_written(&plan, self.output.writes);
            }
            TurnEvent::FileChangeApproval(request) => {
                self.prompt.set_answering(true);
                self.output.end_line();
                let diff = self.view.approval_diff(request.item_id());
                self.lines(&diff);
                let question = render::file_change_question(request.params().reason.as_deref());
                self.lines(&question);
                return Some(Waiting::FileChange(request));
            }
            TurnEvent::Approval(request) => {
                self.prompt.set_answering(true);
                self.output.line(&approval_question(request.command()));
                return Some(Waiting::Approval(request));
            }
            TurnEvent::Question(request) => {
                self.prompt.set_answering(true);
                for question in request.questions() {
                    self.output.line(&format!("? {}", question.question));
                }
                return Some(Waiting::Question(request));
            }
            TurnEvent::ToolCall(request) => {
                let tool = request.params().tool.clone();
                tokio::spawn(async move {
                    let _ = request
                        .fail(format!("tandem chat provides no tool named `{tool}`"))
                        .await;
                });
            }
            // A retry of the model agent (`Reconnecting... 1/5`), one line each; an error that
            // ends the turn is shown with the failed turn too.
            TurnEvent::Error(error) if error.will_retry => {
                self.output.line(&retry_line(&error.error))
            }
            TurnEvent::Error(error) => self.output.line(&format!("error: {}", error.error.message)),
            _ => {}
        }
        None
    }

    fn lines(&mut self, lines: &[String]) {
        for line in lines {
            self.output.line(line);
        }
    }

    /// Answers `pending` with the next line (waiting for one if none is queued); declines or
    /// answers nothing once the input has ended.
    async fn answer_from_queue(&mut self, pending: Waiting) -> Option<Waiting> {
        let line = match self.queued.pop_front() {
            Some(line) => Some(line),
            None if self.eof => None,
            None => match self.input.recv().await {
                Some(Input::Line(line)) => Some(line),
                // Ctrl-C at an approval or a question: the least-privilege answer.
                Some(Input::Interrupt) => None,
                Some(Input::Eof) | None => {
                    self.eof = true;
                    None
                }
            },
        };
        self.prompt.set_answering(false);
        self.view.forget_plan();
        let answered = match (pending, line) {
            (Waiting::Approval(request), Some(line)) if is_yes(&line) => request.accept().await,
            (Waiting::Approval(request), _) => {
                self.output.line("(declined)");
                request.decline().await
            }
            (Waiting::FileChange(request), line) => {
                let decision = line
                    .as_deref()
                    .map_or(FileChangeApprovalDecision::Decline, file_change_decision);
                request.decide(decision).await
            }
            (Waiting::Question(request), Some(line)) => request.answer_all(line).await,
            (Waiting::Question(request), None) => request.no_answers().await,
        };
        if let Err(error) = answered {
            self.output.line(&format!("error: {error}"));
        }
        None
    }
}

fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}

/// The lines that show `turns` after `/resume`: each user message after `> `, the agent's
/// text, each command with its exit code, and how a turn that did not complete ended.
fn history(turns: &[Turn]) -> Vec<String> {
    let mut lines = Vec::new();
    if turns.is_empty() {
        lines.push("(no turns yet)".to_owned());
    }
    for turn in turns {
        for item in &turn.items {
            match item {
                ThreadItem::UserMessage { content, .. } => {
                    for input in content {
                        if let UserInput::Text { text } = input {
                            lines.push(format!("{PROMPT}{}", text.trim_end()));
                        }
                    }
                }
                ThreadItem::AgentMessage { text, .. } => lines.push(text.trim_end().to_owned()),
                ThreadItem::CommandExecution {
                    command, exit_code, ..
                } => lines.push(match exit_code {
                    Some(code) => format!("$ {command}  (exit {code})"),
                    None => format!("$ {command}  (did not run)"),
                }),
                ThreadItem::DynamicToolCall { tool, .. } => lines.push(format!("(tool {tool})")),
                ThreadItem::McpToolCall { server, tool, .. } => {
                    lines.push(format!("(tool {server}/{tool})"));
                }
                ThreadItem::ContextCompaction { .. } => {
                    lines.push("(earlier turns compacted into a summary)".to_owned());
                }
                ThreadItem::Reasoning {
                    summary, content, ..
                } => lines.extend(render::reasoning_folded(summary, content, false)),
                ThreadItem::FileChange {
                    changes, status, ..
                } => lines.extend(render::file_change_outcome(changes, *status)),
            }
        }
        match turn.status {
            TurnStatus::Failed => lines.push(format!(
                "(turn failed: {})",
                turn.error
                    .as_ref()
                    .map(|error| error.message.as_str())
                    .unwrap_or_default()
            )),
            TurnStatus::Interrupted => lines.push("(interrupted)".to_owned()),
            TurnStatus::Completed | TurnStatus::InProgress => {}
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backslash_continues_a_message() {
        let mut continued = None;
        assert_eq!(join_continued(&mut continued, "/patch\\".into()), None);
        assert_eq!(join_continued(&mut continued, " keep\\".into()), None);
        assert_eq!(
            join_continued(&mut continued, "end".into()).as_deref(),
            Some("/patch\n keep\nend")
        );
        assert_eq!(
            join_continued(&mut continued, "one".into()).as_deref(),
            Some("one")
        );
    }

    #[test]
    fn history_shows_each_message_command_and_ending() {
        let json = serde_json::json!([
            {"id": "t1", "items": [
                {"type": "userMessage", "id": "u1", "content": [{"type": "text", "text": "hello"}], "clientId": null},
                {"type": "agentMessage", "id": "a1", "text": "You said: \"hello\""}
            ], "itemsView": "full", "status": "completed", "error": null,
             "startedAt": null, "completedAt": null, "durationMs": null},
            {"id": "t2", "items": [
                {"type": "userMessage", "id": "u2", "content": [{"type": "text", "text": "/fail no"}], "clientId": null}
            ], "itemsView": "full", "status": "failed", "error": {"message": "no", "additionalDetails": null},
             "startedAt": null, "completedAt": null, "durationMs": null}
        ]);
        let turns: Vec<Turn> = serde_json::from_value(json).expect("turns");
        assert_eq!(
            history(&turns),
            [
                "> hello",
                "You said: \"hello\"",
                "> /fail no",
                "(turn failed: no)"
            ]
        );
        assert_eq!(history(&[]), ["(no turns yet)"]);
    }
}
