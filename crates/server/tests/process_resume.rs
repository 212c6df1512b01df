//! procre (issue 17 point 5): `process/spawn` processes outlive their connection for the grace
//! period and a new connection takes them over with `process/resume`, getting exactly what it
//! missed; past the grace they are killed; output produced while nobody is attached waits
//! (backpressure) instead of overflowing the replay window, and a cursor older than the window
//! answers an explicit gap.
//!
//! Served over two stdio sessions on pipes of one transport host, so that a connection really
//! closes (its input ends) and another opens. Real children, real time; every await that could
//! hang sits under a timeout.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::transport::{TransportHost, TransportHostOptions, stdio};
use tandem_host::{MessageProcessor, OutgoingMessageSender, ReplayWindowLimits};
use tandem_protocol::{ProcessExitedNotification, ProcessOutputDeltaNotification};
use tandem_server::{ServerOptions, TandemServer};
use tandem_test_support::{eventually, live_pids_with_env, within};
use tokio::io::{AsyncBufReadExt as _, BufReader, DuplexStream};

const LIMIT: Duration = Duration::from_secs(20);

/// The server behind a transport host, and the host's sender for the window's accounting.
struct Server {
    host: Arc<TransportHost>,
    outgoing: OutgoingMessageSender,
    _home: tempfile::TempDir,
}

impl Server {
    fn start(grace: Duration, window: ReplayWindowLimits) -> Self {
        let home = tempfile::tempdir().expect("home");
        let options = ServerOptions::new(home.path())
            .expect("absolute home")
            .with_process_detach_grace(grace);
        let (sender_tx, sender_rx) = std::sync::mpsc::channel();
        let host = TransportHost::start(
            move |outgoing: OutgoingMessageSender| {
                sender_tx.send(outgoing.clone()).expect("the test waits");
                Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>
            },
            TransportHostOptions {
                replay_window: window,
                ..TransportHostOptions::default()
            },
        );
        let outgoing = sender_rx.recv().expect("the factory ran");
        Self {
            host,
            outgoing,
            _home: home,
        }
    }

    async fn connect(&self) -> Client {
        let (reader, writer) = std::io::pipe().expect("pipe");
        let (server_side, client_side) = tokio::io::duplex(8 << 20);
        let served = {
            let host = self.host.clone();
            tokio::spawn(async move {
                stdio::serve_io(&host, reader, server_side, stdio::StdioOptions::default()).await
            })
        };
        let mut client = Client {
            input: Some(writer),
            output: BufReader::new(client_side).lines(),
            served,
            next_id: 1,
            session: String::new(),
            epoch: None,
            pending: std::collections::VecDeque::new(),
        };
        let init = client
            .call(
                "initialize",
                json!({"clientInfo": {"name": "t", "version": "1"},
                       "capabilities": {"experimentalApi": true}}),
            )
            .await
            .expect("initialize");
        client.session = init["processSession"]
            .as_str()
            .expect("the initialize result names the process session")
            .to_owned();
        client.send(&json!({"method": "initialized"}));
        client
    }

    async fn stop(self) {
        within(LIMIT, "host shutdown", self.host.shutdown()).await;
    }

