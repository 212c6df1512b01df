//! attach19 (issue 19, "Attach late, see the screen, not the log"), against the real
//! `tandem app-server` over websocket with two tandem-client clients: client A spawns a PTY
//! process running a full-screen program and renders its output through its own terminal
//! emulator (the TUI's pane); client B attaches late with A's `process/share` token and gets
//! the present screen, cell for cell (text and attributes) what A's emulator shows; then both
//! follow the live output and still agree. Who may attach: a wrong token, and the owner itself,
//! are refused; the watcher cannot type into the process.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::PROMPT;
use common::server::Launch;
use tandem_client::{
    AttachedProcess, Client, ClientOptions, Overflow, ProcessEvent, ProcessHandle, Transport,
    WebSocketTarget,
};
use tandem_protocol::{
    ProcessAttachParams, ProcessScreenResponse, ProcessSpawnParams, ProcessWriteStdinParams,
};
use tandem_tui::{PaneSource, TermPane};
use tokio::sync::watch;

const ROWS: u16 = 16;
const COLS: u16 = 60;

/// A full-screen program: the alternate screen, a reverse-video title bar, colours, a
/// progress line redrawn in place, a prompt; after a line of input more drawing, then it waits
/// for `q` to exit.
const PROGRAM: &str = r#"
printf '\033[?1049h\033[2J\033[H'
printf '\033[1;1H\033[7m%-60s\033[0m' ' late attach: the screen, not the log'
printf '\033[3;5H\033[1;31mred and bold\033[0m'
printf '\033[5;10H\033[32;44mgreen on blue\033[0m \033[3;4mitalic underlined\033[0m'
i=0
while [ $i -le 40 ]; do
  printf '\033[7;1H\033[33mprogress %3d%%\033[0m' $((i * 100 / 40))
  i=$((i + 1))
done
printf '\033[16;1H\033[36mstatus: waiting\033[0m'
printf '\033[10;1Hready> '
read line
printf '\033[12;3H\033[4mgot: %s\033[0m' "$line"
printf '\033[16;1H\033[K\033[35mstatus: done\033[0m\033[10;8H'
read quit
printf '\033[?1049l'
"#;

/// The owner shares `handle` and the watcher attaches with the token, losslessly.
async fn share_and_attach(owner: &Client, watcher: &Client, handle: &str) -> AttachedProcess {
    let token = within("process/share", owner.share_process(handle))
        .await
        .expect("the owner shares its process");
    within(
        "process/attach",
        watcher.attach_process(
            ProcessAttachParams::new(handle, &token),
            Some(64),
            Overflow::Lossless,
        ),
    )
    .await
    .expect("the watcher attaches")
}

/// `client` attaches to `handle` with `token` and is refused; the refusal's text.
async fn refused_attach(client: &Client, handle: &str, token: &str, why: &str) -> String {
    within(
        why,
        client.attach_process(
            ProcessAttachParams::new(handle, token),
            None,
            Overflow::Lossless,
        ),
    )
    .await
    .map(|_| ())
    .expect_err(why)
    .to_string()
}

/// A terminal pane fed by a process's events, shared with the test.
struct Follower {
    pane: Arc<Mutex<TermPane>>,
    /// Bytes fed, and the exit code once the process exited.
    progress: watch::Receiver<(u64, Option<i32>)>,
}

impl Follower {
    /// The owner's side: spawns `program` under a `ROWS`x`COLS` PTY in `cwd` and follows it
    /// with a pane of that size.
    async fn spawn_owned(owner: &Client, handle: &str, program: &str, cwd: String) -> Self {
        let params = ProcessSpawnParams::new(handle, ["sh", "-c", program], cwd)
            .tty()
            .stream_stdin()
            .streaming()
            .size(ROWS, COLS)
            .unlimited_output()
            .no_timeout();
        let process = within(
            "process/spawn",
            owner.spawn_process_with(params, Some(64), Overflow::Lossless),
        )
        .await
        .expect("the program starts");
        let source = PaneSource::Process {
            handle: handle.into(),
        };
        Self::start(TermPane::new("owner", source, ROWS, COLS, 0), process)
    }

