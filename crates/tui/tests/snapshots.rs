//! Snapshot tests of the screens, drawn by the real drawing code into ratatui's `TestBackend`
//! from states built of values (fixed ids and times, so the text is exact): the thread list,
//! a streaming answer, an approval prompt, and a pane running a colour progress bar.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier};
use tandem_client::TurnEvent;
use tandem_protocol::{CommandExecutionRequestApprovalParams, Thread};
use tandem_tui::state::{AppState, ApprovalView, Limits, Screen, ThreadInfo, TurnState};
use tandem_tui::{PaneSource, TermPane, ui};

/// Draws `state` on a `width` x `height` test terminal; returns the terminal for style checks.
fn draw(state: &AppState, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal
        .draw(|frame| ui::draw(frame, state))
        .expect("drawn");
    terminal
}

/// The screen's text, one line per row, trailing blanks trimmed.
fn text(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    let mut lines = Vec::new();
    for y in 0..buffer.area.height {
        let mut line = String::new();
        for x in 0..buffer.area.width {
            line.push_str(buffer[(x, y)].symbol());
        }
        lines.push(line.trim_end().to_owned());
    }
    lines.join("\n")
}

fn assert_screen(terminal: &Terminal<TestBackend>, expected: &[&str]) {
    let actual = text(terminal);
    let expected = expected
        .iter()
        .map(|line| line.trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        actual, expected,
        "\n--- actual ---\n{actual}\n--- expected ---\n{expected}"
    );
}

fn thread(id: &str, preview: &str, updated_at: i64, forked_from: Option<&str>) -> Thread {
    serde_json::from_value(serde_json::json!({
        "id": id, "sessionId": id, "name": null, "preview": preview, "ephemeral": false,
        "createdAt": updated_at, "updatedAt": updated_at, "status": {"type": "idle"},
        "cwd": "/work", "source": "cli", "forkedFromId": forked_from, "model": "scripted",
        "modelProvider": "tandem", "cliVersion": "0.1.0", "projectId": null, "turns": []
    }))
    .expect("a thread")
}

fn state_on_thread() -> AppState {
    let mut state = AppState::new("in-process", None, Limits::default());
    state.connection.generation = 1;
    state.thread = Some(ThreadInfo {
        id: "019a0000-0000-7000-8000-00000000abcd".into(),
        model: Some("scripted".into()),
        provider: "tandem".into(),
    });
    state
}

#[test]
fn the_thread_list() {
    let mut state = state_on_thread();
    state.screen = Screen::Threads;
    state.threads_loaded(&[
        thread(
            "019a0000-0000-7000-8000-00000000abcd",
            "fix the build",
            1_796_173_496,
            None,
        ),
        thread(
            "019a0000-0000-7000-8000-00000000ef01",
            "write the docs",
            1_796_000_000,
            Some("019a0000-0000-7000-8000-00000000abcd"),
        ),
        thread(
            "019a0000-0000-7000-8000-000000002345",
            "",
            1_795_000_000,
            None,
        ),
    ]);
    state.select_thread(1);
    let terminal = draw(&state, 96, 8);
    assert_screen(
        &terminal,
        &[
            "┌ threads · Enter resume · n new · f fork · a archive · r refresh · Esc back ──────────────────┐",
            "│* 019a0000-0000-7000-8000-00000000abcd  2026-12-02 01:04  fix the build                       │",
            "│  019a0000-0000-7000-8000-00000000ef01  2026-11-30 00:53  write the docs  (fork of …0000abcd) │",
            "│  019a0000-0000-7000-8000-000000002345  2026-11-18 11:06  (empty)                             │",
            "│                                                                                              │",
            "│                                                                                              │",
            "└──────────────────────────────────────────────────────────────────────────────────────────────┘",
            " idle │ scripted (tandem) │ thread …0000abcd │ in-process",
        ],
    );
    // The highlighted row is drawn reversed.
    let buffer = terminal.backend().buffer();
    assert!(
        buffer[(5, 2)]
            .modifier
            .contains(ratatui::style::Modifier::REVERSED)
    );
    assert!(
        !buffer[(5, 1)]
            .modifier
            .contains(ratatui::style::Modifier::REVERSED)
    );
}