    /// Waits until the replay window of `handle` of `session`, by its own accounting, meets
    /// `condition`: the explicit signal that the host has routed what the process wrote.
    async fn until_window(
        &self,
        session: &str,
        handle: &str,
        what: &str,
        condition: impl Fn(&tandem_host::ReplayWindowStats) -> bool,
    ) {
        let stream = format!("process/{session}/{handle}");
        within(LIMIT, what, async {
            loop {
                let stats = self.outgoing.replay_window_stats(&stream).await;
                if stats.as_ref().is_some_and(&condition) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
    }
}

/// One stdio connection.
struct Client {
    input: Option<std::io::PipeWriter>,
    output: tokio::io::Lines<BufReader<DuplexStream>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    next_id: i64,
    session: String,
    /// The epoch of the cursors this connection saw.
    epoch: Option<String>,
    /// Process notifications read while waiting for an answer.
    pending: std::collections::VecDeque<Seen>,
}

/// A process notification as the connection saw it.
#[derive(Debug)]
enum Seen {
    Output(ProcessOutputDeltaNotification, u64),
    Exited(ProcessExitedNotification, u64),
}

impl Client {
    fn send(&mut self, message: &Value) {
        let input = self.input.as_mut().expect("input open");
        writeln!(input, "{message}").expect("write");
        input.flush().expect("flush");
    }

    async fn next(&mut self) -> Value {
        let line = within(LIMIT, "a line from the server", self.output.next_line())
            .await
            .expect("read")
            .expect("server output open");
        let message: Value = serde_json::from_str(&line).expect("JSON lines");
        if let Some(epoch) = message["cursor"]["epoch"].as_str() {
            self.epoch = Some(epoch.to_owned());
        }
        message
    }

    /// Sends a request and returns its answer; notifications met on the way are handed to
    /// `seen`.
    async fn call_seeing(
        &mut self,
        method: &str,
        params: Value,
        seen: &mut Vec<Seen>,
    ) -> Result<Value, Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}));
        loop {
            let message = self.next().await;
            if message["id"] == json!(id) {
                return match message.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(message["result"].clone()),
                };
            }
            if let Some(note) = process_note(&message) {
                seen.push(note);
            }
        }
    }

    /// Sends a request and returns its answer; notifications met on the way are kept for
    /// [`Self::next_process_note`].
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let mut seen = Vec::new();
        let answer = self.call_seeing(method, params, &mut seen).await;
        self.pending.extend(seen);
        answer
    }

    /// The next process notification.
    async fn next_process_note(&mut self) -> Seen {
        if let Some(seen) = self.pending.pop_front() {
            return seen;
        }
        loop {
            let message = self.next().await;
            if let Some(note) = process_note(&message) {
                return note;
            }
        }
    }

    /// Ends the connection (its input closes) and waits until the server served it out.
    async fn close(mut self) {
        self.input = None;
        within(LIMIT, "the connection to end", self.served)
            .await
            .expect("join")
            .expect("served");
    }
}

fn process_note(message: &Value) -> Option<Seen> {
    let seq = message["cursor"]["seq"].as_u64();
    match message["method"].as_str()? {
        "process/outputDelta" => Some(Seen::Output(
            serde_json::from_value(message["params"].clone()).expect("delta decodes"),
            seq.expect("a process notification carries a cursor"),
        )),
        "process/exited" => Some(Seen::Exited(
            serde_json::from_value(message["params"].clone()).expect("exit decodes"),
            seq.expect("a process notification carries a cursor"),
        )),
        _ => None,
    }
}

fn spawn_params(handle: &str, script: &str, marker: &str) -> Value {
    json!({
        "processHandle": handle,
        "command": ["sh", "-c", script],
        "cwd": "/",
        "streamStdin": true,
        "streamStdoutStderr": true,
        "outputBytesCap": null,
        "timeoutMs": null,
        "env": {"PROCRE_TEST_MARKER": marker},
    })
}

fn write_params(handle: &str, bytes: &[u8], close: bool) -> Value {
    use base64::Engine as _;
    json!({
        "processHandle": handle,
        "deltaBase64": base64::engine::general_purpose::STANDARD.encode(bytes),
        "closeStdin": close,
    })
}

