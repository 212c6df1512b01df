//! `tandem run "PROMPT"`: one turn on a new thread, through `tandem-client`. The agent's text
//! streams to stdout; approvals are granted with `--yes`, asked on the terminal when stdin is
//! one, and declined otherwise; `--json` prints every notification as a JSON line instead.
//! Ctrl-C interrupts the turn, a second Ctrl-C exits at once.
//!
//! Beside the agent's text, stderr shows (as it shows command output) each file change as its
//! diff, the plan as a checklist (updated in place on a terminal) and reasoning folded to one
//! dimmed line. A file change that needs approval follows the same rule as a command.

use std::io::{self, Write};

use clap::Args;
use tandem_client::{
    Client, Event, Overflow, SubscriptionFilter, SubscriptionOptions, TurnEvent, TurnHandle,
};
use tandem_protocol::wire::{ServerMessage, encode_server_message};
use tandem_protocol::{
    FileChangeApprovalDecision, ServerNotification, SessionSource, Turn, TurnStatus,
};

use crate::agent_view::AgentView;
use crate::render;
use crate::session::{
    SCRIPTED_NOTICE, ServerArgs, SessionError, approval_question, ask_line, file_change_decision,
    is_scripted, is_yes, stdin_is_terminal,
};
use crate::settings::GlobalOptions;
use crate::signals::ShutdownSignals;

/// Exit code of a turn that failed.
const FAILED_EXIT_CODE: i32 = 1;
/// Exit code of an interrupted turn (128 + SIGINT).
const INTERRUPTED_EXIT_CODE: i32 = 130;

const AFTER_HELP: &str = "\
Approvals:
  With --yes every command the agent asks to run, and every file change it asks to write, is
  approved. Without it, tandem asks on the terminal when stdin is one (for a file change, after
  showing its diff), and declines otherwise (the agent is told and goes on).

Exit status:
  0     the turn completed
  1     the turn failed, or tandem could not reach the server
  130   the turn was interrupted (Ctrl-C)
  2     usage error

Model:
  Without a configured model provider the scripted test agent answers, and tandem says so on
  stderr (--quiet-notices hides that). A model is configured in TANDEM_HOME/config.toml or with
  -c: tandem -c model_provider=ollama -c model=qwen3:8b run hi. Retries of a failed model
  request are shown on stderr as they happen.

Environment:
  TANDEM_HOME  the in-process server's home directory (an absolute path)
  TANDEM_LOG   a tracing filter for tandem's own logs on stderr; off by default
               (tandem::wire=trace: every JSON message in and out)";

/// The options of `tandem run`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct RunArgs {
    /// Print every notification as a JSON line on stdout instead of the agent's text.
    #[arg(long)]
    json: bool,

    /// Approve every command the agent asks to run and every file change it asks to write.
    #[arg(long)]
    yes: bool,

    #[command(flatten)]
    server: ServerArgs,

    /// What to ask the agent.
    #[arg(value_name = "PROMPT")]
    prompt: String,
}

/// Runs `tandem run` and returns the exit code; errors are reported on stderr.
pub(crate) async fn run(args: RunArgs, global: GlobalOptions) -> i32 {
    match execute(args, global).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("tandem: {error}");
            FAILED_EXIT_CODE
        }
    }
}

async fn execute(args: RunArgs, global: GlobalOptions) -> Result<i32, SessionError> {
    // Before the server starts: from then on SIGTERM and SIGHUP shut it down (the turn
    // interrupted and stored, its processes killed) instead of killing tandem on the spot.
    let mut signals =
        ShutdownSignals::install_without_interrupt().map_err(SessionError::Signals)?;
    let client = args.server.client(SessionSource::Exec, &global).await?;
    let session = client.clone();
    let (ended, driving) = signals
        .run_session(
            "run",
            "stopping; the running turn is interrupted",
            async move { drive(&session, &args).await },
        )
        .await;
    let outcome = ended.unwrap_or_else(|signal| Ok(signal.exit_code()));
    crate::shutdown_deadline::arm("run", crate::shutdown_deadline::SESSION);
    client.close().await;
    // A session still blocked in a write stays so until the process exits.
    driving.abort();
    outcome
}

