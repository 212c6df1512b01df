//! The daemon and its proxies with the real binary (issue 32, points 2 and 3): `tandem
//! app-server daemon start|status|stop`, a proxy starting the daemon when none runs, two
//! line-mode proxies (stdio JSON clients) and a websocket-over-proxy client sharing one daemon
//! and seeing each other's threads, a daemon killed with -9 replaced, a home too long for a
//! socket address, a second server on the daemon's socket refused, the idle exit, and both
//! proxies exiting with a message when their daemon goes away (stopped or killed), but quietly
//! when their client closes, and blaming the client when it stops reading.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use common::client::{Client, StdioClient};
use common::server::fresh_home;
use common::{PROMPT, within};
use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio_tungstenite::tungstenite::Message;

/// A home whose daemon is stopped when the test ends, however it ends.
struct Home {
    path: PathBuf,
}

impl Home {
    fn new(test: &str) -> Self {
        let path = fresh_home(test);
        std::fs::create_dir_all(&path).expect("a home");
        Self { path }
    }

    fn long(test: &str) -> Self {
        let path = fresh_home(test).join("h".repeat(90));
        std::fs::create_dir_all(&path).expect("a long home");
        Self { path }
    }

    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
        command
            .env("TANDEM_HOME", &self.path)
            .env_remove("TANDEM_LOG")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// `tandem app-server daemon ARGS`, to completion.
    async fn daemon(&self, args: &[&str]) -> Output {
        within(
            PROMPT,
            "a daemon command",
            self.command()
                .args(["app-server", "daemon"])
                .args(args)
                .output(),
        )
        .await
        .expect("run tandem app-server daemon")
    }

