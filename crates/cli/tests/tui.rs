//! `tandem tui` end to end under a real terminal (tmux), as a user drives it: a prompt and its
//! streamed answer, an approved `/sh` command and its output in the pane, a resize, an
//! interrupted `/sleep` turn, and Ctrl-C twice, after which the shell prints the exit code on
//! the restored normal screen. The same flow runs in-process, with `--spawn` (a child
//! app-server over stdio) and with `--connect` (a websocket app-server). A panic, of the app
//! loop or of one of its tasks, leaves the shell's terminal restored. Every wait has a
//! deadline. Skips (saying so) where tmux is not installed; `.ci/run` installs it.

mod stalled;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

fn home() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tandem-tui-{}-{n}", std::process::id()))
}

fn tmux_installed() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// A tmux server of our own with one session, `tui`, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(name: &str, shell_command: &str) -> Self {
        let tmux = Self {
            socket: format!("tandem-tui-test-{name}-{}", std::process::id()),
        };
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "tui",
            "-x",
            "100",
            "-y",
            "30",
            shell_command,
        ]);
        tmux
    }

    fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket]);
        command
    }

    fn run(&self, args: &[&str]) -> String {
        let output = self.command().args(args).output().expect("tmux runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-t", "tui", "-p"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "tui"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    fn type_line(&self, line: &str) {
        self.keys(&["-l", line]);
        self.keys(&["Enter"]);
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

/// The width of the composer's box (its top border), the screen's width as the TUI sees it.
fn box_width(screen: &str) -> Option<usize> {
    screen
        .lines()
        .find(|line| line.starts_with("┌ message"))
        .map(|line| line.trim_end().chars().count())
}

/// Drives one session through the whole flow. `args` follow `tandem tui`.
fn session(name: &str, home: &Path, args: &str) {
    let shell = format!(
        "env -u TANDEM_LOG TANDEM_HOME='{}' '{}' tui {args}; echo \"tui exited with $?\"; sleep 600",
        home.display(),
        env!("CARGO_BIN_EXE_tandem"),
    );
    let tmux = Tmux::start(name, &shell);
    tmux.wait_for("the status line of a new chat", |screen| {
        screen.contains("idle │") && screen.contains("new thread")
    });

    tmux.type_line("hello");
    tmux.wait_for("the streamed answer", |screen| {
        screen.contains("› hello") && screen.contains("You said: \"hello\"")
    });

    tmux.type_line("/sh printf 'one\\ntwo\\n'");
    tmux.wait_for("the approval prompt", |screen| {
        screen.contains("Run printf 'one\\ntwo\\n' ?")
            && screen.contains("[y] accept  [a] accept for session  [n] decline")
            && screen.contains("waiting for approval")
    });
    tmux.keys(&["y"]);
    // One predicate for the whole screen: a capture can fall between two writes of a frame.
    tmux.wait_for("the command's output in its pane", |screen| {
        screen.contains("┌ exit 0 · $ printf")
            && screen.lines().any(|line| line.starts_with("│one "))
            && screen.lines().any(|line| line.starts_with("│two "))
            && screen.contains("[exit 0] $ printf")
            && box_width(screen) == Some(100)
    });

    tmux.run(&["resize-window", "-t", "tui", "-x", "80", "-y", "24"]);
    tmux.wait_for("the layout at the new size", |screen| {
        box_width(screen) == Some(80)
            && screen.lines().count() <= 24
            && screen.lines().any(|line| line.starts_with("│one "))
            && screen.contains("You said: \"hello\"")
    });

    tmux.type_line("/sleep 60000");
    tmux.wait_for("the running turn", |screen| {
        screen.contains("running │") && screen.contains("Esc interrupts")
    });
    tmux.keys(&["Escape"]);
    tmux.wait_for("the interrupted turn", |screen| {
        screen.contains("(interrupted)") && screen.contains("idle │")
    });

    tmux.keys(&["C-c"]);
    tmux.wait_for("the Ctrl-C hint", |screen| {
        screen.contains("Ctrl-C again quits")
    });
    tmux.keys(&["C-c"]);
    let screen = tmux.wait_for("the exit on the restored screen", |screen| {
        screen.contains("tui exited with 130")
    });
    // Back on the normal screen: none of the TUI's frame is left.
    assert!(!screen.contains("┌ message"), "{screen}");
}

#[test]
fn tui_in_process() {
    if !tmux_installed() {
        eprintln!("SKIPPED tui_in_process: tmux is not installed (apt-get install -y tmux)");
        return;
    }
    session("in-process", &home(), "");
}

#[test]
fn tui_with_a_spawned_app_server() {
    if !tmux_installed() {
        eprintln!("SKIPPED tui_with_a_spawned_app_server: tmux is not installed");
        return;
    }
    let spawn = format!(
        "--spawn \"'{}' app-server --listen stdio://\"",
        env!("CARGO_BIN_EXE_tandem")
    );
    session("spawn", &home(), &spawn);
}

/// A websocket app-server, killed when dropped.
struct WebSocketServer {
    child: Child,
    url: String,
}

impl WebSocketServer {
    fn start(home: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tandem"))
            .args(["app-server", "--listen", "ws://127.0.0.1:0"])
            .env("TANDEM_HOME", home)
            .env_remove("TANDEM_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the app-server starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let (found, address) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if let Some(address) = line.trim().strip_prefix("listening on: ") {
                    let _ = found.send(address.to_owned());
                }
            }
        });
        let url = address
            .recv_timeout(DEADLINE)
            .expect("the app-server prints its address");
        Self { child, url }
    }
}

