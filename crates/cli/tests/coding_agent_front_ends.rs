//! issue 29, point 8, end to end: what `tandem run`, `tandem chat` and `tandem tui` show of a
//! coding agent's turn, driven through the scripted agent's `/patch`, `/plan` and `/think`.
//! A patch to a file outside the thread's working directory (the only writable root besides
//! /tmp, so the files live under the target directory) needs approval: `chat` and `tui` (under
//! tmux, as a user drives them) show its diff and ask, and the file changes when the user
//! approves and stays as it was when they decline; `run` approves with `--yes` and declines
//! without a terminal; `chat` through a pipe prints the same without colour. The plan is
//! replaced in place; reasoning is folded to one line. Skips the tmux tests (saying so) where
//! tmux is not installed; `.ci/run` installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

/// A fresh directory with `home` (TANDEM_HOME), `work` (the session's working directory) and
/// `outside` (beyond the writable roots) holding `a.txt` and `b.txt`, each `keep\nold\n`.
struct Dirs {
    root: PathBuf,
}

impl Dirs {
    fn new(name: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("tandem-agent-fe-{name}-{}-{n}", std::process::id()));
        // Every thread may write /tmp, so under it `outside` would need no approval and the
        // tests would fail on what they did not test.
        assert!(
            !root.starts_with("/tmp") && !root.starts_with(std::env::temp_dir()),
            "{} is under a writable root of every thread: run these tests from a checkout \
             (or a CARGO_TARGET_DIR) outside /tmp and $TMPDIR",
            root.display()
        );
        let _ = std::fs::remove_dir_all(&root);
        for dir in ["home", "work", "outside"] {
            std::fs::create_dir_all(root.join(dir)).expect("test directory");
        }
        for file in ["a.txt", "b.txt"] {
            std::fs::write(root.join("outside").join(file), "keep\nold\n").expect("test file");
        }
        Self { root }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    fn outside(&self, file: &str) -> PathBuf {
        self.root.join("outside").join(file)
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.outside(file)).expect("readable")
    }
}

/// The lines of a patch that turns `old` into `new` in `path`.
fn patch_lines(path: &Path) -> Vec<String> {
    vec![
        "*** Begin Patch".to_owned(),
        format!("*** Update File: {}", path.display()),
        "@@".to_owned(),
        " keep".to_owned(),
        "-old".to_owned(),
        "+new".to_owned(),
        "*** End Patch".to_owned(),
    ]
}

fn tmux_installed(test: &str) -> bool {
    let installed = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|output| output.status.success());
    if !installed {
        eprintln!("SKIPPED {test}: tmux is not installed (apt-get install -y tmux)");
    }
    installed
}