    /// `tandem app-server proxy ARGS` with piped stdio.
    fn proxy(&self, args: &[&str]) -> Child {
        self.command()
            .args(["app-server", "proxy"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the proxy")
    }

    fn socket(&self) -> PathBuf {
        self.path
            .join("app-server-control")
            .join("app-server-control.sock")
    }

    fn log(&self) -> PathBuf {
        self.path.join("app-server-control").join("daemon.log")
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::process::Command::new(env!("CARGO_BIN_EXE_tandem"))
            .args(["app-server", "daemon", "stop"])
            .env("TANDEM_HOME", &self.path)
            .stdin(Stdio::null())
            .output();
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The pid `status` prints.
fn status_pid(output: &Output) -> i32 {
    let out = String::from_utf8_lossy(&output.stdout);
    out.lines()
        .find_map(|line| line.strip_prefix("pid"))
        .and_then(|pid| pid.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in the status:\n{}", text(output)))
}

/// A line-mode proxy as a stdio client, initialized.
async fn line_client(home: &Home) -> (Child, Client) {
    let mut child = home.proxy(&["--lines"]);
    let client = StdioClient::new(
        child.stdin.take().expect("piped stdin"),
        child.stdout.take().expect("piped stdout"),
    );
    let mut client = Client::Stdio(client);
    client.initialize(false).await;
    (child, client)
}

#[tokio::test]
async fn start_status_stop() {
    let home = Home::new("daemon-lifecycle");
    let none = home.daemon(&["status"]).await;
    assert_eq!(none.status.code(), Some(3), "{}", text(&none));
    assert!(text(&none).contains("no daemon runs"), "{}", text(&none));

    let started = home.daemon(&["start"]).await;
    assert!(started.status.success(), "{}", text(&started));
    assert!(
        text(&started).contains("started the daemon"),
        "{}",
        text(&started)
    );
    let again = home.daemon(&["start"]).await;
    assert!(text(&again).contains("already runs"), "{}", text(&again));

    let status = home.daemon(&["status"]).await;
    assert!(status.status.success(), "{}", text(&status));
    let out = text(&status);
    let pid = status_pid(&status);
    for field in [
        "socket",
        "uptime",
        "connections  0",
        "threads      0 loaded",
    ] {
        assert!(out.contains(field), "status lacks {field:?}:\n{out}");
    }
    assert!(out.contains(&home.socket().display().to_string()), "{out}");
    assert!(home.log().exists(), "the daemon logs to its file");

    // A second server on the daemon's socket is refused, naming the daemon.
    let second = within(
        PROMPT,
        "a second server",
        home.command()
            .args(["app-server", "--listen", "unix://"])
            .output(),
    )
    .await
    .expect("run a second server");
    assert_eq!(second.status.code(), Some(1), "{}", text(&second));
    assert!(
        text(&second).contains(&format!("pid {pid}")),
        "{}",
        text(&second)
    );

    let stopped = home.daemon(&["stop"]).await;
    assert!(
        text(&stopped).contains(&format!("stopped the daemon (pid {pid})")),
        "{}",
        text(&stopped)
    );
    assert!(!home.socket().exists(), "the socket is removed at shutdown");
    assert_eq!(home.daemon(&["status"]).await.status.code(), Some(3));
}

#[tokio::test]
async fn proxies_start_the_daemon_and_share_its_threads() {
    let home = Home::new("daemon-shared");
    // No daemon yet: the first proxy starts it.
    let (mut first_child, mut first) = line_client(&home).await;
    let status = home.daemon(&["status"]).await;
    assert!(
        status.status.success(),
        "the proxy started the daemon: {}",
        text(&status)
    );

    let cwd = home.path.display().to_string();
    let started = first.ok(1, "thread/start", json!({"cwd": cwd})).await;
    let thread = started["thread"]["id"]
        .as_str()
        .expect("a thread id")
        .to_owned();
    first
        .ok(
            2,
            "turn/start",
            json!({"threadId": thread, "input": [{"type": "text", "text": "shared"}]}),
        )
        .await;

    // A second line-mode proxy sees the first one's thread, loaded.
    let (mut second_child, mut second) = line_client(&home).await;
    let loaded = second.ok(1, "thread/loaded/list", json!({})).await;
    assert!(
        loaded["data"]
            .as_array()
            .expect("a list")
            .iter()
            .any(|id| id == thread.as_str()),
        "{loaded}"
    );

    // A websocket client through the raw proxy (the reference's proxy protocol) sees it too.
    let mut raw = home.proxy(&[]);
    let io = tokio::io::join(
        raw.stdout.take().expect("piped stdout"),
        raw.stdin.take().expect("piped stdin"),
    );
    let (mut socket, response) = within(
        PROMPT,
        "the upgrade through the proxy",
        tokio_tungstenite::client_async("ws://localhost/", io),
    )
    .await
    .expect("the upgrade through the raw proxy");
    assert_eq!(response.status(), 101);
    let mut call = async |id: i64, method: &str, params: Value| -> Value {
        let request = json!({"id": id, "method": method, "params": params});
        socket
            .send(Message::text(request.to_string()))
            .await
            .expect("send through the proxy");
        loop {
            let frame = within(PROMPT, "an answer through the proxy", socket.next())
                .await
                .expect("a frame")
                .expect("a good frame");
            let message: Value =
                serde_json::from_str(frame.to_text().expect("text")).expect("JSON");
            if message["id"] == id {
                return message;
            }
        }
    };
    let init = call(
        1,
        "initialize",
        json!({"clientInfo": {"name": "raw-proxy", "version": "1"}}),
    )
    .await;
    assert!(init.get("result").is_some(), "{init}");
    let read = call(2, "thread/read", json!({"threadId": thread})).await;
    assert_eq!(read["result"]["thread"]["id"], thread.as_str(), "{read}");

    // Three connections while all are open.
    let status = text(&home.daemon(&["status"]).await);
    assert!(status.contains("connections  3"), "{status}");

    drop(socket);
    drop(first);
    drop(second);
    for child in [&mut first_child, &mut second_child, &mut raw] {
        let exited = within(PROMPT, "a proxy's exit", child.wait()).await;
        assert!(exited.is_ok(), "the proxy ends with its client");
    }
}

#[tokio::test]
async fn a_daemon_killed_with_sigkill_is_replaced() {
    let home = Home::new("daemon-killed");
    assert!(home.daemon(&["start"]).await.status.success());
    let pid = status_pid(&home.daemon(&["status"]).await);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the daemon");
    // Its socket stays behind, with nobody listening.
    within(PROMPT, "the daemon's death", async {
        while Path::new(&format!("/proc/{pid}")).exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(home.socket().exists(), "a stale socket");
    assert_eq!(home.daemon(&["status"]).await.status.code(), Some(3));

    // The next proxy starts a new daemon in its place.
    let (mut child, mut client) = line_client(&home).await;
    let listed = client.ok(1, "thread/list", json!({})).await;
    assert!(listed["data"].is_array(), "{listed}");
    let new_pid = status_pid(&home.daemon(&["status"]).await);
    assert_ne!(new_pid, pid);
    drop(client);
    let _ = within(PROMPT, "the proxy's exit", child.wait()).await;
}

#[tokio::test]
async fn a_long_home_gets_a_short_socket() {
    let home = Home::long("daemon-long");
    assert!(home.socket().as_os_str().len() > 107);
    let started = home.daemon(&["start"]).await;
    assert!(started.status.success(), "{}", text(&started));
    let (mut child, mut client) = line_client(&home).await;
    let listed = client.ok(1, "thread/list", json!({})).await;
    assert!(listed["data"].is_array(), "{listed}");
    drop(client);
    let _ = within(PROMPT, "the proxy's exit", child.wait()).await;
    assert!(home.daemon(&["stop"]).await.status.success());
}

#[tokio::test]
async fn an_idle_daemon_exits() {
    let home = Home::new("daemon-idle");
    // 0.02 minutes: 1.2 s with no connection.
    let started = home.daemon(&["start", "--idle-exit-mins", "0.02"]).await;
    assert!(started.status.success(), "{}", text(&started));
    let (mut child, client) = line_client(&home).await;
    // While a client is connected, it stays.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        home.daemon(&["status"]).await.status.success(),
        "alive while connected"
    );
    drop(client);
    let _ = within(PROMPT, "the proxy's exit", child.wait()).await;
    // Watched through the socket file (removed at shutdown): a status would connect, and a
    // connection is what keeps it from being idle.
    within(PROMPT, "the idle exit", async {
        while home.socket().exists() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert_eq!(home.daemon(&["status"]).await.status.code(), Some(3));
    let log = std::fs::read_to_string(home.log()).expect("the log");
    assert!(log.contains("no connection for the idle limit"), "{log}");
}

/// Waits for a proxy's exit and returns its status code and what it printed on stderr.
async fn exit_and_stderr(child: &mut Child) -> (Option<i32>, String) {
    let mut stderr = child.stderr.take().expect("piped stderr");
    let status = within(PROMPT, "the proxy's exit", child.wait())
        .await
        .expect("the proxy's status");
    let mut text = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut text)
        .await
        .expect("the proxy's stderr");
    (status.code(), text)
}

/// A raw proxy whose client has done the websocket upgrade and is idle.
async fn upgraded_raw_proxy(
    home: &Home,
) -> (
    Child,
    tokio_tungstenite::WebSocketStream<
        tokio::io::Join<tokio::process::ChildStdout, tokio::process::ChildStdin>,
    >,
) {
    let mut raw = home.proxy(&[]);
    let io = tokio::io::join(
        raw.stdout.take().expect("piped stdout"),
        raw.stdin.take().expect("piped stdin"),
    );
    let (socket, response) = within(
        PROMPT,
        "the upgrade through the proxy",
        tokio_tungstenite::client_async("ws://localhost/", io),
    )
    .await
    .expect("the upgrade through the raw proxy");
    assert_eq!(response.status(), 101);
    (raw, socket)
}

#[tokio::test]
async fn proxies_whose_daemon_goes_away_say_so_and_exit() {
    let home = Home::new("daemon-gone");
    // Stopped: the daemon closes each connection with 1001.
    both_proxies_say_when(&home, "shutting down", async {
        let stopped = home.daemon(&["stop"]).await;
        assert!(stopped.status.success(), "{}", text(&stopped));
    })
    .await;
    // Killed: the connection ends with no close frame at all.
    both_proxies_say_when(&home, "stopped or was killed", async {
        let pid = status_pid(&home.daemon(&["status"]).await);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("kill the daemon");
    })
    .await;
}

/// Connects a line proxy and an upgraded raw proxy (starting the daemon if none runs), ends
/// the daemon with `end`, and checks that both exit 1 saying the server went away and `why`.
async fn both_proxies_say_when(home: &Home, why: &str, end: impl std::future::Future<Output = ()>) {
    let (mut line_child, line) = line_client(home).await;
    let (mut raw_child, raw_socket) = upgraded_raw_proxy(home).await;
    end.await;
    for child in [&mut line_child, &mut raw_child] {
        let (code, stderr) = exit_and_stderr(child).await;
        assert_eq!(code, Some(1), "{stderr}");
        assert!(
            stderr.contains("went away") && stderr.contains(why),
            "{stderr}"
        );
    }
    drop((line, raw_socket));
}

#[tokio::test]
async fn a_client_that_closes_ends_the_raw_proxy_quietly() {
    let home = Home::new("daemon-quiet-close");
    let (mut raw_child, mut raw_socket) = upgraded_raw_proxy(&home).await;
    within(PROMPT, "the client's close", raw_socket.close(None))
        .await
        .expect("a close handshake");
    let (code, stderr) = exit_and_stderr(&mut raw_child).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("went away"), "{stderr}");
}

#[tokio::test]
async fn proxies_whose_client_stops_reading_blame_the_client_not_the_server() {
    let home = Home::new("daemon-client-gone");
    // What each proxy's client writes before its stdout is found closed: a request for the
    // line mode, the websocket upgrade for the raw one. Either way the daemon answers, and the
    // proxy's write of that answer fails.
    let upgrade = "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
                   Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                   Sec-WebSocket-Version: 13\r\n\r\n";
    let request = "{\"id\":1,\"method\":\"thread/loaded/list\",\"params\":{}}\n";
    for (args, first_write) in [(&["--lines"][..], request), (&[][..], upgrade)] {
        let mut child = home.proxy(args);
        drop(child.stdout.take());
        let mut stdin = child.stdin.take().expect("piped stdin");
        // The proxy may already be gone by the time the write lands; its stderr says why.
        let _ = tokio::io::AsyncWriteExt::write_all(&mut stdin, first_write.as_bytes()).await;
        let (code, stderr) = exit_and_stderr(&mut child).await;
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("the client's side failed") && !stderr.contains("went away:"),
            "{args:?}: {stderr}"
        );
        drop(stdin);
    }
}

#[tokio::test]
async fn daemon_stop_stores_the_running_turn_and_leaves_no_child() {
    let home = Home::new("daemon-stop-turn");
    let (mut child, mut client) = line_client(&home).await;
    let started = client
        .ok(
            1,
            "thread/start",
            json!({"approvalPolicy": "never", "cwd": home.path.display().to_string()}),
        )
        .await;
    let thread = started["thread"]["id"]
        .as_str()
        .expect("a thread id")
        .to_owned();
    let turn = client
        .ok(
            2,
            "turn/start",
            json!({
                "threadId": thread,
                "input": [{"type": "text", "text": "/sh sleep 6061"}],
            }),
        )
        .await;
    let turn_id = turn["turn"]["id"].as_str().expect("a turn id").to_owned();
    // The turn's command, found by its unusual argument.
    let command_pid: i32 = within(PROMPT, "the turn's command", async {
        loop {
            let found = std::fs::read_dir("/proc").ok().and_then(|entries| {
                entries.flatten().find_map(|entry| {
                    let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
                    let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                    cmdline.starts_with(b"sleep\x006061").then_some(pid)
                })
            });
            if let Some(pid) = found {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(Path::new(&format!("/proc/{command_pid}")).exists());

    let stopped = home.daemon(&["stop"]).await;
    assert!(stopped.status.success(), "{}", text(&stopped));
    // The daemon killed its command on the way out; a loaded machine may take a moment to
    // reap it (a zombie has nothing left running, so it counts as gone).
    within(PROMPT, "the turn's command to be gone after stop", async {
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{command_pid}/stat"));
            let gone = stat.is_err()
                || stat.is_ok_and(|stat| {
                    stat.rsplit_once(')')
                        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
                });
            if gone {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    drop(client);
    let _ = exit_and_stderr(&mut child).await;

    // The next daemon (started by the next proxy) reads the turn back, interrupted.
    let (mut child, mut client) = line_client(&home).await;
    let read = client
        .ok(
            1,
            "thread/read",
            json!({"threadId": thread, "includeTurns": true}),
        )
        .await;
    let turns = read["thread"]["turns"].as_array().expect("turns");
    let stored = turns
        .iter()
        .find(|turn| turn["id"] == turn_id.as_str())
        .unwrap_or_else(|| panic!("the turn was stored: {read}"));
    assert_eq!(stored["status"], "interrupted", "{read}");
    drop(client);
    let _ = within(PROMPT, "the proxy's exit", child.wait()).await;
}

#[tokio::test]
async fn proxies_started_at_once_share_one_daemon() {
    let home = Home::new("daemon-race");
    // No daemon yet: every proxy tries to start one at the same moment.
    let clients = futures::future::join_all((0..4).map(|_| line_client(&home))).await;
    let status = home.daemon(&["status"]).await;
    assert!(status.status.success(), "{}", text(&status));
    let out = text(&status);
    assert!(
        out.contains("connections  4"),
        "one daemon serves all four:\n{out}"
    );
    let daemons = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|entry| {
            std::fs::read(entry.path().join("environ")).is_ok_and(|environ| {
                environ
                    .split(|byte| *byte == 0)
                    .any(|var| var == format!("TANDEM_HOME={}", home.path.display()).as_bytes())
            }) && std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| cmdline.windows(7).any(|w| w == b"unix://"))
        })
        .count();
    assert_eq!(daemons, 1, "exactly one daemon process for the home");
    for (mut child, client) in clients {
        drop(client);
        let _ = within(PROMPT, "the proxy's exit", child.wait()).await;
    }
}
