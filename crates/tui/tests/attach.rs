//! attach19: two TUIs on one server (a websocket app-server served in this process, two
//! connections). TUI A runs a full-screen program in a `!` pane and `/share`s it; TUI B
//! `/attach`es with what A showed and its pane draws the server's present screen at once,
//! cell for cell what A's pane shows, then follows the program's live output to its exit.
//! And a TUI that resumes a thread follows the turns another client runs on it, live.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use futures::StreamExt as _;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tandem_client::{Client, ClientOptions, Transport, WebSocketTarget};
use tandem_host::MessageProcessor;
use tandem_host::transport::websocket::{self, WebSocketOptions};
use tandem_host::transport::{TransportHost, TransportHostOptions};
use tandem_protocol::{ThreadStartParams, TurnStartParams};
use tandem_server::{ServerOptions, TandemServer};
use tandem_tui::state::{AppState, Entry, TurnState};
use tandem_tui::{ExitReason, PaneSource, TermPane, Tui, TuiOptions, ui};
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(30);

struct Keys(mpsc::Sender<io::Result<Event>>);

impl Keys {
    async fn key(&self, code: KeyCode, modifiers: KeyModifiers) {
        tokio::time::timeout(
            LIMIT,
            self.0.send(Ok(Event::Key(KeyEvent::new(code, modifiers)))),
        )
        .await
        .expect("the app takes keys in time")
        .expect("the app reads keys");
    }

    async fn line(&self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE).await;
        }
        self.key(KeyCode::Enter, KeyModifiers::NONE).await;
    }
}

/// One TUI on a connection of its own.
struct Session {
    tui: Tui,
    client: Client,
    keys: Keys,
    app: tokio::task::JoinHandle<Result<ExitReason, tandem_tui::TuiError>>,
}

async fn session(url: &str, cwd: &str) -> Session {
    let client = tokio::time::timeout(LIMIT, async {
        let client = Client::start(
            Transport::WebSocket(WebSocketTarget::new(url)),
            ClientOptions::new().experimental_api(true),
        )
        .await
        .expect("client starts");
        client.connect().await.expect("client connects");
        client
    })
    .await
    .expect("connected in time");
    let tui = Tui::new(client.clone(), TuiOptions::new(url, cwd));
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
    }
}

impl Session {
    async fn quit(self) {
        self.keys
            .key(KeyCode::Char('d'), KeyModifiers::CONTROL)
            .await;
        let exit = tokio::time::timeout(LIMIT, self.app)
            .await
            .expect("the app quits")
            .expect("the app task")
            .expect("the app ran");
        assert_eq!(exit, ExitReason::Quit);
        tokio::time::timeout(LIMIT, self.client.close())
            .await
            .expect("the client closes");
    }
}

/// Every cell's text and attributes, and the cursor, of a pane.
fn cells(pane: &TermPane) -> Vec<String> {
    let screen = pane.screen();
    let (rows, cols) = pane.size();
    let mut cells = Vec::new();
    for row in 0..rows {
        for col in 0..cols {
            let cell = screen.cell(row, col).expect("a cell in the screen");
            cells.push(format!(
                "({row},{col}) {:?} fg {:?} bg {:?} bold {} italic {} underline {} inverse {}",
                cell.contents(),
                cell.fgcolor(),
                cell.bgcolor(),
                cell.bold(),
                cell.italic(),
                cell.underline(),
                cell.inverse()
            ));
        }
    }
    cells.push(format!("cursor {:?}", screen.cursor_position()));
    cells
}

fn watched_pane(state: &AppState) -> Option<&TermPane> {
    state
        .active_pane()
        .filter(|pane| matches!(pane.source, PaneSource::Attached { .. }))
}