async fn drive(client: &Client, args: &RunArgs) -> Result<i32, SessionError> {
    // Lossless: with --json every notification is printed, so none may be skipped; a slow
    // stdout slows the server down instead. Subscribed first, so `thread/started` is printed
    // too.
    let mut notifications = args.json.then(|| {
        client.subscribe(
            SubscriptionOptions::new(SubscriptionFilter::All).overflow(Overflow::Lossless),
        )
    });
    let thread = client
        .start_thread(args.server.thread_params()?)
        .await?
        .thread;
    let mut turn = client
        .start_turn(args.server.turn_params(&thread.id, &args.prompt))
        .await?;
    if is_scripted(&thread) && !args.server.quiet_notices {
        eprintln!("{SCRIPTED_NOTICE}");
    }
    let ask = !args.yes && stdin_is_terminal();
    let mut interrupts = 0;
    let mut shown = Shown {
        printed_newline: true,
        view: AgentView::new(render::stderr_colour()),
        writes: 0,
    };
    // Whether the loop below already printed this turn's `turn/completed`: the subscription
    // and the turn handle race, and either may deliver the completion first.
    let mut printed_completion = false;
    let finished = loop {
        tokio::select! {
            event = turn.next_event() => match event {
                Some(Ok(TurnEvent::Completed(done))) => break done,
                Some(Ok(event)) => handle_event(event, args, ask, &mut shown).await,
                Some(Err(error)) => {
                    tracing::debug!(%error, "turn events ended early; waiting for completion");
                    break wait(turn).await?;
                }
                None => break wait(turn).await?,
            },
            Some(event) = next_notification(&mut notifications) => {
                printed_completion |= completes(&event, turn.id());
                print_json(&event);
            }
            _ = tokio::signal::ctrl_c() => {
                interrupts += 1;
                if interrupts > 1 {
                    return Ok(INTERRUPTED_EXIT_CODE);
                }
                eprintln!("\ntandem: interrupting the turn (Ctrl-C again to exit now)");
                let (client, thread_id, turn_id) =
                    (client.clone(), thread.id.clone(), turn.id().to_owned());
                tokio::spawn(async move {
                    let params = tandem_protocol::TurnInterruptParams::new(thread_id, turn_id);
                    if let Err(error) = client.interrupt_turn(params).await {
                        eprintln!("tandem: {error}");
                    }
                });
            }
        }
    };
    // Everything up to and including `turn/completed` is already queued: print what the loop
    // did not, in order.
    if let Some(subscription) = notifications.as_mut().filter(|_| !printed_completion) {
        while let Some(Ok(event)) = subscription.next().await {
            let last = completes(&event, &finished.id);
            print_json(&event);
            if last {
                break;
            }
        }
    }
    if !args.json && !shown.printed_newline {
        println!();
    }
    Ok(exit_code(&finished))
}

/// Whether `event` is the `turn/completed` of `turn_id`.
fn completes(event: &Event, turn_id: &str) -> bool {
    matches!(event, Event::Notification(ServerNotification::TurnCompleted(done)) if done.turn.id == turn_id)
}

async fn wait(turn: TurnHandle) -> Result<Turn, SessionError> {
    Ok(turn.wait_completed().await?)
}