    /// The watcher's side: a pane of the attach's screen size that draws the screen first.
    fn watcher_pane(handle: &str, screen: &ProcessScreenResponse) -> TermPane {
        let source = PaneSource::Process {
            handle: handle.into(),
        };
        let mut pane = TermPane::new("watcher", source, screen.size.rows, screen.size.cols, 0);
        pane.feed(screen.formatted.as_bytes());
        pane
    }

    fn start(pane: TermPane, mut process: ProcessHandle) -> Self {
        let pane = Arc::new(Mutex::new(pane));
        let fed = pane.lock().unwrap().bytes_fed();
        let (progress_tx, progress) = watch::channel((fed, None));
        let feeding = Arc::clone(&pane);
        tokio::spawn(async move {
            while let Some(event) = process.next_event().await {
                match event.expect("no output is lost") {
                    ProcessEvent::Output { bytes, .. } => {
                        let mut pane = feeding.lock().unwrap();
                        pane.feed(&bytes);
                        let fed = pane.bytes_fed();
                        progress_tx.send_modify(|progress| progress.0 = fed);
                    }
                    ProcessEvent::Exited(exited) => {
                        progress_tx.send_modify(|progress| progress.1 = Some(exited.exit_code));
                    }
                    ProcessEvent::Gap => panic!("no reconnect happens here"),
                }
            }
        });
        Self { pane, progress }
    }

    async fn wait(&self, what: &str, ready: impl Fn(&TermPane, &(u64, Option<i32>)) -> bool) {
        let mut progress = self.progress.clone();
        let waiting = async {
            loop {
                let now = *progress.borrow_and_update();
                if ready(&self.pane.lock().unwrap(), &now) {
                    return;
                }
                progress.changed().await.expect("the follower runs");
            }
        };
        tokio::time::timeout(PROMPT, waiting)
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "timed out waiting for {what}; the pane shows:\n{}",
                    self.pane.lock().unwrap().text()
                )
            });
    }
}

/// Asserts that two panes show the same screen: every cell's text and attributes, and the
/// cursor.
fn assert_same_screen(owner: &TermPane, watcher: &TermPane, when: &str) {
    assert_eq!(owner.size(), watcher.size(), "{when}: sizes");
    let (a, b) = (owner.screen(), watcher.screen());
    let (rows, cols) = owner.size();
    for row in 0..rows {
        for col in 0..cols {
            let (x, y) = (a.cell(row, col).unwrap(), b.cell(row, col).unwrap());
            // A macro: the cell type is vt100's, which this crate does not name.
            macro_rules! describe {
                ($cell:expr) => {
                    format!(
                        "{:?} fg {:?} bg {:?} bold {} italic {} underline {} inverse {}",
                        $cell.contents(),
                        $cell.fgcolor(),
                        $cell.bgcolor(),
                        $cell.bold(),
                        $cell.italic(),
                        $cell.underline(),
                        $cell.inverse()
                    )
                };
            }
            assert_eq!(
                describe!(x),
                describe!(y),
                "{when}: cell ({row}, {col}) differs; owner:\n{}\nwatcher:\n{}",
                owner.text(),
                watcher.text()
            );
        }
    }
    assert_eq!(
        a.cursor_position(),
        b.cursor_position(),
        "{when}: cursor position"
    );
}