#[test]
fn a_streaming_answer_wraps_and_follows_the_end() {
    let mut state = state_on_thread();
    state.user_sent("explain the lanes", false);
    state.turn = TurnState::Starting;
    state.turn_running("turn-1");
    for delta in [
        "Each connection has ",
        "two lanes: one for replies and one for events, ",
        "so a flood of events never delays a reply.",
    ] {
        state.apply_turn_event(TurnEvent::AgentText {
            item_id: "a1".into(),
            delta: delta.into(),
        });
    }
    state.composer.insert_str("and the bounds?");
    let terminal = draw(&state, 40, 12);
    assert_screen(
        &terminal,
        &[
            "› explain the lanes",
            "Each connection has two lanes: one for",
            "replies and one for events, so a flood",
            "of events never delays a reply.",
            "",
            "",
            "",
            "",
            "┌ steer the running turn · Enter sends ┐",
            "│and the bounds?                       │",
            "└──────────────────────────────────────┘",
            " running │ scripted (tandem) │ thread …0",
        ],
    );
    // On a shorter screen the transcript follows its end; scrolled back by two rows, the end
    // is out of view and the question is back.
    let terminal = draw(&state, 40, 7);
    let screen = text(&terminal);
    assert!(screen.starts_with("Each connection has"), "{screen}");
    state.scroll_transcript(2);
    let terminal = draw(&state, 40, 7);
    let screen = text(&terminal);
    assert!(!screen.contains("of events never"), "{screen}");
    assert!(screen.contains("› explain the lanes"), "{screen}");
}

#[test]
fn an_approval_prompt_replaces_the_composer() {
    let mut state = state_on_thread();
    state.user_sent("/sh cargo test", false);
    state.turn = TurnState::Starting;
    state.turn_running("turn-1");
    let params: CommandExecutionRequestApprovalParams = serde_json::from_value(serde_json::json!({
        "threadId": "t", "turnId": "turn-1", "itemId": "c1", "startedAtMs": 0,
        "command": "cargo test", "cwd": "/work", "reason": "to check the change",
        "commandActions": []
    }))
    .expect("approval params");
    state.approval_requested(ApprovalView::new("7", &params));
    let terminal = draw(&state, 70, 10);
    assert_screen(
        &terminal,
        &[
            "› /sh cargo test",
            "",
            "",
            "",
            "┌ approval ──────────────────────────────────────────────────────────┐",
            "│Run cargo test ?                                                    │",
            "│in /work · to check the change                                      │",
            "│[y] accept  [a] accept for session  [n] decline                     │",
            "└────────────────────────────────────────────────────────────────────┘",
            " waiting for approval │ scripted (tandem) │ thread …0000abcd │ in-proc",
        ],
    );
}

#[test]
fn a_pane_running_a_colour_progress_bar() {
    let mut state = state_on_thread();
    let (rows, cols) = ui::pane_size(ratatui::layout::Rect::new(0, 0, 50, 24));
    state.resize_panes(rows, cols);
    let mut pane = TermPane::new(
        "! ./build.sh",
        PaneSource::Process {
            handle: "p1".into(),
        },
        rows,
        cols,
        100,
    );
    // What a progress bar prints under a PTY: a green bar redrawn in place with \r, then a
    // bold summary line.
    pane.feed(b"building\r\n");
    for percent in [10, 40, 70, 100] {
        let filled = percent / 10;
        let bar = format!(
            "\r\x1b[32m{}\x1b[0m{} {percent:>3}%",
            "#".repeat(filled),
            ".".repeat(10 - filled)
        );
        pane.feed(bar.as_bytes());
    }
    pane.feed(b"\r\n\x1b[1;31mwarning:\x1b[0m 1 warning\r\n");
    state.add_pane(pane);
    let terminal = draw(&state, 50, 24);
    assert_screen(
        &terminal,
        &[
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "┌ running · ! ./build.sh · Ctrl-O focuses ───────┐",
            "│building                                        │",
            "│########## 100%                                 │",
            "│warning: 1 warning                              │",
            "│                                                │",
            "│                                                │",
            "│                                                │",
            "└────────────────────────────────────────────────┘",
            "┌ message · Enter sends · Alt-Enter new line · Ct┐",
            "│                                                │",
            "└────────────────────────────────────────────────┘",
            " idle │ scripted (tandem) │ thread …0000abcd │ in-",
        ],
    );
    let buffer = terminal.backend().buffer();
    // The bar is green (ANSI colour 2), its percentage in the default colour, the warning
    // bold red.
    assert_eq!(buffer[(1, 14)].fg, Color::Indexed(2));
    assert_eq!(buffer[(10, 14)].fg, Color::Indexed(2));
    assert_eq!(buffer[(13, 14)].fg, Color::Reset);
    assert_eq!(buffer[(1, 15)].fg, Color::Indexed(1));
    assert!(
        buffer[(1, 15)]
            .modifier
            .contains(ratatui::style::Modifier::BOLD)
    );
}