async fn next_notification(
    subscription: &mut Option<tandem_client::Subscription>,
) -> Option<Event> {
    match subscription {
        Some(subscription) => match subscription.next().await {
            Some(Ok(event)) => Some(event),
            _ => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

fn exit_code(turn: &Turn) -> i32 {
    match turn.status {
        TurnStatus::Completed | TurnStatus::InProgress => 0,
        TurnStatus::Interrupted => INTERRUPTED_EXIT_CODE,
        TurnStatus::Failed => {
            let message = turn
                .error
                .as_ref()
                .map(|error| error.message.as_str())
                .unwrap_or("no reason given");
            eprintln!("tandem: the turn failed: {message}");
            FAILED_EXIT_CODE
        }
    }
}

/// What `run` has shown of the turn.
struct Shown {
    /// Whether the agent's text on stdout ends with a newline.
    printed_newline: bool,
    /// File changes, plan and reasoning.
    view: AgentView,
    /// How many events printed something: a plan is replaced in place only when nothing was
    /// printed since.
    writes: u64,
}

impl Shown {
    /// Ends the agent's line on stdout, so that what goes to stderr starts on a line of its
    /// own on a terminal that shows both.
    fn end_line(&mut self) {
        if !self.printed_newline {
            println!();
            self.printed_newline = true;
        }
    }

    /// Prints `lines` on stderr.
    fn lines(&mut self, lines: &[String]) {
        if lines.is_empty() {
            return;
        }
        self.end_line();
        let mut stderr = io::stderr().lock();
        for line in lines {
            let _ = writeln!(stderr, "{line}");
        }
        self.writes += 1;
    }
}

async fn handle_event(event: TurnEvent, args: &RunArgs, ask: bool, shown: &mut Shown) {
    if !args.json
        && !matches!(
            event,
            TurnEvent::ItemStarted(_)
                | TurnEvent::Other(_)
                | TurnEvent::Status(_)
                | TurnEvent::Started(_)
                | TurnEvent::RequestResolved(_)
                | TurnEvent::Lagged { .. }
        )
    {
        // Something may be printed: a plan after it is printed anew.
        shown.writes += 1;
    }
    match event {
        TurnEvent::AgentText { delta, .. } if !args.json => {
            let mut stdout = io::stdout().lock();
            let _ = stdout.write_all(delta.as_bytes());
            let _ = stdout.flush();
            shown.printed_newline = delta.ends_with('\n');
        }
        TurnEvent::ItemStarted(item) if !args.json => shown.view.item_started(&item),
        TurnEvent::ItemCompleted(item) if !args.json => {
            let lines = shown.view.item_completed(&item);
            shown.lines(&lines);
        }
        TurnEvent::Other(ServerNotification::TurnPlanUpdated(update)) if !args.json => {
            shown.end_line();
            let size = crate::terminal::window_size()
                .filter(|_| std::io::IsTerminal::is_terminal(&io::stderr()))
                .map(|size| (usize::from(size.cols), usize::from(size.rows)));
            let plan = shown.view.plan(&update, shown.writes, size);
            eprint!("{}", plan.text);
            shown.writes += 1;
            shown.view.plan_written(&plan, shown.writes);
        }
        TurnEvent::FileChangeApproval(request) => {
            if !args.json {
                let diff = shown.view.approval_diff(request.item_id());
                shown.lines(&diff);
            }
            let reason = request.params().reason.clone();
            let decision = if args.yes {
                FileChangeApprovalDecision::Accept
            } else if ask {
                let question = render::file_change_question(reason.as_deref()).join("\n") + " ";
                tokio::task::spawn_blocking(move || ask_line(&question))
                    .await
                    .ok()
                    .flatten()
                    .map_or(FileChangeApprovalDecision::Decline, |answer| {
                        file_change_decision(&answer)
                    })
            } else {
                eprintln!(
                    "tandem: declined the file change (stdin is not a terminal; pass --yes to \
                     approve file changes)"
                );
                FileChangeApprovalDecision::Decline
            };
            if let Err(error) = request.decide(decision).await {
                eprintln!("tandem: {error}");
            }
        }
        TurnEvent::CommandOutput { delta, .. } if !args.json => {
            eprint!("{delta}");
        }
        // The model agent retrying a failed request (`Reconnecting... 1/5`): one line each, as
        // it happens, so a slow failure is not silent. An error that ends the turn is reported
        // with the failed turn.
        TurnEvent::Error(error) if !args.json && error.will_retry => {
            eprintln!("{}", retry_line(&error.error));
        }
        TurnEvent::Approval(request) => {
            let command = request.command().to_owned();
            let approve = if args.yes {
                true
            } else if ask {
                let question = approval_question(&command);
                tokio::task::spawn_blocking(move || ask_line(&question))
                    .await
                    .ok()
                    .flatten()
                    .is_some_and(|answer| is_yes(&answer))
            } else {
                eprintln!(
                    "tandem: declined `{command}` (stdin is not a terminal; pass --yes to approve commands)"
                );
                false
            };
            let answered = if approve {
                request.accept().await
            } else {
                request.decline().await
            };
            if let Err(error) = answered {
                eprintln!("tandem: {error}");
            }
        }
        TurnEvent::Question(request) => {
            let answer = if ask {
                let question = request
                    .questions()
                    .iter()
                    .map(|q| q.question.clone())
                    .collect::<Vec<_>>()
                    .join("\n");
                tokio::task::spawn_blocking(move || ask_line(&format!("{question}\n> ")))
                    .await
                    .ok()
                    .flatten()
            } else {
                None
            };
            let answered = match answer {
                Some(answer) => request.answer_all(answer).await,
                None => request.no_answers().await,
            };
            if let Err(error) = answered {
                eprintln!("tandem: {error}");
            }
        }
        TurnEvent::ToolCall(request) => {
            let tool = request.params().tool.clone();
            let failed = request
                .fail(format!("tandem run provides no tool named `{tool}`"))
                .await;
            if let Err(error) = failed {
                eprintln!("tandem: {error}");
            }
        }
        _ => {}
    }
}

/// The line shown for a retry: the server's message and what failed.
pub(crate) fn retry_line(error: &tandem_protocol::TurnError) -> String {
    match &error.additional_details {
        Some(details) => format!("tandem: {} ({details})", error.message),
        None => format!("tandem: {}", error.message),
    }
}

fn print_json(event: &Event) {
    let Event::Notification(notification) = event else {
        return;
    };
    // docs/protocol.md: every notification carries `emittedAtMs`, stamped when the message is
    // written, as the wire transports do; these lines are tandem run's wire.
    let emitted_at_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|elapsed| i64::try_from(elapsed.as_millis()).ok());
    let message = ServerMessage::Notification {
        notification: notification.clone(),
        emitted_at_ms,
        // tandem run reads through tandem-client's events, which carry no cursor; nothing
        // resumes from these lines.
        cursor: None,
    };
    let mut line = Vec::new();
    if encode_server_message(&message, &mut line).is_ok() {
        line.push(b'\n');
        let mut stdout = io::stdout().lock();
        let _ = stdout.write_all(&line);
        let _ = stdout.flush();
    }
}
