//! End-to-end tests of the `tandem` binary (issue 3, acceptance 12): `tandem exec` run as a
//! user runs it, with real pipes, real children and real signals.
//!
//! Every run has a deadline: a test that would hang kills the binary and fails instead.
//! Processes are found in `/proc` by an environment variable unique to each run, which tandem
//! passes on to the command and every descendant inherits.

mod stalled;

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Generous: a debug build relays 100 MiB in a few seconds.
const DEADLINE: Duration = Duration::from_secs(60);
const MARKER_VAR: &str = "TANDEM_CLI_TEST_MARK";

fn home() -> PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tandem-cli-tests-{}", std::process::id()))
}

/// The binary under test, with a throwaway home, no logging and a marker for its processes.
fn tandem(marker: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
    command
        .env("TANDEM_HOME", home())
        .env_remove("TANDEM_LOG")
        .env(MARKER_VAR, marker)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn new_marker(test: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{test}-{}-{n}", std::process::id())
}

/// Live (non-zombie) processes carrying `marker`, excluding the tandem binary itself.
fn live_marked(marker: &str, except: u32) -> Vec<u32> {
    let mut pids = tandem_test_support::live_pids_with_env(MARKER_VAR, marker);
    pids.retain(|pid| *pid != except);
    pids
}

fn eventually(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        thread::sleep(Duration::from_millis(10));
    }
}

struct Finished {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    elapsed: Duration,
}

impl Finished {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

fn drain(mut reader: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).expect("read pipe");
        bytes
    })
}

/// Runs `command` (with `input` on stdin, if any) to completion under [`DEADLINE`].
fn run(command: &mut Command, input: Option<&'static [u8]>) -> Finished {
    if input.is_some() {
        command.stdin(Stdio::piped());
    }
    let began = Instant::now();
    let mut child = command.spawn().expect("spawn tandem");
    if let Some(input) = input {
        let mut stdin = child.stdin.take().expect("stdin");
        thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(input);
        });
    }
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let status = stalled::wait_with_deadline(&mut child, DEADLINE);
    Finished {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        elapsed: began.elapsed(),
    }
}

// Acceptance 12
#[test]
fn exec_writes_each_stream_to_its_own_and_exits_with_the_child_code() {
    let marker = new_marker("streams");
    let done = run(
        tandem(&marker).args(["exec", "--", "sh", "-c", "echo out; echo err >&2; exit 3"]),
        None,
    );
    assert_eq!(done.stdout(), "out\n");
    assert_eq!(done.stderr(), "err\n");
    assert_eq!(done.code(), Some(3));
}

// Acceptance 12
#[test]
fn exec_timeout_exits_124() {
    let marker = new_marker("timeout");
    let done = run(
        tandem(&marker).args(["exec", "--timeout", "100", "--", "sleep", "5"]),
        None,
    );
    assert_eq!(done.code(), Some(124), "stderr: {}", done.stderr());
    assert!(
        done.elapsed < Duration::from_secs(5),
        "the timeout, not the sleep, ended it: {:?}",
        done.elapsed
    );
    assert!(done.stdout.is_empty());
}

// Acceptance 12
#[test]
fn exec_relays_exactly_100_mib_of_yes_through_head() {
    let marker = new_marker("yes");
    let mut child = tandem(&marker)
        .args(["exec", "--", "sh", "-c", "yes | head -c 100M"])
        .spawn()
        .expect("spawn tandem");
    let stderr = drain(child.stderr.take().expect("stderr"));
    // Count and check on the fly rather than hold 100 MiB: `yes` prints "y\n" forever, so
    // byte i is 'y' for even i and '\n' for odd i.
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = thread::spawn(move || {
        let mut total: u64 = 0;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = stdout.read(&mut buf).expect("read stdout");
            if n == 0 {
                return total;
            }
            for (offset, byte) in buf[..n].iter().enumerate() {
                let expected = if (total + offset as u64).is_multiple_of(2) {
                    b'y'
                } else {
                    b'\n'
                };
                assert_eq!(*byte, expected, "byte {} differs", total + offset as u64);
            }
            total += n as u64;
        }
    });
    let status = stalled::wait_with_deadline(&mut child, DEADLINE);
    let total = reader.join().expect("stdout reader");
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert_eq!(total, 100 * 1024 * 1024, "stderr: {stderr}");
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn exec_help_lists_every_option_and_usage_errors_exit_2() {
    let marker = new_marker("help");
    let help = run(tandem(&marker).args(["exec", "--help"]), None);
    assert_eq!(help.code(), Some(0));
    let text = help.stdout();
    for needle in [
        "--tty",
        "--stdin",
        "--cap <BYTES|none>",
        "--timeout <MS|none>",
        "--cwd <DIR>",
        "<CMD>...",
        "Exit status:",
        "124",
        "TANDEM_HOME",
    ] {
        assert!(text.contains(needle), "--help lacks {needle:?}:\n{text}");
    }

    let usage_errors: [&[&str]; 4] = [
        &["exec"],
        &["exec", "--bogus", "--", "true"],
        &["exec", "--cap", "lots", "--", "true"],
        &["exec", "--timeout", "-5", "--", "true"],
    ];
    for args in usage_errors {
        let done = run(tandem(&marker).args(args), None);
        assert_eq!(done.code(), Some(2), "{args:?}: {}", done.stderr());
        assert!(done.stdout.is_empty(), "{args:?}");
        assert!(
            done.stderr().starts_with("error: "),
            "{args:?}: {}",
            done.stderr()
        );
    }
    let missing_dir = run(
        tandem(&marker).args(["exec", "--cwd", "/nonexistent/tandem", "--", "true"]),
        None,
    );
    assert_eq!(missing_dir.code(), Some(2));
    assert_eq!(
        missing_dir.stderr(),
        "tandem: --cwd /nonexistent/tandem: not a directory\n"
    );
}