#[test]
fn a_markdown_answer_is_rendered() {
    let mut state = state_on_thread();
    state.user_sent("how do I test it?", false);
    state.turn = TurnState::Starting;
    state.turn_running("turn-1");
    let answer = "## Testing\n\nRun the *snapshot* tests, then **clippy**:\n\n\
                  1. build `tandem-tui` only\n2. run the tests\n   - unit and snapshot\n\n\
                  ```sh\ncargo test -p tandem-tui\n```\n\n> the machine is shared\n\n\
                  See [the guide](https://x.dev/g).";
    // In deltas cut anywhere, markup included.
    for delta in answer.as_bytes().chunks(7) {
        state.apply_turn_event(TurnEvent::AgentText {
            item_id: "a1".into(),
            delta: String::from_utf8(delta.to_vec()).expect("ascii").into(),
        });
        // Drawn mid-stream, as the app does.
        draw(&state, 40, 24);
    }
    let terminal = draw(&state, 40, 24);
    assert_screen(
        &terminal,
        &[
            "› how do I test it?",
            "Testing",
            "",
            "Run the snapshot tests, then clippy:",
            "",
            "1. build tandem-tui only",
            "2. run the tests",
            "   • unit and snapshot",
            "",
            "cargo test -p tandem-tui",
            "",
            "│ the machine is shared",
            "",
            "See the guide (https://x.dev/g).",
            "",
            "",
            "",
            "",
            "",
            "",
            "┌ steer the running turn · Enter sends ┐",
            "│                                      │",
            "└──────────────────────────────────────┘",
            " running │ scripted (tandem) │ thread …0",
        ],
    );
    let buffer = terminal.backend().buffer();
    let bold = |x: u16, y: u16| buffer[(x, y)].modifier.contains(Modifier::BOLD);
    // The heading and the strong word are bold, the emphasis italic, code green.
    assert!(bold(0, 1));
    assert!(bold(29, 3) && !bold(0, 3));
    assert!(buffer[(8, 3)].modifier.contains(Modifier::ITALIC));
    assert_eq!(buffer[(9, 5)].fg, Color::Green);
    assert_eq!(buffer[(0, 5)].fg, Color::Reset);
    assert_eq!(buffer[(0, 9)].fg, Color::Green);
    assert_eq!(buffer[(4, 13)].fg, Color::Blue);
    assert_eq!(buffer[(15, 13)].fg, Color::DarkGray);
    // Narrow, the same answer wraps inside its list indentation, and scrolling back reaches
    // the question above it.
    let screen = text(&draw(&state, 20, 12));
    assert!(
        screen.starts_with("cargo test -p tandem\n-tui\n"),
        "{screen}"
    );
    assert!(screen.contains("\n(https://x.dev/g).\n"), "{screen}");
    state.scroll_transcript(6);
    let screen = text(&draw(&state, 20, 12));
    assert!(
        screen.starts_with(
            "1. build tandem-tui\n   only\n2. run the tests\n   • unit and\n     snapshot\n"
        ),
        "{screen}"
    );
    assert!(!screen.contains("(https://x.dev/g)"), "{screen}");
    state.scroll_transcript(14);
    let screen = text(&draw(&state, 20, 12));
    assert!(screen.contains("› how do I"), "{screen}");
    assert!(!screen.contains("See the guide"), "{screen}");
}

/// issue 29, point 8: a file change outside the writable roots, its diff in the transcript
/// and the approval prompt below it.
#[test]
fn a_file_change_diff_with_its_approval_prompt() {
    let mut state = state_on_thread();
    state.user_sent("/patch", false);
    state.turn = TurnState::Starting;
    state.turn_running("turn-1");
    let item: tandem_protocol::ThreadItem = serde_json::from_value(serde_json::json!({
        "type": "fileChange", "id": "f1", "status": "inProgress",
        "changes": [{"path": "/etc/motd", "kind": {"type": "update", "move_path": null},
                     "diff": "diff --git a/etc/motd b/etc/motd\n--- a/etc/motd\n+++ b/etc/motd\n\
                              @@ -1,2 +1,2 @@\n keep\n-old\n+new\n"}]
    }))
    .expect("a file change item");
    state.apply_turn_event(TurnEvent::ItemStarted(item));
    let params: tandem_protocol::FileChangeRequestApprovalParams =
        serde_json::from_value(serde_json::json!({
            "threadId": "t", "turnId": "turn-1", "itemId": "f1", "startedAtMs": 0,
            "reason": "outside the writable roots", "grantRoot": null
        }))
        .expect("approval params");
    state.approval_requested(ApprovalView::file_change(
        "8",
        &params,
        vec!["/etc/motd".into()],
    ));
    let terminal = draw(&state, 60, 16);
    assert_screen(
        &terminal,
        &[
            "› /patch",
            "[pending] patch: update /etc/motd",
            "diff --git a/etc/motd b/etc/motd",
            "--- a/etc/motd",
            "+++ b/etc/motd",
            "@@ -1,2 +1,2 @@",
            " keep",
            "-old",
            "+new",
            "",
            "┌ approval ────────────────────────────────────────────────┐",
            "│Apply the changes to /etc/motd ?                          │",
            "│the diff is above · outside the writable roots            │",
            "│[y] accept  [a] accept for session  [n] decline           │",
            "└──────────────────────────────────────────────────────────┘",
            " waiting for approval │ scripted (tandem) │ thread …0000abcd",
        ],
    );
    let buffer = terminal.backend().buffer();
    assert_eq!(buffer[(1, 1)].fg, Color::Yellow, "the status");
    assert!(
        buffer[(0, 2)].modifier.contains(Modifier::BOLD),
        "file header"
    );
    assert_eq!(buffer[(0, 5)].fg, Color::Cyan, "hunk header");
    assert_eq!(buffer[(1, 6)].fg, Color::Reset, "context");
    assert_eq!(buffer[(0, 7)].fg, Color::Red, "removed");
    assert_eq!(buffer[(0, 8)].fg, Color::Green, "added");
}

