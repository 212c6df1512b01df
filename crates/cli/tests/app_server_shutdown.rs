//! Shutdown of `tandem app-server` over stdio (issue 8, acceptance 3): stdin EOF, SIGTERM with
//! stdin still open, and SIGINT, each while a streamed child process (`sleep 600`, in its own
//! process group) and a turn (running `/sh sleep 600` of the scripted agent) are running. The
//! binary exits 0 within 5 s, no process group it started survives it, and the turn completed
//! before the shutdown is on disk for the next server.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::PROMPT;
use common::client::Client;
use common::server::{AppServer, Launch};
use nix::sys::signal::Signal;
use serde_json::{Value, json};

/// The process group of `pid`, from `/proc/PID/stat`.
fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; fields after it are plain.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Live (non-zombie) processes in any of `groups`.
fn live_in_groups(groups: &BTreeSet<u32>) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let group = fields.nth(1).and_then(|group| group.parse::<u32>().ok());
            state != Some("Z") && group.is_some_and(|group| groups.contains(&group))
        })
        .collect()
}

/// `tandem app-server` over stdio, initialized, running a streamed `sleep 600` it started
/// with `process/spawn` (request id 1).
async fn server_with_a_sleeper(launch: Launch) -> (AppServer, Client) {
    let (server, client) = launch.args(["app-server"]).stdio();
    let mut client = Client::Stdio(client);
    client.initialize(true).await;
    let spawned = client
        .ok(
            1,
            "process/spawn",
            json!({
                "processHandle": "sleeper",
                "command": ["sleep", "600"],
                "cwd": std::env::temp_dir(),
                "streamStdoutStderr": true,
                "timeoutMs": null,
            }),
        )
        .await;
    assert_eq!(spawned, json!({}));
    (server, client)
}

/// A server with a completed turn behind it and, running: a streamed `sleep 600` started with
/// `process/spawn`, and a second turn whose command is `sleep 600`. Returns the server, its
/// client, the thread id, and the process groups of everything the server started.
async fn busy_server(test: &str) -> (AppServer, Client, String, BTreeSet<u32>) {
    let (server, mut client) = server_with_a_sleeper(Launch::new(test)).await;

    let started = client
        .ok(2, "thread/start", json!({"approvalPolicy": "never"}))
        .await;
    let thread_id = started["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned();
    let input = |text: &str| json!([{"type": "text", "text": text}]);
    client
        .ok(
            3,
            "turn/start",
            json!({"threadId": thread_id, "input": input("finish this one")}),
        )
        .await;
    let completed = client
        .notification("turn/completed", |params| params["threadId"] == thread_id)
        .await;
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    client
        .ok(
            4,
            "turn/start",
            json!({"threadId": thread_id, "input": input("/sh sleep 600")}),
        )
        .await;
    client
        .notification("item/started", |params| {
            params["item"]["type"] == "commandExecution"
        })
        .await;
    // The spawned sleep, and the turn's shell (with its sleep, unless the shell became it).
    let deadline = Instant::now() + PROMPT;
    let children = loop {
        let children = server.live_children();
        let sleeps = children
            .iter()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|cmdline| cmdline.starts_with("sleep\x00600"))
            })
            .count();
        if sleeps >= 2 {
            break children;
        }
        assert!(
            Instant::now() < deadline,
            "the two sleeps never ran: {children:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let groups: BTreeSet<u32> = children
        .iter()
        .filter_map(|pid| process_group(*pid))
        .collect();
    // Each child leads a group of its own, apart from the server's.
    assert!(!groups.contains(&server.pid), "{groups:?}");
    assert!(groups.len() >= 2, "two process groups: {groups:?}");
    (server, client, thread_id, groups)
}

/// The binary exited cleanly in time (checked by `finish`): the process groups are gone too,
/// and a new server on the same home reads the completed turn.
async fn assert_shut_down_cleanly(
    server: AppServer,
    since: Instant,
    thread_id: &str,
    groups: &BTreeSet<u32>,
) {
    let home = server.home.clone();
    let exited = server.finish(since).await;
    eprintln!("exited {:?} after the request to stop", exited.elapsed);
    assert!(
        live_in_groups(groups).is_empty(),
        "processes left in {groups:?}"
    );

    let (restarted, client) = Launch::new("restarted")
        .args(["app-server"])
        .home(home)
        .stdio();
    let mut client = Client::Stdio(client);
    client.initialize(false).await;
    let read = client
        .ok(
            1,
            "thread/read",
            json!({"threadId": thread_id, "includeTurns": true}),
        )
        .await;
    let turns = read["thread"]["turns"].as_array().expect("turns");
    let first = turns.first().unwrap_or_else(|| panic!("no turns: {read}"));
    assert_eq!(first["status"], "completed", "{first}");
    let said: Vec<&Value> = first["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|item| item["type"] == "agentMessage")
        .collect();
    assert_eq!(said.len(), 1, "{first}");
    assert_eq!(said[0]["text"], "You said: \"finish this one\"");
    let since = Instant::now();
    let _stdout = client.into_stdio().close_stdin();
    restarted.finish(since).await;
}

#[tokio::test]
async fn stdin_eof_with_a_process_and_a_turn_running() {
    let (server, client, thread_id, groups) = busy_server("shutdown_eof").await;
    let since = Instant::now();
    let _stdout = client.into_stdio().close_stdin();
    assert_shut_down_cleanly(server, since, &thread_id, &groups).await;
}

#[tokio::test]
async fn sigterm_with_stdin_open() {
    let (server, client, thread_id, groups) = busy_server("shutdown_sigterm").await;
    let since = Instant::now();
    server.signal(Signal::SIGTERM);
    // `client` keeps stdin open until the checks are done.
    assert_shut_down_cleanly(server, since, &thread_id, &groups).await;
    drop(client);
}

#[tokio::test]
async fn sigint_with_stdin_open() {
    let (server, client, thread_id, groups) = busy_server("shutdown_sigint").await;
    let since = Instant::now();
    server.signal(Signal::SIGINT);
    assert_shut_down_cleanly(server, since, &thread_id, &groups).await;
    drop(client);
}

/// A shutdown that can never finish (a debug build's fault point blocks every runtime worker
/// once the shutdown begins, as a deadlock of std mutexes did): no stage timeout can fire, yet
/// tandem reports where its threads are stuck and exits with 70 at its 8 s deadline, not
/// earlier, and the process it had started does not outlive it (its watchdog kills it).
#[tokio::test]
async fn a_shutdown_that_never_finishes_is_reported_and_ended_at_its_deadline() {
    let (server, client) = server_with_a_sleeper(
        Launch::new("shutdown_wedged").env("TANDEM_FAULT_WEDGE_SHUTDOWN", "1"),
    )
    .await;
    let marker = server.marker.clone();
    let since = Instant::now();
    server.signal(Signal::SIGTERM);
    let exited = server.wait_exit(since, Duration::from_secs(30)).await;
    assert_eq!(exited.status.code(), Some(70), "{}", exited.stderr);
    assert!(
        exited.elapsed >= Duration::from_secs(8),
        "the deadline fired early, after {:?}",
        exited.elapsed
    );
    assert!(
        exited
            .stderr
            .contains("tandem app-server: the shutdown did not finish within 8s"),
        "{}",
        exited.stderr
    );
    // The report says where the workers are held.
    assert!(
        exited
            .stderr
            .contains("tokio-rt-worker: S (hrtimer_nanosleep)"),
        "{}",
        exited.stderr
    );
    exited.assert_no_panic();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = tandem_test_support::live_pids_with_env(common::server::MARKER_VAR, &marker);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "processes outlived the server: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(client);
}
