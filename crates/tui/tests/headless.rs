//! The whole app headless: the in-process reference server (scripted agent), the app loop on
//! ratatui's `TestBackend`, keys fed as crossterm events. A prompt streams its answer, a `/sh`
//! command is approved and its output lands in a pane, a `/sleep` turn is interrupted with
//! Esc, a `!` process under a PTY takes typed input, and Ctrl-C twice quits.

use std::io;
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use futures::StreamExt as _;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tandem_client::{Client, ClientOptions, Transport};
use tandem_protocol::ProcessScreenParams;
use tandem_protocol::client_methods::ProcessScreen;
use tandem_server::ServerOptions;
use tandem_tui::state::{AppState, Entry, TurnState};
use tandem_tui::{ExitReason, PaneSource, Tui, TuiOptions, ui};
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(30);

struct Keys(mpsc::Sender<io::Result<Event>>);

impl Keys {
    async fn key(&self, code: KeyCode, modifiers: KeyModifiers) {
        self.0
            .send(Ok(Event::Key(KeyEvent::new(code, modifiers))))
            .await
            .expect("the app reads keys");
    }

    async fn text(&self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE).await;
        }
    }

    async fn line(&self, text: &str) {
        self.text(text).await;
        self.key(KeyCode::Enter, KeyModifiers::NONE).await;
    }
}

fn agent_said(state: &AppState, text: &str) -> bool {
    state
        .transcript
        .iter()
        .any(|entry| matches!(entry, Entry::Agent { text: said, .. } if said == text))
}

fn screen_text(state: &AppState, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal
        .draw(|frame| ui::draw(frame, state))
        .expect("drawn");
    let buffer = terminal.backend().buffer();
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The app on an in-process server, with its key sender and its task.
struct Session {
    tui: Tui,
    client: Client,
    keys: Keys,
    app: tokio::task::JoinHandle<Result<ExitReason, tandem_tui::TuiError>>,
    _home: tempfile::TempDir,
}

async fn session() -> Session {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp home");
    let mut server = ServerOptions::new(home.path()).expect("server options");
    // In-process without the helper binary the sandbox cannot be applied; this test is not
    // about the sandbox.
    server.config.sandbox = tandem_protocol::SandboxPolicy::DangerFullAccess;
    let client = Client::start(Transport::InProcess(server), ClientOptions::new())
        .await
        .expect("client starts");
    let cwd = home.path().to_str().expect("utf-8 path").to_owned();
    let tui = Tui::new(client.clone(), TuiOptions::new("in-process", cwd));
    let (sender, receiver) = mpsc::channel(64);
    let input = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (event, receiver))
    })
    .boxed();
    let app = {
        let tui = tui.clone();
        tokio::spawn(async move {
            let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("test terminal");
            tui.run(&mut terminal, input, std::future::pending()).await
        })
    };
    Session {
        tui,
        client,
        keys: Keys(sender),
        app,
        _home: home,
    }
}

