//! End-to-end tests of `tandem run` and `tandem chat` (issue 9, acceptance 7): the binary run
//! as a user runs it, through pipes and under a pseudo-terminal (tmux), against the
//! in-process reference server and its scripted agent, and against a real `tandem app-server`
//! spawned over stdio (`--spawn`) or listening on a websocket (`--connect`).

mod stalled;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

/// A fresh home per call, so tests that list threads see only their own.
fn home() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tandem-run-chat-{}-{n}", std::process::id()))
}

fn tandem(home: &PathBuf) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
    command
        .env("TANDEM_HOME", home)
        .env_remove("TANDEM_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `command` with `input` on stdin (none if `None`), failing the test after DEADLINE.
fn run_with(mut command: Command, input: Option<&str>) -> Output {
    if input.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = command.spawn().expect("tandem starts");
    if let Some(input) = input {
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin.write_all(input.as_bytes()).expect("input written");
    }
    let deadline = Instant::now() + DEADLINE;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("tandem did not finish within {DEADLINE:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_prints_the_scripted_answer_and_exits_zero() {
    let home = home();
    let mut command = tandem(&home);
    command.args(["run", "hello"]);
    let output = run_with(command, None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "You said: \"hello\"\n");
}

#[test]
fn run_exits_non_zero_when_the_turn_fails() {
    let home = home();
    let mut command = tandem(&home);
    command.args(["run", "/fail the disk is full"]);
    let output = run_with(command, None);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("the turn failed: the disk is full"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn run_declines_without_a_terminal_and_approves_with_yes() {
    let home = home();
    let mut command = tandem(&home);
    command.args(["run", "/sh echo approved-output"]);
    let declined = run_with(command, None);
    assert_eq!(declined.status.code(), Some(0));
    let stderr = text(&declined.stderr);
    assert!(
        stderr.contains("declined `echo approved-output`"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("approved-output\n"),
        "the command did not run: {stderr}"
    );

    let mut command = tandem(&home);
    command.args(["run", "--yes", "/sh echo approved-output"]);
    let approved = run_with(command, None);
    assert_eq!(approved.status.code(), Some(0));
    assert!(
        text(&approved.stderr).contains("approved-output\n"),
        "{}",
        text(&approved.stderr)
    );
}

#[test]
fn run_json_prints_every_notification_as_a_line() {
    let home = home();
    let mut command = tandem(&home);
    command.args(["run", "--json", "hello"]);
    let output = run_with(command, None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let methods: Vec<String> = text(&output.stdout)
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            value["method"].as_str().expect("a notification").to_owned()
        })
        .collect();
    // Every notification: from the thread's start to the turn's completion, each once.
    assert_eq!(
        methods.first().map(String::as_str),
        Some("thread/started"),
        "{methods:?}"
    );
    assert!(methods.contains(&"turn/started".to_owned()), "{methods:?}");
    assert_eq!(
        methods.iter().filter(|m| *m == "turn/completed").count(),
        1,
        "{methods:?}"
    );
    assert!(
        methods.contains(&"item/agentMessage/delta".to_owned()),
        "{methods:?}"
    );
    assert_eq!(methods.last().map(String::as_str), Some("turn/completed"));
}

/// `tandem run --json "/sleep 60000"` until `turn/started` is printed, then `signal`: tandem
/// stops the turn and its in-process server (rather than dying on the spot, as it did on
/// SIGHUP), and exits with 128 + the signal's number well within the shutdown budget.
fn run_shuts_down_on(signal: nix::sys::signal::Signal) {
    let home = home();
    let mut command = tandem(&home);
    command.args(["run", "--json", "/sleep 60000"]);
    let mut child = command.spawn().expect("tandem starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let (lines_tx, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if lines_tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + DEADLINE;
    loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| {
                let _ = child.kill();
                panic!("no turn/started within {DEADLINE:?}");
            });
        if line.contains("\"turn/started\"") {
            break;
        }
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid fits i32"));
    let since = Instant::now();
    nix::sys::signal::kill(pid, signal).expect("signal tandem");
    let limit = Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if since.elapsed() > limit {
            let _ = child.kill();
            panic!("tandem run did not exit within {limit:?} of {signal}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = String::new();
    let _ =
        std::io::Read::read_to_string(child.stderr.as_mut().expect("piped stderr"), &mut stderr);
    assert_eq!(
        status.code(),
        Some(128 + signal as i32),
        "{signal}: {status:?}; stderr:\n{stderr}"
    );
    assert!(stderr.contains(signal.as_str()), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn run_shuts_down_cleanly_on_sigterm() {
    run_shuts_down_on(nix::sys::signal::Signal::SIGTERM);
}

#[test]
fn run_shuts_down_cleanly_on_sighup() {
    run_shuts_down_on(nix::sys::signal::Signal::SIGHUP);
}

#[test]
fn run_reports_an_unreachable_server() {
    let home = home();
    let mut command = tandem(&home);
    command.args(["run", "--spawn", "/nonexistent/tandem-server", "hello"]);
    let output = run_with(command, None);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("cannot start `/nonexistent/tandem-server`"),
        "{}",
        text(&output.stderr)
    );

    let mut command = tandem(&home);
    command.args(["run", "--token-file", "/tmp/x", "hello"]);
    let usage = run_with(command, None);
    assert_eq!(usage.status.code(), Some(2), "--token-file needs --connect");
}

/// `--spawn` with the binary under test as the server: `tandem run` starts
/// `tandem app-server --listen stdio://` itself, talks to it over its stdin and stdout, and
/// ends it on exit.
#[test]
fn run_spawns_a_real_app_server_over_stdio() {
    let home = home();
    let spawn = format!(
        "'{}' app-server --listen stdio://",
        env!("CARGO_BIN_EXE_tandem")
    );
    let mut command = tandem(&home);
    command.args(["run", "--spawn", &spawn, "hello"]);
    let output = run_with(command, None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "You said: \"hello\"\n");
    assert_no_server_left(&home);

    // Approvals travel over the wire too: declined without a terminal, granted with --yes.
    let mut command = tandem(&home);
    command.args(["run", "--spawn", &spawn, "/sh echo over-stdio"]);
    let declined = run_with(command, None);
    assert_eq!(
        declined.status.code(),
        Some(0),
        "{}",
        text(&declined.stderr)
    );
    assert!(
        text(&declined.stderr).contains("declined `echo over-stdio`"),
        "{}",
        text(&declined.stderr)
    );
    let mut command = tandem(&home);
    command.args(["run", "--yes", "--spawn", &spawn, "/sh echo over-stdio"]);
    let approved = run_with(command, None);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    assert!(
        text(&approved.stderr).contains("over-stdio\n"),
        "{}",
        text(&approved.stderr)
    );
    assert_no_server_left(&home);
}

/// Fails if a process with `TANDEM_HOME=home` (a spawned server, or anything it started)
/// is still alive a few seconds after the client exited.
fn assert_no_server_left(home: &std::path::Path) {
    let home = home.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = tandem_test_support::live_pids_with_env("TANDEM_HOME", &home);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the spawned server outlived tandem run: pids {left:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// `tandem app-server --listen ws://127.0.0.1:0`, SIGTERMed (then killed) when dropped.
struct WebSocketServer {
    child: Child,
    url: String,
}

impl WebSocketServer {
    /// Starts the server with the app-server options `extra` after the listen address.
    fn start(home: &PathBuf, extra: &[&str]) -> Self {
        let mut command = tandem(home);
        command
            .args(["app-server", "--listen", "ws://127.0.0.1:0"])
            .args(extra);
        let mut child = command.spawn().expect("the server starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let (address_tx, address) = mpsc::channel();
        // Drained for as long as the server runs: a full stderr pipe would block it.
        thread::spawn(move || {
            let mut address_tx = Some(address_tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(address) = line.trim().strip_prefix("listening on: ws://")
                    && let Some(tx) = address_tx.take()
                {
                    let _ = tx.send(address.to_owned());
                }
            }
        });
        let address = address
            .recv_timeout(DEADLINE)
            .expect("the server prints `listening on: ws://ADDR`");
        Self {
            child,
            url: format!("ws://{address}"),
        }
    }
}

impl Drop for WebSocketServer {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `--connect` to a real websocket app-server: the turn runs there (its thread is the
/// server's), and the server keeps serving the next client.
#[test]
fn run_connects_to_a_real_websocket_app_server() {
    let home = home();
    let server = WebSocketServer::start(&home, &[]);
    for prompt in ["hello", "again"] {
        let mut command = tandem(&home);
        command.args(["run", "--connect", &server.url, prompt]);
        let output = run_with(command, None);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        assert_eq!(text(&output.stdout), format!("You said: \"{prompt}\"\n"));
    }

    let mut command = tandem(&home);
    command.args(["run", "--json", "--connect", &server.url, "hello"]);
    let output = run_with(command, None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let last = text(&output.stdout)
        .lines()
        .last()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a JSON line"));
    assert_eq!(
        last.as_ref().map(|line| line["method"].clone()),
        Some(serde_json::json!("turn/completed")),
        "{}",
        text(&output.stdout)
    );
    drop(server);
}

/// `--connect` with `--token-file` to a server that checks a capability token: the right
/// token connects, a missing or wrong one is refused with the server's reason.
#[test]
fn run_connects_with_a_token_file() {
    let home = home();
    std::fs::create_dir_all(&home).expect("home");
    let (token, wrong) = (home.join("token"), home.join("wrong-token"));
    for (file, contents) in [(&token, "conformance-token\n"), (&wrong, "not-the-token\n")] {
        std::fs::write(file, contents).expect("token written");
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let token_flag = token.display().to_string();
    let server = WebSocketServer::start(
        &home,
        &[
            "--ws-auth",
            "capability-token",
            "--ws-token-file",
            &token_flag,
        ],
    );

    let mut command = tandem(&home);
    command.args([
        "run",
        "--connect",
        &server.url,
        "--token-file",
        &token_flag,
        "hello",
    ]);
    let output = run_with(command, None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "You said: \"hello\"\n");

    let wrong_flag = wrong.display().to_string();
    for (flags, reason) in [
        (vec![], "missing Authorization"),
        (
            vec!["--token-file", wrong_flag.as_str()],
            "invalid bearer token",
        ),
    ] {
        let mut command = tandem(&home);
        command
            .args(["run", "--connect", &server.url])
            .args(&flags)
            .arg("hello");
        let refused = run_with(command, None);
        assert_eq!(refused.status.code(), Some(1));
        let stderr = text(&refused.stderr);
        assert!(
            stderr.contains("401") && stderr.contains(reason),
            "{stderr}"
        );
    }
}

/// Issue 27, point 4, client side: `run` and `chat` refuse a `--token-file` that users other
/// than its owner may read, before connecting, naming the file, its mode and the fix (the
/// private file is accepted in [`run_connects_with_a_token_file`]).
#[test]
fn a_token_file_others_may_read_is_refused_by_run_and_chat() {
    let home = home();
    std::fs::create_dir_all(&home).expect("home");
    for mode in [0o640, 0o644, 0o666] {
        let file = home.join(format!("token-{mode:o}"));
        std::fs::write(&file, "conformance-token\n").expect("token written");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let path = file.display().to_string();
        for subcommand in [&["run", "hello"][..], &["chat"]] {
            let mut command = tandem(&home);
            command
                .arg(subcommand[0])
                .args(["--connect", "ws://127.0.0.1:9", "--token-file", &path])
                .args(&subcommand[1..]);
            let output = run_with(command, Some(""));
            let stderr = text(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(1),
                "{subcommand:?} {mode:o}: {stderr}"
            );
            for needed in [
                format!("--token-file: the token file {path} has mode 0{mode:o}"),
                format!("chmod 600 {path}"),
            ] {
                assert!(stderr.contains(&needed), "{needed:?} missing: {stderr}");
            }
        }
    }
}

#[test]
fn chat_through_a_pipe_shows_the_answer_the_prompt_and_the_output() {
    let home = home();
    let mut command = tandem(&home);
    command.arg("chat");
    let output = run_with(command, Some("hello\n/sh echo hi\ny\n"));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("You said: \"hello\"\n"), "{stdout}");
    assert!(
        stdout.contains("Allow the agent to run `echo hi`? [y/n]"),
        "{stdout}"
    );
    assert!(stdout.lines().any(|line| line == "hi"), "{stdout}");
}

#[test]
fn chat_lists_and_resumes_threads() {
    let home = home();
    let mut command = tandem(&home);
    command.arg("chat");
    let first = run_with(command, Some("remember me\n"));
    let first = text(&first.stdout);
    let thread_id = first
        .lines()
        .find_map(|line| line.strip_prefix("thread "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the thread id is shown")
        .to_owned();

    let mut command = tandem(&home);
    command.arg("chat");
    let input = format!("/threads\n/resume {thread_id}\nagain\n");
    let second = run_with(command, Some(&input));
    let stdout = text(&second.stdout);
    assert!(
        stdout.contains(&format!("  {thread_id}  remember me")),
        "/threads lists the first thread: {stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "resumed thread {thread_id}:\n> remember me\nYou said: \"remember me\""
        )),
        "{stdout}"
    );
    assert!(stdout.contains("You said: \"again\""), "{stdout}");
}

#[test]
fn chat_interrupts_a_running_turn() {
    let home = home();
    let mut command = tandem(&home);
    command.arg("chat");
    let output = run_with(command, Some("/sleep 60000\n/interrupt\n"));
    assert_eq!(output.status.code(), Some(0));
    assert!(
        text(&output.stdout).contains("(interrupted)"),
        "{}",
        text(&output.stdout)
    );
}

/// A tmux server of our own, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket]);
        command
    }

    fn run(&self, args: &[&str]) -> String {
        let output = self.command().args(args).output().expect("tmux runs");
        text(&output.stdout)
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-t", "chat", "-p"])
    }

    fn type_line(&self, line: &str) {
        self.run(&["send-keys", "-t", "chat", "-l", line]);
        self.run(&["send-keys", "-t", "chat", "Enter"]);
    }

    fn wait_for(&self, what: &str, found: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let screen = self.screen();
            if found(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "no {what} on screen:\n{screen}");
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").output();
    }
}

/// `tandem chat` under a pseudo-terminal, driven with tmux send-keys. Skips (saying so) where
/// tmux is not installed; `.ci/run` installs it.
#[test]
fn chat_under_a_terminal_shows_the_same() {
    if !Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|output| output.status.success())
    {
        eprintln!(
            "SKIPPED chat_under_a_terminal_shows_the_same: tmux is not installed (apt-get install -y tmux)"
        );
        return;
    }
    let home = home();
    let tmux = Tmux {
        socket: format!("tandem-chat-test-{}", std::process::id()),
    };
    let shell = format!(
        "env -u TANDEM_LOG TANDEM_HOME='{}' '{}' chat",
        home.display(),
        env!("CARGO_BIN_EXE_tandem")
    );
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "chat",
        "-x",
        "100",
        "-y",
        "30",
        &shell,
    ]);
    tmux.wait_for("prompt", |screen| {
        screen.lines().any(|l| l.starts_with('>'))
    });
    tmux.type_line("hello");
    tmux.wait_for("answer", |screen| screen.contains("You said: \"hello\""));
    tmux.type_line("/sh echo hi");
    tmux.wait_for("approval prompt", |screen| {
        screen.contains("Allow the agent to run `echo hi`? [y/n]")
    });
    // The line after the question is an answer line (`? `), not a new message's `> `.
    tmux.wait_for("the answer prompt below the question", |screen| {
        let lines: Vec<&str> = screen
            .lines()
            .map(str::trim_end)
            .filter(|line| !line.is_empty())
            .collect();
        lines.ends_with(&["Allow the agent to run `echo hi`? [y/n]", "?"])
    });
    tmux.type_line("y");
    tmux.wait_for("command output", |screen| {
        screen.lines().any(|line| line.trim() == "hi")
    });
    // Ctrl-C twice at the prompt leaves.
    tmux.run(&["send-keys", "-t", "chat", "C-c"]);
    tmux.wait_for("Ctrl-C hint", |screen| screen.contains("Ctrl-C again"));
    tmux.run(&["send-keys", "-t", "chat", "C-c"]);
    let deadline = Instant::now() + DEADLINE;
    while tmux
        .command()
        .args(["has-session", "-t", "chat"])
        .output()
        .is_ok_and(|output| output.status.success())
    {
        assert!(
            Instant::now() < deadline,
            "chat did not exit on a second Ctrl-C"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

/// `tandem run` whose turn is done but whose in-process server can never shut down (a debug
/// build's fault point blocks every runtime worker once the client closes; the deadline
/// shortened from its 40 s for the test): tandem reports it and exits with 70 instead of
/// hanging, after printing the turn's answer.
#[test]
fn run_whose_shutdown_never_finishes_exits_at_its_deadline() {
    let home = home();
    let mut command = tandem(&home);
    command
        .env("TANDEM_FAULT_WEDGE_SHUTDOWN", "1")
        .env("TANDEM_FAULT_SHUTDOWN_DEADLINE_MS", "1500")
        .args(["run", "hello"]);
    let output = run_with(command, None);
    let stderr = text(&output.stderr);
    assert!(text(&output.stdout).contains("hello"), "{stderr}");
    assert_eq!(output.status.code(), Some(70), "{stderr}");
    assert!(
        stderr.contains("tandem run: the shutdown did not finish within 1.5s"),
        "{stderr}"
    );
}

/// Waits until a thread of `child` is blocked writing to a pipe, then sends SIGTERM and returns
/// how `child` exited (failing past 20 s).
fn sigterm_while_blocked_in_a_write(child: &mut Child) -> std::process::ExitStatus {
    let tasks = format!("/proc/{}/task", child.id());
    let blocked_in_write = || {
        std::fs::read_dir(&tasks)
            .into_iter()
            .flatten()
            .flatten()
            .any(|task| {
                std::fs::read_to_string(task.path().join("wchan"))
                    .is_ok_and(|at| at.contains("pipe_write"))
            })
    };
    let since = Instant::now();
    while !blocked_in_write() {
        if since.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("tandem never blocked writing to its full pipe");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid fits i32"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signal tandem");
    stalled::wait_with_deadline(child, Duration::from_secs(20))
}

/// SIGTERM to `tandem run` while it is blocked writing to a stderr nobody reads (a full pipe;
/// its first write there is the scripted agent's notice): the signal is still taken, the
/// session's server shut down, and tandem exits 143. Before, the write held the very select
/// that waits for the signal, and tandem never exited.
#[test]
fn run_blocked_on_a_stderr_nobody_reads_still_stops_on_sigterm() {
    let home = home();
    let (_reader, writer) = stalled::full_pipe();
    let mut command = tandem(&home);
    command
        .args(["run", "--json", "/sleep 60000"])
        .stderr(Stdio::from(writer));
    let mut child = command.spawn().expect("tandem starts");
    let status = sigterm_while_blocked_in_a_write(&mut child);
    assert_eq!(status.code(), Some(143), "{status:?}");
}

/// The same for `tandem chat` whose stdout nobody reads (its first line there names the
/// thread), stdin kept open.
#[test]
fn chat_blocked_on_a_stdout_nobody_reads_still_stops_on_sigterm() {
    let home = home();
    let (_reader, writer) = stalled::full_pipe();
    let mut command = tandem(&home);
    command
        .arg("chat")
        .stdin(Stdio::piped())
        .stdout(Stdio::from(writer));
    let mut child = command.spawn().expect("tandem starts");
    let _stdin = child.stdin.take();
    let status = sigterm_while_blocked_in_a_write(&mut child);
    assert_eq!(status.code(), Some(143), "{status:?}");
}