impl Drop for WebSocketServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn tui_connected_to_a_websocket_app_server() {
    if !tmux_installed() {
        eprintln!("SKIPPED tui_connected_to_a_websocket_app_server: tmux is not installed");
        return;
    }
    let home = home();
    let server = WebSocketServer::start(&home);
    session("connect", &home, &format!("--connect {}", server.url));
}

/// Runs `tandem tui` made to panic (`TANDEM_TUI_TEST_PANIC=how`, honoured by debug builds
/// only, as these tests use) and checks the shell's terminal afterwards: the panic's message
/// on the normal screen (the hook restored the terminal before the message was printed: a
/// message printed on the alternate screen would be gone with it), the exit code, canonical
/// mode and echo back on (`stty -a`), and a line typed into `read` echoed and read back, which
/// raw mode would never deliver.
fn panic_session(how: &str, message: &str, exit_code: i32) -> String {
    let shell = format!(
        "env -u TANDEM_LOG -u RUST_BACKTRACE TANDEM_TUI_TEST_PANIC={how} TANDEM_HOME='{}' '{}' tui; \
         echo \"tui exited with $?\"; \
         echo \"modes: $(stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' ')\"; \
         read line; echo \"read back: $line\"; sleep 600",
        home().display(),
        env!("CARGO_BIN_EXE_tandem"),
    );
    let tmux = Tmux::start(&format!("panic-{how}"), &shell);
    let screen = tmux.wait_for("the restored shell", |screen| {
        screen.contains(&format!("tui exited with {exit_code}")) && screen.contains("modes: ")
    });
    assert!(screen.contains(message), "no panic message:\n{screen}");
    assert!(
        screen.contains("modes: icanon echo"),
        "the terminal is not back in cooked mode:\n{screen}"
    );
    assert!(
        !screen.contains("┌ message"),
        "the TUI's frame is left:\n{screen}"
    );
    tmux.type_line("typed after the panic");
    tmux.wait_for("the typed line echoed and read back", |screen| {
        screen.lines().any(|line| line == "typed after the panic")
            && screen.contains("read back: typed after the panic")
    })
}

#[test]
fn a_panic_of_the_app_loop_restores_the_terminal() {
    if !tmux_installed() {
        eprintln!("SKIPPED a_panic_of_the_app_loop_restores_the_terminal: tmux is not installed");
        return;
    }
    // The default panic exit code: the panic unwound out of main.
    panic_session(
        "main",
        "TANDEM_TUI_TEST_PANIC=main: the app loop panics as asked",
        101,
    );
}

#[test]
fn a_panic_of_a_task_restores_the_terminal_and_stops_the_app() {
    if !tmux_installed() {
        eprintln!(
            "SKIPPED a_panic_of_a_task_restores_the_terminal_and_stops_the_app: tmux is not installed"
        );
        return;
    }
    // The runtime survives a task's panic; the app must not go on drawing on the restored
    // screen: it stops and says why.
    let screen = panic_session(
        "task",
        "TANDEM_TUI_TEST_PANIC=task: a task panics as asked",
        1,
    );
    assert!(
        screen.contains("tandem: the TUI stopped after an internal panic"),
        "{screen}"
    );
}

/// `tandem tui` on a terminal that nobody reads any more (a pseudo-terminal whose master side
/// the test never reads, as a frozen emulator leaves it): resizes make it redraw the whole
/// screen until a write to the terminal blocks its thread. SIGTERM is still taken, and the
/// shutdown deadline (shortened for the test) ends tandem with 70 instead of leaving it blocked
/// for ever, as it did when the signal was awaited on the thread that writes.
#[test]
fn tui_on_a_terminal_nobody_reads_still_ends_on_sigterm() {
    use std::os::unix::process::CommandExt as _;

    let start_size = nix::pty::Winsize {
        ws_row: 200,
        ws_col: 300,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&start_size), None).expect("a pseudo-terminal");
    let slave = |pty: &nix::pty::OpenptyResult| Stdio::from(pty.slave.try_clone().expect("dup"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .arg("tui")
        .env("TANDEM_HOME", home())
        .env("TERM", "xterm-256color")
        .env("TANDEM_FAULT_SHUTDOWN_DEADLINE_MS", "1500")
        .env_remove("TANDEM_LOG")
        .stdin(slave(&pty))
        .stdout(slave(&pty))
        .stderr(slave(&pty))
        .process_group(0)
        .spawn()
        .expect("tandem starts");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid fits i32"));
    let main_thread_waits = || {
        std::fs::read_to_string(format!("/proc/{}/wchan", child.id()))
            .is_ok_and(|at| at == "wait_woken" || at.contains("tty_write"))
    };
    let since = Instant::now();
    let mut redraws = 0u16;
    while !main_thread_waits() {
        assert!(
            since.elapsed() < DEADLINE,
            "tandem tui never blocked on its terminal"
        );
        // Two sizes in turn: each change is a full redraw of 60 000 cells.
        let winsize = rustix::termios::Winsize {
            ws_row: 200 + redraws % 2,
            ws_col: 300 - redraws % 2,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(&pty.master, winsize).expect("resize");
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGWINCH);
        redraws += 1;
        thread::sleep(Duration::from_millis(100));
    }
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signal tandem");
    let status = stalled::wait_with_deadline(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(70), "{status:?}");
    // The exit skipped the UI's own restoring, and the deadline did it: the shell that gets
    // the terminal back has its line editing and echo, not raw mode.
    let modes = rustix::termios::tcgetattr(&pty.slave).expect("the terminal's modes");
    let cooked = rustix::termios::LocalModes::ICANON | rustix::termios::LocalModes::ECHO;
    assert!(
        modes.local_modes.contains(cooked),
        "{:?}",
        modes.local_modes
    );
}