/// Reads process notifications until the exit; returns the stdout bytes (in order, each
/// delta's seq checked to grow) and the exit.
async fn read_to_exit(client: &mut Client, after_seq: u64) -> (Vec<u8>, ProcessExitedNotification) {
    let mut bytes = Vec::new();
    let mut last = after_seq;
    loop {
        match client.next_process_note().await {
            Seen::Output(delta, seq) => {
                assert!(
                    seq > last,
                    "seq {seq} after {last}: a duplicate or out of order"
                );
                last = seq;
                bytes.extend_from_slice(&delta.delta);
            }
            Seen::Exited(exited, seq) => {
                assert!(seq > last, "exit seq {seq} after {last}");
                return (bytes, exited);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_connections_process_keeps_running_and_a_new_connection_gets_what_it_missed() {
    let server = Server::start(Duration::from_secs(60), ReplayWindowLimits::default());
    let mut first = server.connect().await;
    first
        .call("process/spawn", spawn_params("cat", "cat", "kept"))
        .await
        .expect("spawn");
    first
        .call("process/writeStdin", write_params("cat", b"one\n", false))
        .await
        .expect("write");
    let Seen::Output(delta, seen_seq) = first.next_process_note().await else {
        panic!("output first");
    };
    assert_eq!(&delta.delta[..], b"one\n");
    // Delivered to the connection but never read by its client: lost with the connection.
    first
        .call("process/writeStdin", write_params("cat", b"two\n", false))
        .await
        .expect("write");
    let session = first.session.clone();
    let first_epoch = first.epoch.clone().expect("cursors seen");
    // The second delta is routed to the first connection (recorded in the window in the same
    // step) before it goes.
    server
        .until_window(&session, "cat", "the second delta routed", |stats| {
            stats.last_seq > seen_seq
        })
        .await;
    first.close().await;
    assert!(
        !live_pids_with_env("PROCRE_TEST_MARKER", "kept").is_empty(),
        "the process outlives its connection within the grace"
    );

    let mut second = server.connect().await;
    let mut replayed = Vec::new();
    let resumed = second
        .call_seeing(
            "process/resume",
            json!({"processSession": session, "processHandle": "cat",
                   "cursor": {"epoch": first_epoch, "seq": seen_seq}}),
            &mut replayed,
        )
        .await
        .expect("resume");
    assert_eq!(resumed["gap"], json!(false), "{resumed}");
    assert_eq!(resumed["replayed"], json!(1), "{resumed}");
    let [Seen::Output(missed, missed_seq)] = replayed.as_slice() else {
        panic!("exactly the missed delta is replayed before the answer: {replayed:?}");
    };
    assert_eq!(&missed.delta[..], b"two\n");
    // The process is this connection's now: its controls work here.
    second
        .call("process/writeStdin", write_params("cat", b"three\n", true))
        .await
        .expect("write on the new connection");
    let (rest, exited) = read_to_exit(&mut second, *missed_seq).await;
    assert_eq!(rest, b"three\n");
    assert_eq!(exited.exit_code, 0);
    // The session token of the closed connection worked once: it is the new one's now.
    let again = second
        .call(
            "process/resume",
            json!({"processSession": session, "processHandle": "cat"}),
        )
        .await;
    assert!(again.is_err(), "a taken-over session's old token is spent");
    second.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_process_is_killed_once_the_grace_is_over() {
    let grace = Duration::from_millis(300);
    let server = Server::start(grace, ReplayWindowLimits::default());
    let mut first = server.connect().await;
    first
        .call(
            "process/spawn",
            spawn_params("sleeper", "sleep 30 & sleep 30", "graced"),
        )
        .await
        .expect("spawn");
    eventually(LIMIT, "both sleeps running", || {
        live_pids_with_env("PROCRE_TEST_MARKER", "graced").len() >= 2
    })
    .await;
    let session = first.session.clone();
    first.close().await;
    // Kept within the grace...
    assert!(
        !live_pids_with_env("PROCRE_TEST_MARKER", "graced").is_empty(),
        "killed before the grace was over"
    );
    // ...and killed, with everything it started, after it.
    eventually(
        LIMIT,
        "the detached process group killed after the grace",
        || live_pids_with_env("PROCRE_TEST_MARKER", "graced").is_empty(),
    )
    .await;
    let mut second = server.connect().await;
    let error = second
        .call(
            "process/resume",
            json!({"processSession": session, "processHandle": "sleeper"}),
        )
        .await
        .expect_err("nothing left to resume");
    assert_eq!(error["code"], json!(-32600), "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("grace period"),
        "{error}"
    );
    second.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_of_a_detached_process_waits_instead_of_overflowing_the_window() {
    // A window far smaller than what the process writes while nobody is attached.
    let window = ReplayWindowLimits {
        max_events: 4096,
        max_bytes: 256 * 1024,
    };
    let total: usize = 4 << 20;
    let server = Server::start(Duration::from_secs(60), window);
    let mut first = server.connect().await;
    // Writes nothing until its stdin says so, then 4 MiB.
    let script = format!("read go; head -c {total} /dev/zero | tr '\\0' 'z'");
    first
        .call("process/spawn", spawn_params("big", &script, "big"))
        .await
        .expect("spawn");
    let session = first.session.clone();
    first
        .call("process/writeStdin", write_params("big", b"go\n", true))
        .await
        .expect("write");
    // Closed at once: nearly all of the output is written while detached. Nothing outside
    // shows the pump waiting (it holds its delta and the pipe fills), so this gives the child
    // time to run into that; the assertions below hold however long it is.
    first.close().await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut second = server.connect().await;
    let mut replayed = Vec::new();
    let resumed = second
        .call_seeing(
            "process/resume",
            json!({"processSession": session, "processHandle": "big"}),
            &mut replayed,
        )
        .await
        .expect("resume");
    assert_eq!(resumed["gap"], json!(false), "{resumed}");
    let mut bytes = Vec::new();
    let mut last = 0;
    for seen in replayed {
        let Seen::Output(delta, seq) = seen else {
            panic!("the exit cannot precede 4 MiB of output");
        };
        last = seq;
        bytes.extend_from_slice(&delta.delta);
    }
    let (rest, exited) = read_to_exit(&mut second, last).await;
    bytes.extend_from_slice(&rest);
    assert_eq!(bytes.len(), total, "every byte arrives once");
    assert!(bytes.iter().all(|byte| *byte == b'z'));
    assert_eq!(exited.exit_code, 0);
    // By the window's own accounting: bounded, and it evicted output that every connection
    // took (so only the backpressure kept the detached output whole).
    let stats = server
        .outgoing
        .replay_window_stats(&format!("process/{session}/big"))
        .await
        .expect("the finished process keeps its stream");
    assert!(
        stats.bytes <= window.max_bytes,
        "the window stays within its bound: {stats:?}"
    );
    assert!(
        stats.evicted > 0,
        "the output exceeded the window: {stats:?}"
    );
    second.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_older_than_the_window_is_an_explicit_gap() {
    let window = ReplayWindowLimits {
        max_events: 4,
        max_bytes: 1 << 20,
    };
    let server = Server::start(Duration::from_secs(60), window);
    let mut first = server.connect().await;
    first
        .call("process/spawn", spawn_params("cat", "cat", "gap"))
        .await
        .expect("spawn");
    first
        .call("process/writeStdin", write_params("cat", b"first\n", false))
        .await
        .expect("write");
    let Seen::Output(_, first_seq) = first.next_process_note().await else {
        panic!("output first");
    };
    let epoch = first.epoch.clone().expect("cursors seen");
    // More deltas than the window holds reach the connection, whose client loses them.
    let mut lost = Vec::new();
    for line in 0..8 {
        first
            .call_seeing(
                "process/writeStdin",
                write_params("cat", format!("line {line}\n").as_bytes(), false),
                &mut lost,
            )
            .await
            .expect("write");
        // One delta per line: each is routed (to the window and the connection) before the
        // next is written.
        let routed = first_seq + 1 + line;
        server
            .until_window(&first.session, "cat", "the line routed", |stats| {
                stats.last_seq >= routed
            })
            .await;
    }
    let session = first.session.clone();
    first.close().await;

    let mut second = server.connect().await;
    let resumed = second
        .call(
            "process/resume",
            json!({"processSession": session, "processHandle": "cat",
                   "cursor": {"epoch": epoch, "seq": first_seq}}),
        )
        .await
        .expect("resume");
    assert_eq!(resumed["gap"], json!(true), "{resumed}");
    assert_eq!(resumed["replayed"], json!(0), "{resumed}");
    // The stream continues live after the gap.
    second
        .call("process/writeStdin", write_params("cat", b"after\n", true))
        .await
        .expect("write");
    let from = resumed["cursor"]["seq"].as_u64().expect("a cursor");
    let (rest, exited) = read_to_exit(&mut second, from).await;
    assert_eq!(rest, b"after\n");
    assert_eq!(exited.exit_code, 0);
    second.close().await;
    server.stop().await;
}