async fn connect(url: &str) -> Client {
    tokio::time::timeout(PROMPT, async {
        let client = Client::start(
            Transport::WebSocket(WebSocketTarget::new(url)),
            ClientOptions::new().experimental_api(true),
        )
        .await
        .expect("the client starts");
        client.connect().await.expect("the client connects");
        client
    })
    .await
    .expect("connected in time")
}

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PROMPT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_client_gets_the_screen_the_owner_shows_then_follows_it() {
    let (server, address) = Launch::new("late-attach")
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .websocket()
        .await;
    let url = format!("ws://{address}");
    let owner = connect(&url).await;
    let watcher = connect(&url).await;
    let stranger = connect(&url).await;

    let handle = "fullscreen";
    let cwd = std::env::temp_dir().display().to_string();
    let owner_view = Follower::spawn_owned(&owner, handle, PROGRAM, cwd).await;
    owner_view
        .wait("the program's prompt, everything drawn", |pane, _| {
            pane.text().contains("ready>")
                && pane.text().contains("status: waiting")
                && pane.screen().cursor_position() == (9, 7)
        })
        .await;

    // Who may watch: only a holder of the owner's token for this process.
    let token = within("process/share", owner.share_process(handle))
        .await
        .expect("the owner shares its process");
    let again = within("process/share again", owner.share_process(handle))
        .await
        .expect("sharing again answers");
    assert_eq!(token, again, "one token per run");
    let wrong = "0123456789abcdef0123456789abcdef";
    let refused = refused_attach(&stranger, handle, wrong, "a wrong token is refused").await;
    assert!(refused.contains("no shared process"), "{refused}");
    let own = refused_attach(&owner, handle, &token, "the owner has it already").await;
    assert!(own.contains("this connection's own"), "{own}");

    // The late attach: the present screen at once.
    let attached = within(
        "process/attach",
        watcher.attach_process(
            ProcessAttachParams::new(handle, &token),
            Some(64),
            Overflow::Lossless,
        ),
    )
    .await
    .expect("the watcher attaches");
    let screen = attached.screen;
    assert_eq!(
        (screen.size.rows, screen.size.cols),
        (ROWS, COLS),
        "the PTY's size"
    );
    assert!(screen.text.contains("red and bold"), "{}", screen.text);
    assert!(screen.text.contains("progress 100%"), "{}", screen.text);
    let watcher_pane = Follower::watcher_pane(handle, &screen);
    // The program waits for input, and the owner's emulator took in all it drew: the screen
    // reflects exactly that.
    assert_eq!(
        owner_view.pane.lock().unwrap().bytes_fed(),
        screen.output_bytes
    );
    assert_same_screen(&owner_view.pane.lock().unwrap(), &watcher_pane, "at attach");

    // Then the live output, on both: the watcher applies it on top of the screen.
    let watcher_view = Follower::start(watcher_pane, attached.process);
    let typed = watcher
        .write_stdin(ProcessWriteStdinParams::bytes(handle, &b"intruder\n"[..]))
        .await;
    assert!(typed.is_err(), "a watcher cannot type into the process");
    within(
        "typing a line",
        owner.write_stdin(ProcessWriteStdinParams::bytes(handle, &b"hello\n"[..])),
    )
    .await
    .expect("the owner types");
    owner_view
        .wait(
            "the owner's screen after the input, everything drawn",
            |pane, _| {
                pane.text().contains("status: done") && pane.screen().cursor_position() == (9, 7)
            },
        )
        .await;
    let owner_bytes = owner_view.pane.lock().unwrap().bytes_fed();
    watcher_view
        .wait("the watcher to follow the same output", |_, (fed, _)| {
            *fed - screen.formatted.len() as u64 + screen.output_bytes == owner_bytes
        })
        .await;
    {
        let (owner_pane, watcher_pane) = (
            owner_view.pane.lock().unwrap(),
            watcher_view.pane.lock().unwrap(),
        );
        assert!(
            watcher_pane.text().contains("got: hello"),
            "{}",
            watcher_pane.text()
        );
        assert!(!watcher_pane.text().contains("intruder"));
        assert_same_screen(&owner_pane, &watcher_pane, "after live output");
    }

    // The exit reaches both.
    within(
        "quitting",
        owner.write_stdin(ProcessWriteStdinParams::bytes(handle, &b"q\n"[..])),
    )
    .await
    .expect("the owner types");
    owner_view
        .wait("the owner to see the exit", |_, (_, exit)| *exit == Some(0))
        .await;
    watcher_view
        .wait("the watcher to see the exit", |_, (_, exit)| {
            *exit == Some(0)
        })
        .await;
    let late = refused_attach(&stranger, handle, &token, "the token dies with the run").await;
    assert!(late.contains("no shared process"), "{late}");

    for client in [owner, watcher, stranger] {
        within("closing a client", client.close()).await;
    }
    server.terminate().await;
}

