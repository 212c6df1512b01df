//! `tandem app-server` launched with a stderr that nobody reads (a client that pipes it and
//! never drains it), with logs on: the server keeps answering, the log lines past its bounded
//! queue are dropped instead of blocking its workers, and once stderr is read again it says
//! how many it dropped.

mod stalled;

use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(30);

#[test]
fn a_stderr_nobody_reads_never_stalls_the_server() {
    let home = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tandem-stderr-{}", std::process::id()));
    let (reader, writer) = stalled::full_pipe();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args(["app-server"])
        .env("TANDEM_HOME", &home)
        .env("TANDEM_LOG", "debug,tandem::wire=trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(writer))
        .spawn()
        .expect("tandem starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (lines_tx, lines) = mpsc::channel::<Value>();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let Ok(message) = serde_json::from_str(&line) else {
                continue;
            };
            if lines_tx.send(message).is_err() {
                return;
            }
        }
    });
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").expect("request written");
    };
    let answer = |id: u64| loop {
        let message = lines.recv_timeout(DEADLINE).unwrap_or_else(|_| {
            panic!("no answer to request {id} within {DEADLINE:?}: the server stalled")
        });
        if message["id"] == id {
            break message;
        }
    };
    send(
        json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}}),
    );
    assert!(answer(1)["result"].is_object());
    send(json!({"method": "initialized"}));
    // Every message in and out is a log line (the wire trace): 32 requests of 64 KiB each,
    // which the server refuses (-32601), log twice what the log queue holds (1 MiB), on top
    // of a pipe that takes nothing.
    let pad = "x".repeat(64 * 1024);
    for id in 2..34u64 {
        send(json!({"id": id, "method": "tandem/no-such-method", "params": {"pad": pad}}));
        assert_eq!(answer(id)["error"]["code"], -32601);
    }
    send(json!({"id": 34, "method": "thread/start", "params": {}}));
    let started = answer(34);
    assert!(started["result"]["thread"]["id"].is_string(), "{started}");
    // Stderr read again: the next lines say how many were dropped.
    rustix::fs::fcntl_setfl(&reader, rustix::fs::OFlags::NONBLOCK).expect("non-blocking");
    let mut drained = std::fs::File::from(reader);
    let mut sink = vec![0u8; 1 << 20];
    // Everything read from here on (the filler first) is searched for the notice: a line that
    // was waiting may get through, with the notice, while the pipe is being drained.
    let mut logged = Vec::new();
    while let Ok(n @ 1..) = drained.read(&mut sink) {
        logged.extend_from_slice(&sink[..n]);
    }
    send(json!({"id": 40, "method": "thread/start", "params": {}}));
    answer(40);
    let deadline = std::time::Instant::now() + DEADLINE;
    while !String::from_utf8_lossy(&logged).contains("log line(s) dropped") {
        assert!(
            std::time::Instant::now() < deadline,
            "no notice of the dropped lines: {}",
            String::from_utf8_lossy(&logged)
        );
        match drained.read(&mut sink) {
            Ok(n) => logged.extend_from_slice(&sink[..n]),
            Err(_) => thread::sleep(Duration::from_millis(20)),
        }
    }
    drop(stdin);
    let _ = child.wait();
}