#[test]
fn exec_of_a_missing_program_exits_127_naming_it_with_the_reason() {
    let marker = new_marker("missing");
    let done = run(
        tandem(&marker).args(["exec", "--", "/nonexistent/tandem-no-such-binary"]),
        None,
    );
    assert_eq!(done.code(), Some(127));
    assert_eq!(
        done.stderr(),
        "tandem: cannot run `/nonexistent/tandem-no-such-binary`: failed to spawn process: No \
         such file or directory (os error 2)\n"
    );
}

#[test]
fn exec_needs_no_usable_home_but_refuses_a_relative_one() {
    let marker = new_marker("home");
    // exec makes no thread request: a home it cannot create is no obstacle (issue 18).
    let done = run(
        tandem(&marker)
            .env("TANDEM_HOME", "/proc/tandem-cannot-create-this")
            .args(["exec", "--", "echo", "hi"]),
        None,
    );
    assert_eq!(done.code(), Some(0), "{}", done.stderr());
    assert_eq!(done.stdout(), "hi\n");
    assert!(!std::path::Path::new("/proc/tandem-cannot-create-this").exists());
    // A relative TANDEM_HOME would name a different directory wherever tandem starts.
    let relative = run(
        tandem(&marker)
            .env("TANDEM_HOME", "relative/home")
            .args(["exec", "--", "echo", "hi"]),
        None,
    );
    assert_eq!(relative.code(), Some(1));
    assert!(
        relative
            .stderr()
            .starts_with("tandem: TANDEM_HOME must be an absolute path, got relative/home"),
        "{}",
        relative.stderr()
    );
}

#[test]
fn exec_forwards_stdin_only_when_asked_and_honours_cap_and_cwd() {
    let marker = new_marker("stdin");
    let forwarded = run(
        tandem(&marker).args(["exec", "--stdin", "--", "cat"]),
        Some(b"hello\nworld\n"),
    );
    assert_eq!(forwarded.stdout(), "hello\nworld\n");
    assert_eq!(forwarded.code(), Some(0));

    // Without --stdin the command reads an empty stdin, whatever tandem's stdin holds.
    let empty = run(
        tandem(&marker).args(["exec", "--", "cat"]),
        Some(b"ignored\n"),
    );
    assert_eq!(empty.stdout(), "");
    assert_eq!(empty.code(), Some(0));

    let capped = run(
        tandem(&marker).args(["exec", "--cap", "5", "--", "echo", "1234567890"]),
        None,
    );
    assert_eq!(capped.stdout(), "12345");
    assert_eq!(capped.code(), Some(0));
    // The cut is reported, on a line of its own (the output ended mid-line).
    assert_eq!(
        capped.stderr(),
        "\ntandem: the command's stdout was cut at --cap 5 bytes; the rest was discarded\n"
    );
    let uncut = run(
        tandem(&marker).args(["exec", "--cap", "50", "--", "echo", "1234567890"]),
        None,
    );
    assert_eq!(uncut.stdout(), "1234567890\n");
    assert_eq!(uncut.stderr(), "", "nothing was cut");

    let dir = std::env::temp_dir().canonicalize().unwrap();
    let cwd = run(
        tandem(&marker)
            .args(["exec", "--cwd"])
            .arg(&dir)
            .args(["--", "pwd", "-P"]),
        None,
    );
    assert_eq!(cwd.stdout(), format!("{}\n", dir.display()));
}

