//! undo29 (issue 29, point 9): `/undo` in `tandem chat`, the binary run as a user runs it
//! through pipes against the in-process server and its scripted agent. A `tandem run` turn
//! patches files in the project (the scripted agent's `/patch`); `tandem chat` resumes its
//! thread and `/undo` drops the turn and puts the files back, saying which; a file the user
//! changed since is left alone and named; a thread without turns has nothing to undo.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

/// A fresh directory under the target's temporary directory.
fn fresh(what: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "tandem-chat-undo-{what}-{}-{n}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::canonicalize(dir).expect("canonical")
}

/// `tandem` with `home` as its home, run in `cwd`.
fn tandem(home: &Path, cwd: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
    command
        .env("TANDEM_HOME", home)
        .env_remove("TANDEM_LOG")
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `command` with `input` on stdin, failing the test after [`DEADLINE`].
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

/// `tandem run --json PROMPT` in `cwd`; returns the new thread's id.
fn run_turn(home: &Path, cwd: &Path, prompt: &str) -> String {
    let mut command = tandem(home, cwd);
    command.args(["run", "--json", prompt]);
    let output = run_with(command, None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let started: serde_json::Value =
        serde_json::from_str(stdout.lines().next().expect("a first line")).expect("JSON");
    assert_eq!(started["method"], "thread/started", "{stdout}");
    started["params"]["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned()
}

#[test]
fn undo_in_chat_restores_the_files_of_the_last_turn_and_names_those_changed_since() {
    let (home, project) = (fresh("home"), fresh("project"));
    std::fs::write(project.join("a.txt"), "one\n").unwrap();
    std::fs::write(project.join("b.txt"), "bee\n").unwrap();
    let patch = "/patch\n*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n\
                 *** Update File: b.txt\n@@\n-bee\n+BEE\n*** Add File: new.txt\n+new\n\
                 *** End Patch";
    let thread_id = run_turn(&home, &project, patch);
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt")).unwrap(),
        "ONE\n"
    );
    // The user changes b.txt after the turn.
    std::fs::write(project.join("b.txt"), "mine\n").unwrap();

    let mut command = tandem(&home, &project);
    command.arg("chat");
    let output = run_with(
        command,
        Some(&format!("/resume {thread_id}\n/undo\n/undo\n")),
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);

    let at = |name: &str| project.join(name).display().to_string();
    assert!(stdout.contains("(the last turn is undone)\n"), "{stdout}");
    assert!(
        stdout.contains(&format!("restored {}\n", at("a.txt"))),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("restored {}\n", at("new.txt"))),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("left alone {}: it changed on disk", at("b.txt"))),
        "{stdout}"
    );
    // The second /undo finds no turn left.
    assert!(stdout.contains("(no turn to undo)\n"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("b.txt")).unwrap(),
        "mine\n"
    );
    assert!(!project.join("new.txt").exists());
}