fn frame_text(state: &AppState) -> String {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("test terminal");
    terminal
        .draw(|frame| ui::draw(frame, state))
        .expect("drawn");
    let buffer = terminal.backend().buffer();
    (0..24)
        .map(|y| (0..80).map(|x| buffer[(x, y)].symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A websocket app-server served in this process, for several connections.
struct Server {
    host: Arc<TransportHost>,
    served: tokio::task::JoinHandle<io::Result<()>>,
    url: String,
    cwd: String,
    _home: tempfile::TempDir,
}

async fn serve() -> Server {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp home");
    let mut options = ServerOptions::new(home.path()).expect("server options");
    options.config.sandbox = tandem_protocol::SandboxPolicy::DangerFullAccess;
    let host = TransportHost::start(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        TransportHostOptions::default(),
    );
    let (listener, address) = websocket::bind("127.0.0.1:0".parse().expect("an address"))
        .await
        .expect("a port");
    let served = tokio::spawn(websocket::serve(
        Arc::clone(&host),
        listener,
        WebSocketOptions::default(),
    ));
    Server {
        host,
        served,
        url: format!("ws://{address}"),
        cwd: home.path().to_str().expect("utf-8 path").to_owned(),
        _home: home,
    }
}

impl Server {
    async fn stop(self) {
        tokio::time::timeout(LIMIT, self.host.shutdown())
            .await
            .expect("the host stops");
        let _ = tokio::time::timeout(LIMIT, self.served).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_tui_attaches_to_a_running_program_and_draws_its_present_screen() {
    let server = serve().await;
    let (url, cwd) = (server.url.clone(), server.cwd.clone());
    let owner = session(&url, &cwd).await;
    let watcher = session(&url, &cwd).await;

    // A draws a full screen and waits for a line.
    owner
        .keys
        .line(
            "!printf '\\033[2J\\033[H\\033[7m shared program \\033[0m\\033[4;3H\\033[1;31mred\\033[0m \
             \\033[32;44mgreen on blue\\033[0m\\033[6;1Hready> '; read x; \
             printf '\\033[8;1H\\033[4mgot %s\\033[0m\\033[6;8H' \"$x\"; read y",
        )
        .await;
    owner
        .tui
        .wait_for("the owner's drawing", LIMIT, |state| {
            state
                .active_pane()
                .is_some_and(|pane| pane.text().contains("ready>"))
        })
        .await
        .unwrap();
    // Back to the composer, and share the pane's process.
    owner
        .keys
        .key(KeyCode::Char('o'), KeyModifiers::CONTROL)
        .await;
    owner.keys.line("/share").await;
    owner
        .tui
        .wait_for("the attach command", LIMIT, |state| {
            state
                .transcript
                .iter()
                .any(|entry| matches!(entry, Entry::Notice(text) if text.contains("/attach ")))
        })
        .await
        .unwrap();
    let attach = owner
        .tui
        .state()
        .transcript
        .iter()
        .find_map(|entry| match entry {
            Entry::Notice(text) => text
                .split_once("with: ")
                .map(|(_, command)| command.trim_end_matches(')').to_owned()),
            _ => None,
        })
        .expect("the notice names the command");

    // B attaches: its pane shows the present screen at once, as A's pane shows it.
    watcher.keys.line(&attach).await;
    watcher
        .tui
        .wait_for("the watched screen", LIMIT, |state| {
            watched_pane(state).is_some_and(|pane| pane.text().contains("ready>"))
        })
        .await
        .unwrap();
    {
        let (owner_state, watcher_state) = (owner.tui.state(), watcher.tui.state());
        let (owned, watched) = (
            owner_state.active_pane().expect("the owner's pane"),
            watched_pane(&watcher_state).expect("the watcher's pane"),
        );
        assert_eq!(cells(watched), cells(owned), "the screen at attach");
        assert!(!watched.takes_input(), "watching is read-only");
        let frame = frame_text(&watcher_state);
        assert!(frame.contains("red green on blue"), "{frame}");
        assert!(frame.contains("watching tui-"), "{frame}");
    }

    // A types into its program; B's pane follows the live output.
    owner
        .keys
        .key(KeyCode::Char('o'), KeyModifiers::CONTROL)
        .await;
    owner.keys.line("hello").await;
    owner
        .tui
        .wait_for("the owner's answer", LIMIT, |state| {
            state.active_pane().is_some_and(|pane| {
                pane.text().contains("got hello") && pane.screen().cursor_position() == (5, 7)
            })
        })
        .await
        .unwrap();
    let owned = cells(owner.tui.state().active_pane().expect("the owner's pane"));
    watcher
        .tui
        .wait_for("the watcher to follow", LIMIT, |state| {
            watched_pane(state).is_some_and(|pane| cells(pane) == owned)
        })
        .await
        .unwrap();

    // The exit reaches the watcher's pane too.
    owner.keys.line("bye").await;
    watcher
        .tui
        .wait_for("the watched exit", LIMIT, |state| {
            watched_pane(state).is_some_and(|pane| pane.finished.as_deref() == Some("exit 0"))
        })
        .await
        .unwrap();

    owner
        .keys
        .key(KeyCode::Char('o'), KeyModifiers::CONTROL)
        .await;
    owner.quit().await;
    watcher.quit().await;
    server.stop().await;
}

fn agent_said(state: &AppState, text: &str) -> usize {
    state
        .transcript
        .iter()
        .filter(|entry| matches!(entry, Entry::Agent { text: said, .. } if said == text))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_thread_shows_the_turns_another_client_runs_live() {
    let server = serve().await;
    let other = tokio::time::timeout(LIMIT, async {
        let client = Client::start(
            Transport::WebSocket(WebSocketTarget::new(&server.url)),
            ClientOptions::new(),
        )
        .await
        .expect("client starts");
        client.connect().await.expect("client connects");
        client
    })
    .await
    .expect("connected in time");
    let thread = tokio::time::timeout(
        LIMIT,
        other.start_thread(ThreadStartParams::new().cwd(server.cwd.clone())),
    )
    .await
    .expect("in time")
    .expect("a thread")
    .thread
    .id;
    let run = |text: &'static str| {
        let (other, thread) = (other.clone(), thread.clone());
        async move {
            let turn = other
                .start_turn(TurnStartParams::text(&thread, text))
                .await
                .expect("the turn starts");
            let id = turn.id().to_owned();
            (id, turn)
        }
    };
    let (_, first) = tokio::time::timeout(LIMIT, run("first"))
        .await
        .expect("in time");
    tokio::time::timeout(LIMIT, first.wait_completed())
        .await
        .expect("in time")
        .expect("the first turn completes");

    // The TUI resumes the thread from its list.
    let viewer = session(&server.url, &server.cwd).await;
    viewer
        .keys
        .key(KeyCode::Char('t'), KeyModifiers::CONTROL)
        .await;
    viewer
        .tui
        .wait_for("the thread list", LIMIT, |state| {
            state.threads.items.first().is_some_and(|t| t.id == thread)
        })
        .await
        .unwrap();
    viewer.keys.key(KeyCode::Enter, KeyModifiers::NONE).await;
    viewer
        .tui
        .wait_for("the resumed thread", LIMIT, |state| {
            state.thread.as_ref().is_some_and(|t| t.id == thread)
                && agent_said(state, "You said: \"first\"") == 1
        })
        .await
        .unwrap();

    // Another client's turn runs: the TUI shows it running, then its answer, live.
    let (sleeping, handle) = tokio::time::timeout(LIMIT, run("/sleep 1500"))
        .await
        .expect("in time");
    viewer
        .tui
        .wait_for("the other client's turn running", LIMIT, |state| {
            state.turn.turn_id() == Some(sleeping.as_str())
        })
        .await
        .unwrap();
    tokio::time::timeout(LIMIT, handle.wait_completed())
        .await
        .expect("in time")
        .expect("the sleeping turn completes");
    viewer
        .tui
        .wait_for("the other client's turn ended", LIMIT, |state| {
            state.turn == TurnState::Idle
        })
        .await
        .unwrap();
    let (_, answered) = tokio::time::timeout(LIMIT, run("hello from elsewhere"))
        .await
        .expect("in time");
    tokio::time::timeout(LIMIT, answered.wait_completed())
        .await
        .expect("in time")
        .expect("the turn completes");
    viewer
        .tui
        .wait_for("the other client's answer", LIMIT, |state| {
            agent_said(state, "You said: \"hello from elsewhere\"") == 1
                && state.turn == TurnState::Idle
                && state.transcript.iter().any(|entry| {
                    matches!(entry, Entry::User { text, .. } if text == "hello from elsewhere")
                })
        })
        .await
        .unwrap();

    // The TUI's own turn is still its own, shown once.
    viewer.keys.line("mine").await;
    viewer
        .tui
        .wait_for("the TUI's own answer", LIMIT, |state| {
            agent_said(state, "You said: \"mine\"") == 1 && state.turn == TurnState::Idle
        })
        .await
        .unwrap();
    assert_eq!(agent_said(&viewer.tui.state(), "You said: \"mine\""), 1);

    viewer.quit().await;
    tokio::time::timeout(LIMIT, other.close())
        .await
        .expect("the client closes");
    server.stop().await;
}