/// The screen and the live output meet exactly even while the program floods: the watcher
/// attaches mid-flood, and once the flood stops it has taken in exactly the owner's bytes
/// (the screen's plus the deltas after it: none twice, none missing) and shows the same
/// screen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attaching_during_a_flood_misses_nothing_and_repeats_nothing() {
    let (server, address) = Launch::new("late-attach-flood")
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .websocket()
        .await;
    let url = format!("ws://{address}");
    let owner = connect(&url).await;
    let watcher = connect(&url).await;
    let dir = tempfile_dir("late-attach-flood");
    let handle = "flood";
    let program = "i=0; while [ ! -e stop ]; do i=$((i + 1)); \
                   printf '\\033[33mline\\033[0m %d \\033[1mof the flood\\033[0m\\n' $i; done; \
                   printf 'stopped after %d\\n' $i; read quit";
    let owner_view =
        Follower::spawn_owned(&owner, handle, program, dir.display().to_string()).await;
    owner_view
        .wait("the flood under way", |_, (fed, _)| *fed > 64 * 1024)
        .await;

    let attached = share_and_attach(&owner, &watcher, handle).await;
    let screen = attached.screen;
    assert!(screen.text.contains("of the flood"), "{}", screen.text);
    let watcher_pane = Follower::watcher_pane(handle, &screen);
    let drawn = watcher_pane.bytes_fed();
    let watcher_view = Follower::start(watcher_pane, attached.process);
    // More flood after the attach, then stop it.
    watcher_view
        .wait("live output after the screen", |_, (fed, _)| {
            *fed > drawn + 64 * 1024
        })
        .await;
    std::fs::write(dir.join("stop"), b"").expect("the stop file");
    owner_view
        .wait("the flood's end", |pane, _| {
            pane.text().contains("stopped after")
        })
        .await;
    // The program waits for input now: the owner has read all it wrote once the server's
    // screen reflects no more than the owner's bytes.
    let total = within("the owner's screen settles", async {
        loop {
            let server_screen = owner
                .process_screen(handle)
                .await
                .expect("process/screen answers");
            let owner_bytes = owner_view.pane.lock().unwrap().bytes_fed();
            if server_screen.output_bytes == owner_bytes {
                return owner_bytes;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    watcher_view
        .wait("the watcher to take in the same bytes", |_, (fed, _)| {
            *fed - drawn + screen.output_bytes >= total
        })
        .await;
    let watcher_bytes = watcher_view.pane.lock().unwrap().bytes_fed() - drawn + screen.output_bytes;
    assert_eq!(
        watcher_bytes, total,
        "the screen's bytes plus the deltas after it are the owner's bytes, no more, no less"
    );
    assert_same_screen(
        &owner_view.pane.lock().unwrap(),
        &watcher_view.pane.lock().unwrap(),
        "after the flood",
    );

    within(
        "quitting",
        owner.write_stdin(ProcessWriteStdinParams::bytes(handle, &b"q\n"[..])),
    )
    .await
    .expect("the owner types");
    watcher_view
        .wait("the watcher to see the exit", |_, (_, exit)| {
            *exit == Some(0)
        })
        .await;
    for client in [owner, watcher] {
        within("closing a client", client.close()).await;
    }
    server.terminate().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh directory of its own under the target's temporary directory.
fn tempfile_dir(test: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// A watcher is told when the process ends because its owner never came back: past the
/// detach grace the process is killed and the watcher gets its `process/exited` (137).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_learns_the_end_of_a_process_whose_owner_never_came_back() {
    let (server, address) = Launch::new("late-attach-orphan")
        .args([
            "app-server",
            "--listen",
            "ws://127.0.0.1:0",
            "--process-detach-grace-secs",
            "1",
        ])
        .websocket()
        .await;
    let url = format!("ws://{address}");
    let owner = connect(&url).await;
    let watcher = connect(&url).await;
    let handle = "orphan";
    let cwd = std::env::temp_dir().display().to_string();
    let program = "printf '\\033[2J\\033[Hwaiting for an owner'; read x";
    let owner_view = Follower::spawn_owned(&owner, handle, program, cwd).await;
    owner_view
        .wait("the drawing", |pane, _| {
            pane.text().contains("waiting for an owner")
        })
        .await;
    let attached = share_and_attach(&owner, &watcher, handle).await;
    assert!(attached.screen.text.contains("waiting for an owner"));
    let watcher_pane = Follower::watcher_pane(handle, &attached.screen);
    let watcher_view = Follower::start(watcher_pane, attached.process);

    // The owner goes away for good; past the grace the process is killed.
    within("closing the owner", owner.close()).await;
    watcher_view
        .wait("the watcher to see the process killed", |_, (_, exit)| {
            *exit == Some(137)
        })
        .await;
    within("closing the watcher", watcher.close()).await;
    server.terminate().await;
}
