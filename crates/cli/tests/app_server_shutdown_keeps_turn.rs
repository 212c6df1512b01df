//! Issue 13, point 4: a shutdown that waits for the store. For each way a session ends (stdin
//! EOF, SIGTERM, SIGINT, SIGHUP), repeatedly: a server on a fresh home runs a turn that sleeps
//! (`/sleep 60000` of the scripted agent); once `turn/started` has arrived the session is
//! ended; the binary exits 0 within the shutdown limit leaving nothing running; and a server
//! restarted on the same home reads the turn back, `interrupted`. Every repetition must keep
//! the turn: losing it once in twenty is the bug this guards against.
//!
//! `TANDEM_SHUTDOWN_REPETITIONS` changes the count (default 20).

mod common;

use std::time::Instant;

use common::client::Client;
use common::server::Launch;
use nix::sys::signal::Signal;
use serde_json::{Value, json};

/// How one session is ended.
#[derive(Debug, Clone, Copy)]
enum End {
    StdinEof,
    Signal(Signal),
}

fn repetitions() -> usize {
    std::env::var("TANDEM_SHUTDOWN_REPETITIONS")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(20)
}

/// One repetition; panics with the repetition's number and what was read back if the turn
/// was not kept.
async fn keeps_the_interrupted_turn(test: &str, end: End, repetition: usize) {
    let (server, client) = Launch::new(test).args(["app-server"]).stdio();
    let mut client = Client::Stdio(client);
    client.initialize(false).await;
    let started = client
        .ok(1, "thread/start", json!({"approvalPolicy": "never"}))
        .await;
    let thread_id = started["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned();
    let turn = client
        .ok(
            2,
            "turn/start",
            json!({
                "threadId": thread_id,
                "input": [{"type": "text", "text": "/sleep 60000"}],
            }),
        )
        .await;
    let turn_id = turn["turn"]["id"].as_str().expect("turn id").to_owned();
    client
        .notification("turn/started", |params| params["turn"]["id"] == turn_id)
        .await;

    let since = Instant::now();
    let home = server.home.clone();
    let exited = match end {
        End::StdinEof => {
            let _stdout = client.into_stdio().close_stdin();
            server.finish(since).await
        }
        End::Signal(signal) => {
            server.signal(signal);
            // Stdin stays open until the server is gone: only the signal ends the session.
            let exited = server.finish(since).await;
            drop(client);
            exited
        }
    };
    eprintln!("{end:?} #{repetition}: exited after {:?}", exited.elapsed);

    let (restarted, client) = Launch::new(&format!("{test}-restarted"))
        .args(["app-server"])
        .home(home)
        .stdio();
    let mut client = Client::Stdio(client);
    client.initialize(false).await;
    let read = client
        .call(
            1,
            "thread/read",
            json!({"threadId": thread_id, "includeTurns": true}),
        )
        .await;
    let kept: Option<&Value> = read["result"]["thread"]["turns"]
        .as_array()
        .and_then(|turns| turns.iter().find(|turn| turn["id"] == turn_id));
    let Some(kept) = kept else {
        panic!("{end:?} #{repetition}: the turn {turn_id} was lost; thread/read gave {read}");
    };
    assert_eq!(
        kept["status"], "interrupted",
        "{end:?} #{repetition}: the turn was kept as {kept}"
    );
    let since = Instant::now();
    let _stdout = client.into_stdio().close_stdin();
    restarted.finish(since).await;
}

async fn every_repetition_keeps_the_turn(test: &str, end: End) {
    for repetition in 1..=repetitions() {
        keeps_the_interrupted_turn(test, end, repetition).await;
    }
}

#[tokio::test]
async fn stdin_eof_keeps_the_interrupted_turn() {
    every_repetition_keeps_the_turn("keep_turn_eof", End::StdinEof).await;
}

#[tokio::test]
async fn sigterm_keeps_the_interrupted_turn() {
    every_repetition_keeps_the_turn("keep_turn_sigterm", End::Signal(Signal::SIGTERM)).await;
}

#[tokio::test]
async fn sigint_keeps_the_interrupted_turn() {
    every_repetition_keeps_the_turn("keep_turn_sigint", End::Signal(Signal::SIGINT)).await;
}

#[tokio::test]
async fn sighup_keeps_the_interrupted_turn() {
    every_repetition_keeps_the_turn("keep_turn_sighup", End::Signal(Signal::SIGHUP)).await;
}