fn plan_update(statuses: [&str; 3]) -> TurnEvent {
    let steps: Vec<serde_json::Value> = ["read the code", "fix the bug", "run the tests"]
        .iter()
        .zip(statuses)
        .map(|(step, status)| serde_json::json!({"step": step, "status": status}))
        .collect();
    TurnEvent::Other(tandem_protocol::ServerNotification::TurnPlanUpdated(
        serde_json::from_value(serde_json::json!({
            "threadId": "t", "turnId": "turn-1", "explanation": "a small fix", "plan": steps
        }))
        .expect("a plan"),
    ))
}

/// issue 29, point 8: the plan is a checklist, and an update replaces it where it is.
#[test]
fn a_plan_checklist_updates_in_place() {
    let mut state = state_on_thread();
    state.user_sent("fix it", false);
    state.turn = TurnState::Starting;
    state.turn_running("turn-1");
    state.apply_turn_event(plan_update(["inProgress", "pending", "pending"]));
    state.apply_turn_event(TurnEvent::AgentText {
        item_id: "a1".into(),
        delta: "Reading.".into(),
    });
    let before = [
        "› fix it",
        "plan",
        "  a small fix",
        "  [▸] read the code",
        "  [ ] fix the bug",
        "  [ ] run the tests",
        "Reading.",
    ];
    let screen = text(&draw(&state, 40, 12));
    assert!(screen.starts_with(&before.join("\n")), "{screen}");
    state.apply_turn_event(plan_update(["completed", "completed", "inProgress"]));
    let terminal = draw(&state, 40, 12);
    let after = [
        "› fix it",
        "plan",
        "  a small fix",
        "  [x] read the code",
        "  [x] fix the bug",
        "  [▸] run the tests",
        "Reading.",
    ];
    let screen = text(&terminal);
    assert!(screen.starts_with(&after.join("\n")), "{screen}");
    assert_eq!(
        screen.matches("plan").count(),
        1,
        "one plan block: {screen}"
    );
    let buffer = terminal.backend().buffer();
    assert_eq!(
        buffer[(6, 3)].fg,
        Color::DarkGray,
        "a completed step is dimmed"
    );
    assert!(
        buffer[(6, 5)].modifier.contains(Modifier::BOLD),
        "the current step is bold"
    );
}

/// issue 29, point 8: reasoning is dimmed and folded to its first line; Ctrl-R's toggle
/// shows it in full.
#[test]
fn reasoning_folded_and_expanded() {
    let mut state = state_on_thread();
    state.user_sent("/think weigh it | pick one", false);
    let item: tandem_protocol::ThreadItem = serde_json::from_value(serde_json::json!({
        "type": "reasoning", "id": "r1", "summary": ["weigh it", "pick one"],
        "content": ["weigh the two designs, then pick one"]
    }))
    .expect("a reasoning item");
    state.apply_turn_event(TurnEvent::ItemCompleted(item));
    state.apply_turn_event(TurnEvent::AgentText {
        item_id: "a1".into(),
        delta: "Done.".into(),
    });
    let terminal = draw(&state, 40, 10);
    let screen = text(&terminal);
    assert!(
        screen.starts_with("› /think weigh it | pick one\n▸ thinking: weigh it…\nDone."),
        "{screen}"
    );
    let buffer = terminal.backend().buffer();
    assert_eq!(buffer[(2, 1)].fg, Color::DarkGray);
    assert!(buffer[(2, 1)].modifier.contains(Modifier::ITALIC));
    state.toggle_reasoning();
    let screen = text(&draw(&state, 40, 10));
    assert!(
        screen.starts_with(
            "› /think weigh it | pick one\n▾ thinking (Ctrl-R folds)\n  weigh it\n  pick one\n  \
             weigh the two designs, then pick one\nDone."
        ),
        "{screen}"
    );
}
