//! The README's quick start, run exactly as written (issue 18), so the README cannot rot: the
//! lines between `<!-- quick-start -->` and `<!-- /quick-start -->` run one by one with `sh -c`
//! in a fresh directory, with a fresh `TANDEM_HOME`, and `tandem` first on `PATH`, and each
//! must do what the README says it does. The `config.toml` examples of "Using a real model"
//! must load in strict mode (no key tandem does not know).
//!
//! Which `tandem`: by default the binary these tests build (a link to it is the only thing on
//! the front of `PATH`). With `TANDEM_TEST_INSTALL=1` the README's install step runs too,
//! into a temporary root (`--root` appended), and its `tandem` is used instead: a full release
//! build, so it is left to a person or a nightly job.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One quick-start line may take this long (the spawned server included).
const LINE_DEADLINE: Duration = Duration::from_secs(60);

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(&path).expect("README.md is readable")
}

/// The lines of the fenced code block between `<!-- name -->` and `<!-- /name -->`.
fn section(readme: &str, name: &str) -> Vec<String> {
    let open = format!("<!-- {name} -->");
    let close = format!("<!-- /{name} -->");
    let start = readme
        .find(&open)
        .unwrap_or_else(|| panic!("README.md has no {open}"))
        + open.len();
    let end = start
        + readme[start..]
            .find(&close)
            .unwrap_or_else(|| panic!("README.md has no {close}"));
    let lines: Vec<String> = readme[start..end]
        .lines()
        .map(str::trim_end)
        .skip_while(|line| !line.starts_with("```"))
        .skip(1)
        .take_while(|line| !line.starts_with("```"))
        .map(str::to_owned)
        .collect();
    assert!(!lines.is_empty(), "{open} holds no code block");
    lines
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("readme-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// A directory holding the `tandem` to test, for the front of `PATH`.
fn tandem_bin_dir(scratch: &Path) -> PathBuf {
    if std::env::var_os("TANDEM_TEST_INSTALL").is_some_and(|value| value == "1") {
        return install(scratch);
    }
    let bin = scratch.join("bin");
    std::fs::create_dir_all(&bin).expect("bin directory");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_tandem"), bin.join("tandem"))
        .expect("tandem linked");
    bin
}

/// Runs the README's install step into `scratch/root` and returns its `bin`.
fn install(scratch: &Path) -> PathBuf {
    let readme = readme();
    let lines = section(&readme, "install");
    assert_eq!(lines.len(), 1, "one install command: {lines:?}");
    let root = scratch.join("root");
    let command = format!("{} --root '{}'", lines[0], root.display());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let began = Instant::now();
    let status = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(&workspace)
        .status()
        .expect("sh runs");
    eprintln!("{command}: {status} after {:?}", began.elapsed());
    assert!(status.success(), "{command} failed: {status}");
    let bin = root.join("bin");
    assert!(
        bin.join("tandem").is_file(),
        "no tandem in {}",
        bin.display()
    );
    bin
}

/// Runs `line` with `sh -c` the way a new user's shell would: in `work`, with `bin` first on
/// `PATH`, `home` as `TANDEM_HOME`, no `TANDEM_LOG`, no API key, and no terminal.
fn run_line(line: &str, bin: &Path, home: &Path, work: &Path) -> Output {
    let path = std::env::join_paths(std::iter::once(bin.to_owned()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH joins");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(work)
        .env("PATH", path)
        .env("TANDEM_HOME", home)
        .env_remove("TANDEM_LOG")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let deadline = Instant::now() + LINE_DEADLINE;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("`{line}` did not finish within {LINE_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// What each quick-start line must print: (the line's start, stdout needles, stderr needles).
/// A line of the README without an entry fails the test, so a new line comes with its check.
const EXPECTED: &[(&str, &[&str], &[&str])] = &[
    ("tandem exec -- echo", &["hello from a command\n"], &[]),
    (
        "tandem run \"hello\"",
        &["You said: \"hello\"\n"],
        &["the scripted test agent answers"],
    ),
    (
        "printf 'hello\\n/sh echo hi\\ny\\n' | tandem chat",
        &[
            "You said: \"hello\"\n",
            "Allow the agent to run `echo hi`? [y/n]",
            "\nhi\n",
        ],
        &["the scripted test agent answers"],
    ),
    (
        "tandem run --spawn 'tandem app-server --listen stdio://'",
        &["You said: \"hello over stdio\"\n"],
        &["the scripted test agent answers"],
    ),
];

#[test]
fn the_quick_start_runs_as_written() {
    let readme = readme();
    let lines = section(&readme, "quick-start");
    let scratch = scratch("quick-start");
    let bin = tandem_bin_dir(&scratch);
    let (home, work) = (scratch.join("home"), scratch.join("work"));
    std::fs::create_dir_all(&work).expect("work directory");

    let mut transcript = String::new();
    for line in &lines {
        let output = run_line(line, &bin, &home, &work);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        transcript.push_str(&format!("$ {line}\n{stdout}{stderr}"));
        assert!(
            output.status.success(),
            "`{line}` failed ({}):\nstdout: {stdout}\nstderr: {stderr}",
            output.status
        );
        let (_, out_needles, err_needles) = EXPECTED
            .iter()
            .find(|(start, _, _)| line.starts_with(start))
            .unwrap_or_else(|| panic!("no expectation for the README line `{line}`: add one"));
        for needle in *out_needles {
            assert!(
                stdout.contains(needle),
                "`{line}`: stdout lacks {needle:?}:\n{stdout}"
            );
        }
        for needle in *err_needles {
            assert!(
                stderr.contains(needle),
                "`{line}`: stderr lacks {needle:?}:\n{stderr}"
            );
        }
    }
    // `cargo test -- --nocapture` shows what a new user sees (stdout, then stderr, per line).
    println!("{transcript}");
}

#[test]
fn the_model_configurations_hold_only_known_keys() {
    let readme = readme();
    let scratch = scratch("configs");
    for name in ["config:openai", "config:ollama", "config:llama-cpp"] {
        let home = scratch.join(name.replace(':', "-"));
        std::fs::create_dir_all(&home).expect("home");
        std::fs::write(home.join("config.toml"), section(&readme, name).join("\n"))
            .expect("config written");
        let output = Command::new(env!("CARGO_BIN_EXE_tandem"))
            .args(["--strict-config", "exec", "--", "true"])
            .env("TANDEM_HOME", &home)
            .env_remove("TANDEM_LOG")
            .stdin(Stdio::null())
            .output()
            .expect("tandem runs");
        assert!(
            output.status.success() && output.stderr.is_empty(),
            "{name}: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
