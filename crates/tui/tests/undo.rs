//! undo29 (issue 29, point 9): `/undo` in the TUI, headless as in `headless.rs`: a patch sent
//! through the composer (Alt-Enter between its lines) adds a file and changes another; `/undo`
//! drops the turn from the transcript, puts both files back and says so; a second `/undo`
//! finds nothing to undo.

use std::io;
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use futures::StreamExt as _;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tandem_client::{Client, ClientOptions, Transport};
use tandem_server::ServerOptions;
use tandem_tui::state::{Entry, TurnState};
use tandem_tui::{Tui, TuiOptions};
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(30);

async fn key(keys: &mpsc::Sender<io::Result<Event>>, code: KeyCode, modifiers: KeyModifiers) {
    keys.send(Ok(Event::Key(KeyEvent::new(code, modifiers))))
        .await
        .expect("the app reads keys");
}

/// Types `lines` as one message (Alt-Enter between them) and sends it.
async fn send(keys: &mpsc::Sender<io::Result<Event>>, lines: &[&str]) {
    for (index, line) in lines.iter().enumerate() {
        if index > 0 {
            key(keys, KeyCode::Enter, KeyModifiers::ALT).await;
        }
        for c in line.chars() {
            key(keys, KeyCode::Char(c), KeyModifiers::NONE).await;
        }
    }
    key(keys, KeyCode::Enter, KeyModifiers::NONE).await;
}

fn notices(tui: &Tui) -> Vec<String> {
    tui.state()
        .transcript
        .iter()
        .filter_map(|entry| match entry {
            Entry::Notice(text) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_restores_the_last_turns_files_and_drops_it() {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp home");
    let cwd = std::fs::canonicalize(home.path()).expect("canonical");
    std::fs::write(cwd.join("kept.txt"), "before\n").unwrap();
    let mut server = ServerOptions::new(home.path()).expect("server options");
    // In-process without the helper binary the sandbox cannot be applied; with no sandbox
    // every path may be restored.
    server.config.sandbox = tandem_protocol::SandboxPolicy::DangerFullAccess;
    let client = Client::start(Transport::InProcess(server), ClientOptions::new())
        .await
        .expect("client starts");
    let tui = Tui::new(
        client.clone(),
        TuiOptions::new("in-process", cwd.to_str().expect("utf-8")),
    );
    let (keys, receiver) = mpsc::channel(64);
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

    send(
        &keys,
        &[
            "/patch",
            "*** Begin Patch",
            "*** Add File: made.txt",
            "+made",
            "*** Update File: kept.txt",
            "@@",
            "-before",
            "+after",
            "*** End Patch",
        ],
    )
    .await;
    tui.wait_for("the patch turn", LIMIT, |state| {
        state.turn == TurnState::Idle
            && state.transcript.iter().any(
                |entry| matches!(entry, Entry::Agent { text, .. } if text.starts_with("patch: ")),
            )
    })
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(cwd.join("kept.txt")).unwrap(),
        "after\n"
    );
    assert!(cwd.join("made.txt").exists());

    send(&keys, &["/undo"]).await;
    tui.wait_for("the undo's report", LIMIT, |state| {
        state
            .transcript
            .iter()
            .any(|entry| matches!(entry, Entry::Notice(text) if text.starts_with("restored")))
    })
    .await
    .unwrap();
    let at = |name: &str| cwd.join(name).display().to_string();
    let shown = notices(&tui);
    assert!(
        shown.contains(&"(the last turn is undone)".to_owned()),
        "{shown:?}"
    );
    assert!(
        shown.contains(&format!("restored {}", at("kept.txt"))),
        "{shown:?}"
    );
    assert!(
        shown.contains(&format!("restored {}", at("made.txt"))),
        "{shown:?}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("kept.txt")).unwrap(),
        "before\n"
    );
    assert!(!cwd.join("made.txt").exists());
    // The turn is gone from the transcript.
    assert!(
        !tui.state()
            .transcript
            .iter()
            .any(|entry| matches!(entry, Entry::Agent { .. })),
        "{:?}",
        tui.state().transcript
    );

    send(&keys, &["/undo"]).await;
    tui.wait_for("nothing left to undo", LIMIT, |state| {
        state
            .transcript
            .iter()
            .any(|entry| matches!(entry, Entry::Notice(text) if text == "(no turn to undo)"))
    })
    .await
    .unwrap();

    key(&keys, KeyCode::Char('d'), KeyModifiers::CONTROL).await;
    tokio::time::timeout(LIMIT, app)
        .await
        .expect("the app quits")
        .expect("the app task")
        .expect("the app ran");
    tokio::time::timeout(LIMIT, client.close())
        .await
        .expect("the client closes");
}