impl Session {
    async fn quit(self) -> ExitReason {
        self.keys
            .key(KeyCode::Char('d'), KeyModifiers::CONTROL)
            .await;
        let exit = tokio::time::timeout(LIMIT, self.app)
            .await
            .expect("the app quits")
            .expect("the app task")
            .expect("the app ran");
        tokio::time::timeout(LIMIT, self.client.close())
            .await
            .expect("the client closes");
        exit
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_from_prompt_to_quit() {
    let Session {
        tui,
        client,
        keys,
        app,
        _home,
    } = session().await;

    keys.line("hello").await;
    tui.wait_for("the streamed answer", LIMIT, |state| {
        agent_said(state, "You said: \"hello\"") && state.turn == TurnState::Idle
    })
    .await
    .unwrap();
    assert!(
        tui.state().thread.is_some(),
        "the first message made a thread"
    );

    keys.line("/sh echo hi").await;
    tui.wait_for("the approval prompt", LIMIT, |state| {
        state
            .approvals
            .front()
            .is_some_and(|approval| approval.command() == Some("echo hi"))
    })
    .await
    .unwrap();
    let screen = screen_text(&tui.state(), 80, 24);
    assert!(screen.contains("Run echo hi ?"), "{screen}");
    assert!(screen.contains("waiting for approval"), "{screen}");
    keys.text("y").await;
    tui.wait_for("the command's output in its pane", LIMIT, |state| {
        state
            .active_pane()
            .is_some_and(|pane| pane.text() == "hi" && pane.finished.as_deref() == Some("exit 0"))
            && state.turn == TurnState::Idle
    })
    .await
    .unwrap();

    keys.line("/sleep 60000").await;
    tui.wait_for("the running turn", LIMIT, |state| {
        matches!(state.turn, TurnState::Running { .. })
    })
    .await
    .unwrap();
    keys.key(KeyCode::Esc, KeyModifiers::NONE).await;
    tui.wait_for("the interrupted turn", LIMIT, |state| {
        state.turn == TurnState::Idle
            && matches!(state.transcript.back(), Some(Entry::Notice(text)) if text == "(interrupted)")
    })
    .await
    .unwrap();

    // A process under a PTY, the size of the pane, that reads what is typed into the pane.
    keys.line("!stty size; read line; echo got $line").await;
    let (rows, cols) = ui::pane_size(ratatui::layout::Rect::new(0, 0, 80, 24));
    let size = format!("{rows} {cols}");
    tui.wait_for("the process's terminal size", LIMIT, |state| {
        state
            .active_pane()
            .is_some_and(|pane| pane.text().contains(&size))
    })
    .await
    .unwrap();
    keys.line("abc").await;
    tui.wait_for("the process's answer", LIMIT, |state| {
        state.active_pane().is_some_and(|pane| {
            pane.text().contains("got abc") && pane.finished.as_deref() == Some("exit 0")
        })
    })
    .await
    .unwrap();

    // Late attach: a full-screen drawing, then the server's kept screen (`process/screen`)
    // equals what the pane's emulator shows from the streamed bytes.
    keys.key(KeyCode::Char('o'), KeyModifiers::CONTROL).await;
    keys.line(
        "!printf '\\033[2J\\033[3;5Hdrawn at 3,5 \\033[31mred\\033[0m\\033[6;1Hbottom'; read x",
    )
    .await;
    tui.wait_for("the full-screen drawing", LIMIT, |state| {
        state
            .active_pane()
            .is_some_and(|pane| pane.text().contains("bottom"))
    })
    .await
    .unwrap();
    let (handle, pane_text) = {
        let state = tui.state();
        let pane = state.active_pane().expect("the pane");
        let PaneSource::Process { handle } = &pane.source else {
            panic!("a process pane");
        };
        (handle.clone(), pane.text())
    };
    let screen = client
        .call::<ProcessScreen>(ProcessScreenParams::new(&handle))
        .await
        .expect("process/screen answers");
    assert_eq!(screen.text, pane_text);
    assert_eq!(
        (screen.size.rows, screen.size.cols),
        ui::pane_size(ratatui::layout::Rect::new(0, 0, 80, 24))
    );
    assert!(
        screen
            .text
            .lines()
            .nth(2)
            .is_some_and(|row| row == "    drawn at 3,5 red")
    );
    assert!(
        screen.formatted.contains("\x1b[31m"),
        "{:?}",
        screen.formatted
    );
    keys.line("done").await;
    tui.wait_for("the drawing's exit", LIMIT, |state| {
        state
            .active_pane()
            .is_some_and(|pane| pane.finished.as_deref() == Some("exit 0"))
    })
    .await
    .unwrap();

    keys.key(KeyCode::Char('c'), KeyModifiers::CONTROL).await;
    keys.key(KeyCode::Char('c'), KeyModifiers::CONTROL).await;
    let exit = tokio::time::timeout(LIMIT, app)
        .await
        .expect("the app quits on Ctrl-C twice")
        .expect("the app task")
        .expect("the app ran");
    assert_eq!(exit, ExitReason::Interrupted);
    assert_eq!(exit.exit_code(), 130);
    tokio::time::timeout(LIMIT, client.close())
        .await
        .expect("the client closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_questions_and_the_thread_list() {
    let session = session().await;
    let tui = session.tui.clone();
    let keys = &session.keys;

    // A message typed while a turn runs steers it: the agent runs it after the sleep.
    keys.line("/sleep 300").await;
    tui.wait_for("the running turn", LIMIT, |state| {
        matches!(state.turn, TurnState::Running { .. })
    })
    .await
    .unwrap();
    keys.line("steered").await;
    tui.wait_for("the steered message's answer", LIMIT, |state| {
        agent_said(state, "You said: \"steered\"") && state.turn == TurnState::Idle
    })
    .await
    .unwrap();
    assert!(tui.state().transcript.iter().any(|entry| matches!(
        entry,
        Entry::User { text, steered: true } if text == "steered"
    )));

    // A question of the agent: the next submission answers it.
    keys.line("/ask your name?").await;
    tui.wait_for("the question", LIMIT, |state| {
        state
            .questions
            .front()
            .is_some_and(|question| question.questions == ["your name?"])
    })
    .await
    .unwrap();
    let screen = screen_text(&tui.state(), 80, 24);
    assert!(screen.contains("answer: your name?"), "{screen}");
    keys.line("Ada").await;
    tui.wait_for("the echoed answer", LIMIT, |state| {
        agent_said(state, "you answered: Ada") && state.turn == TurnState::Idle
    })
    .await
    .unwrap();
    let first = tui.state().thread.clone().expect("a thread").id;

    // The thread list: fork the thread, see both, archive the fork, resume the first.
    keys.key(KeyCode::Char('t'), KeyModifiers::CONTROL).await;
    tui.wait_for("the thread list", LIMIT, |state| {
        state.screen == tandem_tui::state::Screen::Threads && state.threads.items.len() == 1
    })
    .await
    .unwrap();
    keys.text("f").await;
    tui.wait_for("the fork", LIMIT, |state| {
        state
            .thread
            .as_ref()
            .is_some_and(|thread| thread.id != first)
            && agent_said(state, "you answered: Ada")
    })
    .await
    .unwrap();
    let fork = tui.state().thread.clone().expect("the fork").id;
    keys.key(KeyCode::Char('t'), KeyModifiers::CONTROL).await;
    tui.wait_for("both threads", LIMIT, |state| {
        state.threads.items.len() == 2
    })
    .await
    .unwrap();
    let fork_row = tui
        .state()
        .threads
        .items
        .iter()
        .position(|thread| thread.id == fork)
        .expect("the fork is listed");
    tui.state().threads.selected = fork_row;
    keys.text("a").await;
    tui.wait_for("the list without the archived fork", LIMIT, |state| {
        state.threads.items.len() == 1 && state.threads.items[0].id == first
    })
    .await
    .unwrap();
    keys.key(KeyCode::Enter, KeyModifiers::NONE).await;
    tui.wait_for("the resumed thread's history", LIMIT, |state| {
        state.screen == tandem_tui::state::Screen::Chat
            && state
                .thread
                .as_ref()
                .is_some_and(|thread| thread.id == first)
            && agent_said(state, "You said: \"steered\"")
            && agent_said(state, "you answered: Ada")
    })
    .await
    .unwrap();

    assert_eq!(session.quit().await, ExitReason::Quit);
}