/// A tmux server of our own with one session, `s`, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(name: &str, cwd: &Path, shell_command: &str) -> Self {
        let tmux = Self {
            socket: format!("tandem-agent-fe-{name}-{}", std::process::id()),
        };
        let cwd = cwd.display().to_string();
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "s",
            "-c",
            &cwd,
            // Wide, so that a deep checkout's paths (the files live under the target
            // directory, outside /tmp's writable root) stay on one row.
            "-x",
            "220",
            "-y",
            "50",
            shell_command,
        ]);
        tmux
    }

    fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The screen and what scrolled off it, as text.
    fn screen(&self) -> String {
        self.run(&["capture-pane", "-t", "s", "-p", "-S", "-500"])
    }

    /// The same with the colours, as escape sequences.
    fn coloured_screen(&self) -> String {
        self.run(&["capture-pane", "-t", "s", "-p", "-e", "-S", "-500"])
    }

    /// Types `text` as is (`--`: a line may start with `-`).
    fn text(&self, text: &str) {
        self.run(&["send-keys", "-t", "s", "-l", "--", text]);
    }

    fn key(&self, key: &str) {
        self.run(&["send-keys", "-t", "s", key]);
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
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn tandem_shell(dirs: &Dirs, args: &str) -> String {
    format!(
        "env -u TANDEM_LOG -u NO_COLOR TANDEM_HOME='{}' '{}' {args}; sleep 600",
        dirs.home().display(),
        env!("CARGO_BIN_EXE_tandem")
    )
}

/// Answers the question the chat asks with `answer`, once the answer prompt (`?`) is shown.
fn answer(tmux: &Tmux, answer: &str) {
    tmux.wait_for("the answer prompt", |screen| {
        screen.lines().rev().find(|line| !line.trim().is_empty()) == Some("?")
    });
    tmux.text(answer);
    tmux.key("Enter");
}

/// `text` with every space and line break removed, to find a phrase the terminal wrapped.
fn without_whitespace(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// How many prompt rows the screen has: `> ` before a message's lines, `? ` before an answer
/// (the prompt after a message's last line may be either, as the turn may ask at once).
fn prompts(screen: &str) -> usize {
    screen
        .lines()
        .filter(|line| line.starts_with('>') || line.starts_with('?'))
        .count()
}

/// Types a message of several lines into `tandem chat`: each line but the last ends in `\`.
/// Each line is typed once the line editor shows its next prompt: it may drop keys typed
/// while it sets up a line (it asks the terminal where the cursor is).
fn chat_message(tmux: &Tmux, lines: &[String]) {
    for (index, line) in lines.iter().enumerate() {
        let before = prompts(&tmux.screen());
        tmux.text(line);
        if index + 1 < lines.len() {
            tmux.text("\\");
        }
        tmux.key("Enter");
        tmux.wait_for("the next prompt", |screen| prompts(screen) > before);
    }
}

#[test]
fn chat_shows_a_patch_asks_and_applies_or_declines_it() {
    if !tmux_installed("chat_shows_a_patch_asks_and_applies_or_declines_it") {
        return;
    }
    let dirs = Dirs::new("chat");
    let tmux = Tmux::start("chat", &dirs.work(), &tandem_shell(&dirs, "chat"));
    tmux.wait_for("prompt", |screen| {
        screen.lines().any(|line| line.starts_with('>'))
    });

    let mut message = vec!["/patch".to_owned()];
    message.extend(patch_lines(&dirs.outside("a.txt")));
    chat_message(&tmux, &message);
    let screen = tmux.wait_for("the approval question", |screen| {
        screen.contains("Apply these changes? [y = yes, a = yes for this session, n = no]")
    });
    let a = dirs.outside("a.txt").display().to_string();
    assert!(screen.contains(&format!("patch: update {a}")), "{screen}");
    for line in ["@@ -1,2 +1,2 @@", " keep", "-old", "+new"] {
        assert!(screen.lines().any(|row| row == line), "{line:?}: {screen}");
    }
    // Why it asks (long: it wraps on the terminal, at a space or inside a word depending on
    // how long the checkout's path is, and tmux drops the space a wrap ends on).
    assert!(
        without_whitespace(&screen).contains("outsidethewritableroots"),
        "{screen}"
    );
    // Removed lines red, added green, hunk headers cyan (tmux's rendering of the colours).
    let coloured = tmux.coloured_screen();
    assert!(coloured.contains("\x1b[31m-old"), "{coloured:?}");
    assert!(coloured.contains("\x1b[32m+new"), "{coloured:?}");
    assert!(coloured.contains("\x1b[36m"), "{coloured:?}");
    assert_eq!(
        dirs.read("a.txt"),
        "keep\nold\n",
        "nothing written before the answer"
    );
    answer(&tmux, "y");
    tmux.wait_for("the applied patch", |screen| {
        screen.contains(&format!("(patch applied: {a})"))
    });
    assert_eq!(dirs.read("a.txt"), "keep\nnew\n");

    let mut message = vec!["/patch".to_owned()];
    message.extend(patch_lines(&dirs.outside("b.txt")));
    chat_message(&tmux, &message);
    tmux.wait_for("the second approval question", |screen| {
        screen.matches("Apply these changes?").count() == 2
    });
    answer(&tmux, "n");
    let b = dirs.outside("b.txt").display().to_string();
    tmux.wait_for("the declined patch", |screen| {
        screen.contains(&format!("(patch declined; no file changed: {b})"))
    });
    assert_eq!(dirs.read("b.txt"), "keep\nold\n");

    // Two plans in one turn: the second replaces the first on the screen.
    chat_message(
        &tmux,
        &[
            r#"/plan {"explanation": "a small fix", "plan": [{"step": "read", "status": "in_progress"}, {"step": "fix", "status": "pending"}]}"#.to_owned(),
            r#"/plan {"plan": [{"step": "read", "status": "completed"}, {"step": "fix", "status": "in_progress"}]}"#.to_owned(),
            "/think weigh it | pick one".to_owned(),
        ],
    );
    let screen = tmux.wait_for("the reasoning line", |screen| {
        screen.contains("thinking: weigh it…")
    });
    assert_eq!(screen.matches("plan:").count(), 1, "{screen}");
    assert!(
        screen.contains("plan:\n  [x] read\n  [~] fix\nthinking: weigh it…"),
        "{screen}"
    );
}

#[test]
fn tui_shows_a_patch_asks_and_applies_or_declines_it() {
    if !tmux_installed("tui_shows_a_patch_asks_and_applies_or_declines_it") {
        return;
    }
    let dirs = Dirs::new("tui");
    let tmux = Tmux::start("tui", &dirs.work(), &tandem_shell(&dirs, "tui"));
    tmux.wait_for("the status line", |screen| screen.contains("idle │"));
    let send = |lines: &[String]| {
        for (index, line) in lines.iter().enumerate() {
            tmux.text(line);
            // Ctrl-J breaks the composer's line; Enter sends.
            tmux.key(if index + 1 < lines.len() {
                "C-j"
            } else {
                "Enter"
            });
        }
    };
    let mut message = vec!["/patch".to_owned()];
    message.extend(patch_lines(&dirs.outside("a.txt")));
    send(&message);
    let a = dirs.outside("a.txt").display().to_string();
    // All of it in one frame (a capture may catch a frame half drawn).
    tmux.wait_for("the diff and the approval prompt", |screen| {
        screen.contains(&format!("Apply the changes to {a} ?"))
            && screen.contains(&format!("[pending] patch: update {a}"))
            && ["@@ -1,2 +1,2 @@", " keep", "-old", "+new"]
                .iter()
                .all(|line| screen.lines().any(|row| row.trim_end() == *line))
            && screen.contains("waiting for approval")
    });
    tmux.key("y");
    tmux.wait_for("the applied patch", |screen| {
        screen.contains(&format!("[applied] patch: update {a}"))
    });
    assert_eq!(dirs.read("a.txt"), "keep\nnew\n");

    let mut message = vec!["/patch".to_owned()];
    message.extend(patch_lines(&dirs.outside("b.txt")));
    send(&message);
    let b = dirs.outside("b.txt").display().to_string();
    tmux.wait_for("the second approval prompt", |screen| {
        screen.contains(&format!("Apply the changes to {b} ?"))
    });
    tmux.key("n");
    tmux.wait_for("the declined patch", |screen| {
        screen.contains(&format!("[declined] patch: update {b}"))
    });
    assert_eq!(dirs.read("b.txt"), "keep\nold\n");

    // Reasoning folded, then expanded with Ctrl-R.
    send(&["/think weigh it | pick one".to_owned()]);
    tmux.wait_for("folded reasoning", |screen| {
        screen.contains("▸ thinking: weigh it…")
    });
    tmux.key("C-r");
    tmux.wait_for("expanded reasoning", |screen| {
        screen.contains("▾ thinking (Ctrl-R folds)\n  weigh it\n  pick one")
    });
}

fn run(dirs: &Dirs, args: &[&str], prompt: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .env("TANDEM_HOME", dirs.home())
        .env_remove("TANDEM_LOG")
        .current_dir(dirs.work())
        .arg("run")
        .args(args)
        .arg(prompt)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tandem starts");
    let deadline = Instant::now() + DEADLINE;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("tandem run did not finish within {DEADLINE:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn run_shows_the_diff_and_follows_its_approval_rule() {
    let dirs = Dirs::new("run");
    let prompt = |file: &str| {
        let mut lines = vec!["/patch".to_owned()];
        lines.extend(patch_lines(&dirs.outside(file)));
        lines.push(r#"/plan {"plan": [{"step": "patch", "status": "completed"}]}"#.to_owned());
        lines.join("\n")
    };
    // No terminal on stdin and no --yes: declined, and said so.
    let declined = run(&dirs, &[], &prompt("a.txt"));
    let stderr = String::from_utf8_lossy(&declined.stderr);
    assert_eq!(declined.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("\n-old\n+new\n"),
        "the diff, without colour: {stderr}"
    );
    assert!(
        stderr.contains("tandem: declined the file change"),
        "{stderr}"
    );
    assert!(
        stderr.contains("(patch declined; no file changed: "),
        "{stderr}"
    );
    assert!(stderr.contains("plan:\n  [x] patch\n"), "{stderr}");
    assert!(
        !stderr.contains('\x1b'),
        "no colour off a terminal: {stderr:?}"
    );
    assert_eq!(dirs.read("a.txt"), "keep\nold\n");
    // --yes approves.
    let applied = run(&dirs, &["--yes"], &prompt("a.txt"));
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(stderr.contains("(patch applied: "), "{stderr}");
    assert_eq!(dirs.read("a.txt"), "keep\nnew\n");
}

#[test]
fn chat_through_a_pipe_shows_the_diff_without_colour_and_takes_the_answer() {
    let dirs = Dirs::new("chat-pipe");
    let mut lines = vec!["/patch".to_owned()];
    lines.extend(patch_lines(&dirs.outside("a.txt")));
    let mut input = lines.join("\\\n");
    input.push_str("\ny\n");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .env("TANDEM_HOME", dirs.home())
        .env_remove("TANDEM_LOG")
        .current_dir(dirs.work())
        .arg("chat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tandem starts");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), input.as_bytes())
        .expect("input written");
    let deadline = Instant::now() + DEADLINE;
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "chat did not finish");
        thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(" keep\n-old\n+new\n(the patch changes "),
        "{stdout}"
    );
    assert!(
        stdout.contains("Apply these changes? [y = yes, a = yes for this session, n = no]\n"),
        "{stdout}"
    );
    assert!(stdout.contains("(patch applied: "), "{stdout}");
    assert!(
        !stdout.contains('\x1b'),
        "no colour into a pipe: {stdout:?}"
    );
    assert_eq!(dirs.read("a.txt"), "keep\nnew\n");
}