#[test]
fn exec_tty_runs_the_command_on_a_terminal_fed_from_stdin() {
    let marker = new_marker("tty");
    let done = run(
        tandem(&marker).args(["exec", "--tty", "--", "sh"]),
        Some(b"tty\nexit 7\n"),
    );
    assert_eq!(done.code(), Some(7), "stdout: {}", done.stdout());
    assert!(
        done.stdout().contains("/dev/pts/"),
        "not a terminal: {}",
        done.stdout()
    );
    assert_eq!(done.stderr(), "", "a terminal merges stderr into stdout");
}

#[test]
fn exec_ctrl_c_kills_the_command_group_and_exits_137() {
    let marker = new_marker("ctrl-c");
    let mut child = tandem(&marker)
        .args([
            "exec",
            "--",
            "sh",
            "-c",
            "sleep 30 & echo ready; exec sleep 30",
        ])
        .spawn()
        .expect("spawn tandem");
    let stderr = drain(child.stderr.take().expect("stderr"));
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let (ready_tx, ready_rx) = mpsc::channel();
    thread::spawn(move || {
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let _ = ready_tx.send(line);
    });
    let line = ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the command starts");
    assert_eq!(line, "ready\n");
    let tandem_pid = child.id();
    eventually(Duration::from_secs(10), "both sleeps run", || {
        live_marked(&marker, tandem_pid).len() == 2
    });

    let pid = nix::unistd::Pid::from_raw(i32::try_from(tandem_pid).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("send SIGINT");
    let status = stalled::wait_with_deadline(&mut child, Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert_eq!(status.code(), Some(137), "stderr: {stderr}");
    eventually(Duration::from_secs(3), "the whole group is gone", || {
        live_marked(&marker, tandem_pid).is_empty()
    });
}

/// A reader that stops reading holds tandem's writes, not its signals: the exec runtime has one
/// thread, and no write may block it. The first SIGTERM kills the command though its last
/// output still waits for the reader (nothing is dropped); a second one exits at once.
#[test]
fn exec_signals_still_work_while_nobody_reads_its_output() {
    let marker = new_marker("stalled");
    let mut child = tandem(&marker)
        .args(["exec", "--", "yes"])
        .spawn()
        .expect("spawn tandem");
    let stderr = drain(child.stderr.take().expect("stderr"));
    // Held and never read.
    let stdout = child.stdout.take().expect("stdout");
    let tandem_pid = child.id();
    // Full: tandem has more to write (`yes` never ends) and nowhere to put it.
    let capacity = rustix::pipe::fcntl_getpipe_size(&stdout).expect("the pipe's size");
    eventually(
        Duration::from_secs(10),
        "tandem's stdout pipe is full",
        || {
            let capacity = rustix::pipe::fcntl_getpipe_size(&stdout).unwrap_or(capacity);
            rustix::io::ioctl_fionread(&stdout)
                .is_ok_and(|queued| queued as usize + 4096 > capacity)
        },
    );
    assert_eq!(live_marked(&marker, tandem_pid).len(), 1, "yes runs");

    let pid = nix::unistd::Pid::from_raw(i32::try_from(tandem_pid).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("send SIGTERM");
    eventually(Duration::from_secs(10), "the command is killed", || {
        live_marked(&marker, tandem_pid).is_empty()
    });
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "tandem waits for its reader"
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("send SIGTERM again");
    let status = stalled::wait_with_deadline(&mut child, Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert_eq!(status.code(), Some(130), "stderr: {stderr}");
    assert!(stderr.contains("interrupted again"), "{stderr}");
    drop(stdout);
}

/// A stdout that cannot be written (a full disk: `/dev/full` answers every write with ENOSPC)
/// kills the command and says why, where a reader that went away (EPIPE) stays quiet.
#[test]
fn exec_says_why_when_its_output_cannot_be_written() {
    let marker = new_marker("full");
    let full = dev_full();
    let mut child = tandem(&marker)
        .args(["exec", "--", "yes"])
        .stdout(Stdio::from(full))
        .spawn()
        .expect("spawn tandem");
    let stderr = drain(child.stderr.take().expect("stderr"));
    let status = stalled::wait_with_deadline(&mut child, DEADLINE);
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert_eq!(status.code(), Some(141), "{stderr}");
    assert!(
        stderr.contains("writing the command's stdout failed: No space left on device"),
        "{stderr}"
    );
    eventually(Duration::from_secs(3), "yes is gone", || {
        live_marked(&marker, 0).is_empty()
    });
}

/// The same failure while nobody reads tandem's stderr (full before tandem starts): the
/// command is killed at once though the message waits for the reader, and a second signal
/// exits at once. A blocking write of the message held the one thread (the command ran on and
/// SIGTERM did nothing until someone read), and so did the second signal's notice.
#[test]
fn exec_whose_output_fails_while_its_stderr_is_full_still_kills_and_answers_signals() {
    let marker = new_marker("full-stalled");
    let full = dev_full();
    let (reader, writer) = stalled::full_pipe();
    let dir = tempfile::tempdir().expect("a directory for the flag");
    let flag = dir.path().join("started");
    let script = format!("touch '{}' && exec yes", flag.display());
    let mut child = tandem(&marker)
        .args(["exec", "--", "sh", "-c", &script])
        .stdout(Stdio::from(full))
        .stderr(Stdio::from(writer))
        .spawn()
        .expect("spawn tandem");
    let tandem_pid = child.id();
    eventually(
        Duration::from_secs(10),
        "yes is started, then killed",
        || flag.exists() && live_marked(&marker, tandem_pid).is_empty(),
    );
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "tandem waits for the reader of its message"
    );
    // A second signal exits at once, with nobody reading stderr still.
    assert_eq!(terminated(&mut child).code(), Some(130));
    drop(reader);
}

/// The closing notices (here `--cap`'s) wait for a reader of a full stderr without holding
/// the thread: a second signal still exits. They were blocking writes, after the signal
/// watch was dropped: SIGTERM was ignored until someone read.
#[test]
fn exec_closing_notices_wait_for_a_reader_but_not_past_a_second_signal() {
    let marker = new_marker("notice-stalled");
    let dir = tempfile::tempdir().expect("a directory for the flag");
    let flag = dir.path().join("done");
    let script = format!("head -c 100 /dev/zero; touch '{}'", flag.display());
    let (reader, writer) = stalled::full_pipe();
    let mut child = tandem(&marker)
        .args(["exec", "--cap", "10", "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::from(writer))
        .spawn()
        .expect("spawn tandem");
    let tandem_pid = child.id();
    eventually(Duration::from_secs(10), "the command is done", || {
        flag.exists() && live_marked(&marker, tandem_pid).is_empty()
    });
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "tandem waits for the reader of its notice"
    );
    assert_eq!(terminated(&mut child).code(), Some(130));
    // Read, the notice gets out: the same run without signals ends with the command's code.
    drop(reader);
    let (reader, writer) = stalled::full_pipe();
    let mut child = tandem(&marker)
        .args([
            "exec",
            "--cap",
            "10",
            "--",
            "head",
            "-c",
            "100",
            "/dev/zero",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::from(writer))
        .spawn()
        .expect("spawn tandem");
    let stderr = drain(std::fs::File::from(reader));
    let status = stalled::wait_with_deadline(&mut child, DEADLINE);
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert_eq!(status.code(), Some(0));
    assert!(
        stderr.ends_with("the rest was discarded\n"),
        "{}",
        stderr.trim_start_matches('x')
    );
}

/// `/dev/full` for writing: every write fails with ENOSPC, as on a full disk.
fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full")
}

/// SIGTERM to `child` until it exits (two sent back to back may arrive as one), within 10 s,
/// once it handles SIGTERM (before, the signal would kill it outright).
fn terminated(child: &mut Child) -> ExitStatus {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    let status_file = format!("/proc/{}/status", child.id());
    eventually(Duration::from_secs(10), "tandem handles SIGTERM", || {
        let status = std::fs::read_to_string(&status_file).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .is_some_and(|mask| mask & (1 << (nix::sys::signal::Signal::SIGTERM as u32 - 1)) != 0)
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        assert!(Instant::now() < deadline, "tandem did not exit on SIGTERM");
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("send SIGTERM");
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn exec_leaves_no_background_process_behind() {
    let marker = new_marker("background");
    let done = run(
        tandem(&marker).args(["exec", "--", "sh", "-c", "sleep 30 & echo started"]),
        None,
    );
    assert_eq!(done.code(), Some(0));
    assert_eq!(done.stdout(), "started\n");
    // The sleeper held the output pipes: tandem says why it stopped reading.
    assert!(
        done.stderr().contains("still holds its stdout or stderr"),
        "{}",
        done.stderr()
    );
    eventually(Duration::from_secs(3), "the sleeper is gone", || {
        live_marked(&marker, 0).is_empty()
    });
}

/// Starts `tandem exec ARGS` with piped stdin and waits for its first stdout line `ready`.
fn start_until_ready(marker: &str, args: &[&str]) -> (Child, std::process::ChildStdin) {
    let mut child = tandem(marker)
        .args(args)
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn tandem");
    let stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let (ready_tx, ready_rx) = mpsc::channel();
    thread::spawn(move || {
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let _ = ready_tx.send(line);
        // Keep reading so the command never blocks on a full pipe.
        let _ = std::io::copy(&mut stdout, &mut std::io::sink());
    });
    let line = ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the command starts");
    assert_eq!(line.trim_end(), "ready");
    (child, stdin)
}

/// Under --tty, Ctrl-C is a keystroke for the command's terminal, not a signal for tandem: the
/// terminal sends the command SIGINT and the command decides; `sleep` dies of it, 128 + 2
/// (issue 18: the README promised 137 here).
#[test]
fn exec_tty_ctrl_c_is_the_commands_keystroke_and_it_exits_130() {
    let marker = new_marker("tty-ctrl-c");
    let (mut child, mut stdin) = start_until_ready(
        &marker,
        &[
            "exec",
            "--tty",
            "--",
            "sh",
            "-c",
            "echo ready; exec sleep 30",
        ],
    );
    use std::io::Write;
    stdin.write_all(b"\x03").expect("Ctrl-C typed");
    stdin.flush().expect("flushed");
    let status = stalled::wait_with_deadline(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(130));
}

// Issue 30: exec runs one process and starts none of the configured MCP servers.
#[test]
fn exec_starts_no_configured_mcp_server() {
    let marker = new_marker("mcp");
    let home = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mcp-home-{marker}"));
    std::fs::create_dir_all(&home).expect("home");
    let started = home.join("mcp-server-started");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[mcp_servers.m]\ncommand = \"sh\"\nargs = [\"-c\", \"touch '{}'; sleep 30\"]\n",
            started.display()
        ),
    )
    .expect("config");
    // The command waits up to 5 s for the server to show up (exit 7 if it does): a server
    // started with the session has long spawned by then.
    let script = format!(
        "for i in $(seq 50); do [ -e '{}' ] && exit 7; sleep 0.1; done; exit 0",
        started.display()
    );
    let done = run(
        tandem(&marker)
            .env("TANDEM_HOME", &home)
            .args(["exec", "--", "sh", "-c", &script]),
        None,
    );
    assert_eq!(done.code(), Some(0), "stderr: {}", done.stderr());
    assert!(!started.exists());
}

/// The command has ended, and the host's shutdown after it can never finish (a debug build's
/// fault point blocks the one runtime thread, as a blocking call or a self-deadlock would; the
/// deadline shortened from its 43 s for the test): tandem reports it and exits with 70 instead
/// of hanging, with the command's output already written.
#[test]
fn exec_whose_shutdown_never_finishes_exits_at_its_deadline() {
    let marker = new_marker("wedged");
    let done = run(
        tandem(&marker)
            .env("TANDEM_FAULT_WEDGE_SHUTDOWN", "1")
            .env("TANDEM_FAULT_SHUTDOWN_DEADLINE_MS", "1500")
            .args(["exec", "--", "echo", "done"]),
        None,
    );
    assert_eq!(done.stdout(), "done\n");
    assert_eq!(done.code(), Some(70), "{}", done.stderr());
    assert!(
        done.stderr()
            .contains("tandem exec: the shutdown did not finish within 1.5s"),
        "{}",
        done.stderr()
    );
    assert!(
        done.elapsed >= Duration::from_millis(1500),
        "{:?}",
        done.elapsed
    );
}

/// A command that cannot start, while tandem's stderr is a full pipe nobody reads: the message
/// waits for a reader, but SIGTERM (which tandem handles by then) still ends tandem with the
/// error's exit code. With a blocking `eprintln!` it hung until SIGKILL.
#[test]
fn exec_reporting_a_failed_start_to_a_stderr_nobody_reads_still_answers_sigterm() {
    let marker = new_marker("failed-start-full-stderr");
    let (_reader, writer) = stalled::full_pipe();
    let mut child = tandem(&marker)
        .args(["exec", "--", "/nonexistent/tandem-test-program"])
        .stdout(Stdio::null())
        .stderr(Stdio::from(writer))
        .spawn()
        .expect("spawn tandem");
    let status = terminated(&mut child);
    assert_eq!(status.code(), Some(127), "{status:?}");
}
