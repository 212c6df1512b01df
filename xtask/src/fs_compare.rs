//! `cargo xtask fs-compare [--reference BIN] [--tandem BIN]`: runs one `fs/*` sequence
//! (successes and errors, then watches) against the reference app-server and against
//! `tandem app-server`, both over stdio, each in a temporary directory of the same layout, and
//! prints a table of the answers side by side (docs/protocol.md section 12, "The fs API
//! against the reference").
//!
//! Answers are normalized before they are compared: the temporary root becomes `$ROOT`,
//! `createdAtMs` and `modifiedAtMs` become `<ms>`, `fs/readDirectory` entries are sorted by
//! name (the reference lists them in the OS's order), and the `fs/changed` notifications of a
//! step are merged per watch into one sorted set (how a burst splits into notifications
//! depends on timing). A difference fails the command (exit 1) unless its step is listed in
//! [`INTENDED`]. It needs the reference, so it is not part of CI.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::stdio_server::{StdioServer, StdioServerError};

/// The reference binary when `--reference` is not given.
const DEFAULT_REFERENCE: &str = "codex";

/// How long one answer may take.
const ANSWER_LIMIT: Duration = Duration::from_secs(20);

/// How long a step that changes watched files collects `fs/changed`.
const COLLECT: Duration = Duration::from_millis(1500);

/// Steps whose answers differ on purpose, with why (docs/protocol.md section 12).
const INTENDED: &[(&str, &str)] = &[
    (
        "copy a file onto itself",
        "the reference truncates the file to nothing (when it may write it); Tandem refuses",
    ),
    (
        "read the file copied onto itself",
        "so the file keeps its contents in Tandem and is empty in the reference",
    ),
    (
        "create the path under them",
        "the reference does not always report a path created under directories that did not \
         exist when it was watched (one run of this sequence in two missed it); Tandem does",
    ),
];

/// Longest table cell; longer answers are cut (they are compared whole).
const CELL_CHARS: usize = 140;

/// Why the comparison could not run.
#[derive(Debug, thiserror::Error)]
enum CompareError {
    #[error("{0}\nusage: cargo xtask fs-compare [--reference BIN] [--tandem BIN]")]
    Usage(String),
    #[error(transparent)]
    Child(#[from] StdioServerError),
    #[error("could not prepare {path}: {source}")]
    Layout {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not build the tandem binary: {0}")]
    Build(String),
}

/// One step of the sequence.
enum Step {
    /// A request: `(method, params)`, `$ROOT` in strings replaced by the root.
    Request(&'static str, Value),
    /// A change made by this harness, then `fs/changed` collected for [`COLLECT`].
    Change(fn(&Path) -> std::io::Result<()>),
}

fn request(label: &'static str, method: &'static str, params: Value) -> (&'static str, Step) {
    (label, Step::Request(method, params))
}

fn change(label: &'static str, act: fn(&Path) -> std::io::Result<()>) -> (&'static str, Step) {
    (label, Step::Change(act))
}

/// The sequence both servers run.
fn steps() -> Vec<(&'static str, Step)> {
    let r = |path: &str| format!("$ROOT{path}");
    vec![
        request(
            "read a file",
            "fs/readFile",
            json!({"path": r("/dir/a.txt")}),
        ),
        request(
            "read a relative path",
            "fs/readFile",
            json!({"path": "rel/a.txt"}),
        ),
        request("read an empty path", "fs/readFile", json!({"path": ""})),
        request(
            "read a path that is a number",
            "fs/readFile",
            json!({"path": 5}),
        ),
        request("read without a path", "fs/readFile", json!({})),
        request(
            "read a missing file",
            "fs/readFile",
            json!({"path": r("/missing")}),
        ),
        request(
            "read a directory",
            "fs/readFile",
            json!({"path": r("/dir")}),
        ),
        request(
            "read under a missing directory",
            "fs/readFile",
            json!({"path": r("/nodir/x")}),
        ),
        request(
            "read under a file",
            "fs/readFile",
            json!({"path": r("/dir/a.txt/x")}),
        ),
        request(
            "read with ..",
            "fs/readFile",
            json!({"path": r("/dir/../dir/a.txt")}),
        ),
        request(
            "write a file",
            "fs/writeFile",
            json!({"path": r("/dir/b.txt"), "dataBase64": "YmVl"}),
        ),
        request(
            "write an empty file",
            "fs/writeFile",
            json!({"path": r("/empty.txt"), "dataBase64": ""}),
        ),
        request(
            "write bad base64",
            "fs/writeFile",
            json!({"path": r("/w"), "dataBase64": "!!notbase64"}),
        ),
        request(
            "write unpadded base64",
            "fs/writeFile",
            json!({"path": r("/w"), "dataBase64": "eA"}),
        ),
        request(
            "write without data",
            "fs/writeFile",
            json!({"path": r("/w")}),
        ),
        request(
            "write under a missing directory",
            "fs/writeFile",
            json!({"path": r("/nodir/b"), "dataBase64": "eA=="}),
        ),
        request(
            "write onto a directory",
            "fs/writeFile",
            json!({"path": r("/dir"), "dataBase64": "eA=="}),
        ),
        request(
            "read what was written",
            "fs/readFile",
            json!({"path": r("/dir/b.txt")}),
        ),
        request(
            "create directories",
            "fs/createDirectory",
            json!({"path": r("/new/a/b")}),
        ),
        request(
            "create without parents",
            "fs/createDirectory",
            json!({"path": r("/new2/a/b"), "recursive": false}),
        ),
        request(
            "create an existing directory, not recursive",
            "fs/createDirectory",
            json!({"path": r("/dir"), "recursive": false}),
        ),
        request(
            "create an existing directory",
            "fs/createDirectory",
            json!({"path": r("/dir")}),
        ),
        request(
            "create over a file",
            "fs/createDirectory",
            json!({"path": r("/dir/a.txt")}),
        ),
        request(
            "create over a file, not recursive",
            "fs/createDirectory",
            json!({"path": r("/dir/a.txt"), "recursive": false}),
        ),
        request(
            "metadata of a file",
            "fs/getMetadata",
            json!({"path": r("/dir/a.txt")}),
        ),
        request(
            "metadata of a directory",
            "fs/getMetadata",
            json!({"path": r("/dir")}),
        ),
        request(
            "metadata of a link",
            "fs/getMetadata",
            json!({"path": r("/link")}),
        ),
        request(
            "metadata of a missing path",
            "fs/getMetadata",
            json!({"path": r("/missing")}),
        ),
        request(
            "list a directory",
            "fs/readDirectory",
            json!({"path": r("/dir")}),
        ),
        request("list the root", "fs/readDirectory", json!({"path": r("")})),
        request(
            "list a file",
            "fs/readDirectory",
            json!({"path": r("/dir/a.txt")}),
        ),
        request(
            "list a missing directory",
            "fs/readDirectory",
            json!({"path": r("/missing")}),
        ),
        request(
            "copy a file",
            "fs/copy",
            json!({"sourcePath": r("/dir/a.txt"), "destinationPath": r("/c.txt")}),
        ),
        request(
            "copy a file over another",
            "fs/copy",
            json!({"sourcePath": r("/dir/b.txt"), "destinationPath": r("/c.txt")}),
        ),
        request("read the copy", "fs/readFile", json!({"path": r("/c.txt")})),
        request(
            "copy a directory without recursive",
            "fs/copy",
            json!({"sourcePath": r("/dir"), "destinationPath": r("/dircopy")}),
        ),
        request(
            "copy a directory",
            "fs/copy",
            json!({"sourcePath": r("/dir"), "destinationPath": r("/dircopy"), "recursive": true}),
        ),
        request(
            "copy a directory again",
            "fs/copy",
            json!({"sourcePath": r("/dir"), "destinationPath": r("/dircopy"), "recursive": true}),
        ),
        request(
            "list the copy",
            "fs/readDirectory",
            json!({"path": r("/dircopy")}),
        ),
        request(
            "copy a missing source",
            "fs/copy",
            json!({"sourcePath": r("/missing"), "destinationPath": r("/x")}),
        ),
        request(
            "copy a file onto a directory",
            "fs/copy",
            json!({"sourcePath": r("/dir/a.txt"), "destinationPath": r("/dir")}),
        ),
        request(
            "copy a directory into itself",
            "fs/copy",
            json!({"sourcePath": r("/dir"), "destinationPath": r("/dir/sub/inner"), "recursive": true}),
        ),
        request(
            "copy a directory onto itself",
            "fs/copy",
            json!({"sourcePath": r("/dir"), "destinationPath": r("/dir"), "recursive": true}),
        ),
        request(
            "copy a link",
            "fs/copy",
            json!({"sourcePath": r("/link"), "destinationPath": r("/linkcopy")}),
        ),
        request(
            "metadata of the copied link",
            "fs/getMetadata",
            json!({"path": r("/linkcopy")}),
        ),
        request(
            "copy a file onto itself",
            "fs/copy",
            json!({"sourcePath": r("/selfcopy"), "destinationPath": r("/selfcopy")}),
        ),
        request(
            "read the file copied onto itself",
            "fs/readFile",
            json!({"path": r("/selfcopy")}),
        ),
        request(
            "remove a missing path",
            "fs/remove",
            json!({"path": r("/missing")}),
        ),
        request(
            "remove a missing path, force false",
            "fs/remove",
            json!({"path": r("/missing"), "force": false}),
        ),
        request(
            "remove a full directory, not recursive",
            "fs/remove",
            json!({"path": r("/dircopy"), "recursive": false}),
        ),
        request(
            "remove an empty directory, not recursive",
            "fs/remove",
            json!({"path": r("/emptydir"), "recursive": false}),
        ),
        request(
            "remove a directory",
            "fs/remove",
            json!({"path": r("/dircopy")}),
        ),
        request(
            "remove a file, not recursive",
            "fs/remove",
            json!({"path": r("/c.txt"), "recursive": false}),
        ),
        request("remove a link", "fs/remove", json!({"path": r("/link")})),
        request(
            "the link's target survives",
            "fs/getMetadata",
            json!({"path": r("/dir/a.txt")}),
        ),
        request(
            "remove a relative path",
            "fs/remove",
            json!({"path": "relative"}),
        ),
        request(
            "list the root after",
            "fs/readDirectory",
            json!({"path": r("")}),
        ),
        request(
            "unwatch an unknown id",
            "fs/unwatch",
            json!({"watchId": "nope"}),
        ),
        request("unwatch without an id", "fs/unwatch", json!({})),
        request(
            "watch a missing path",
            "fs/watch",
            json!({"path": r("/later"), "watchId": "later"}),
        ),
        request(
            "watch a relative path",
            "fs/watch",
            json!({"path": "rel", "watchId": "rel"}),
        ),
        request(
            "watch a directory",
            "fs/watch",
            json!({"path": r("/dir"), "watchId": "dir"}),
        ),
        request(
            "watch with a taken id",
            "fs/watch",
            json!({"path": r("/dir"), "watchId": "dir"}),
        ),
        request(
            "watch a file",
            "fs/watch",
            json!({"path": r("/dir/a.txt"), "watchId": "file"}),
        ),
        request(
            "watch a path with ..",
            "fs/watch",
            json!({"path": r("/new/../new"), "watchId": "dotted"}),
        ),
        request(
            "watch a path under missing directories",
            "fs/watch",
            json!({"path": r("/x/y/z"), "watchId": "deep"}),
        ),
        change("create a file in the watched directory", |root| {
            std::fs::write(root.join("dir/new.txt"), "n")
        }),
        change("change the watched file", |root| {
            std::fs::write(root.join("dir/a.txt"), "changed")
        }),
        change("a file two levels down (not reported)", |root| {
            std::fs::write(root.join("dir/sub/deep"), "d")
        }),
        change("a burst of 50 files", |root| {
            (0..50).try_for_each(|index| {
                std::fs::write(root.join(format!("dir/burst{index:02}")), "b")
            })
        }),
        change("create the missing watched path", |root| {
            std::fs::create_dir(root.join("later"))
        }),
        change("a child of the path created later", |root| {
            std::fs::write(root.join("later/child"), "c")
        }),
        change("a child of the path watched with ..", |root| {
            std::fs::write(root.join("new/child"), "c")
        }),
        change("create the missing directories", |root| {
            std::fs::create_dir_all(root.join("x/y"))
        }),
        change("create the path under them", |root| {
            std::fs::write(root.join("x/y/z"), "z")
        }),
        request("unwatch", "fs/unwatch", json!({"watchId": "dir"})),
        request("unwatch again", "fs/unwatch", json!({"watchId": "dir"})),
        request("unwatch the file", "fs/unwatch", json!({"watchId": "file"})),
        change("a change after unwatch (not reported)", |root| {
            std::fs::write(root.join("dir/after.txt"), "a")
        }),
    ]
}

/// The layout both servers start from.
fn layout(root: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root.join("dir/sub"))?;
    std::fs::create_dir_all(root.join("emptydir"))?;
    std::fs::write(root.join("dir/a.txt"), "hello")?;
    std::fs::write(root.join("selfcopy"), "keep me")?;
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("dir/a.txt"), root.join("link"))?;
    Ok(())
}

/// `cargo xtask fs-compare ARGS`.
pub(crate) fn run(args: &[String]) -> ExitCode {
    crate::steps::exit_code("fs-compare", run_checked(args))
}

fn run_checked(args: &[String]) -> Result<bool, CompareError> {
    let mut reference = PathBuf::from(DEFAULT_REFERENCE);
    let mut tandem = None;
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let value = rest
            .next()
            .ok_or_else(|| CompareError::Usage(format!("{flag} needs a value")))?;
        match flag.as_str() {
            "--reference" => reference = PathBuf::from(value),
            "--tandem" => tandem = Some(PathBuf::from(value)),
            other => return Err(CompareError::Usage(format!("unknown argument {other}"))),
        }
    }
    let tandem = match tandem {
        Some(path) => path,
        None => tandem_test_support::binary::build_tandem_binary()
            .map_err(|error| CompareError::Build(error.to_string()))?,
    };
    let work = std::env::temp_dir().join(format!("tandem-fs-compare-{}", std::process::id()));
    let reference_answers = run_server(
        "reference",
        Command::new(&reference).args(["app-server", "--listen", "stdio://"]),
        &work.join("reference"),
        "CODEX_HOME",
    )?;
    let tandem_answers = run_server(
        "tandem",
        Command::new(&tandem).arg("app-server"),
        &work.join("tandem"),
        "TANDEM_HOME",
    )?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(report(&reference_answers, &tandem_answers))
}

/// One server's normalized answer to every step.
fn run_server(
    name: &str,
    command: &mut Command,
    work: &Path,
    home_variable: &str,
) -> Result<Vec<Value>, CompareError> {
    let root = work.join("root");
    let home = work.join("home");
    let prepare = |path: &Path, result: std::io::Result<()>| {
        result.map_err(|source| CompareError::Layout {
            path: path.to_owned(),
            source,
        })
    };
    prepare(&home, std::fs::create_dir_all(&home))?;
    prepare(&root, std::fs::create_dir_all(&root))?;
    prepare(&root, layout(&root))?;
    let mut server = Server::start(name, command, &home, home_variable)?;
    let root_text = root.display().to_string();
    let mut answers = Vec::new();
    for (_, step) in steps() {
        let answer = match step {
            Step::Request(method, params) => {
                let params: Value =
                    serde_json::from_str(&params.to_string().replace("$ROOT", &root_text))
                        .expect("JSON stays JSON");
                server.call(method, params)?
            }
            Step::Change(act) => {
                prepare(&root, act(&root))?;
                server.collect_changes(COLLECT)
            }
        };
        answers.push(normalize(answer, &root_text));
    }
    server.stop();
    Ok(answers)
}

/// A server of the comparison, in its own home, and the `fs/changed` params seen while
/// waiting for answers, for the next collection.
struct Server {
    inner: StdioServer,
    changes: Vec<Value>,
}

impl Server {
    fn start(
        name: &str,
        command: &mut Command,
        home: &Path,
        home_variable: &str,
    ) -> Result<Self, CompareError> {
        command.env(home_variable, home);
        let inner = StdioServer::start(name, command, "fs-compare", None, ANSWER_LIMIT)?;
        Ok(Self {
            inner,
            changes: Vec::new(),
        })
    }

    /// Sends a request and returns `{"result": ...}` or `{"error": {code, message}}`.
    fn call(&mut self, method: &str, params: Value) -> Result<Value, CompareError> {
        let changes = &mut self.changes;
        let answer = self.inner.call(method, params, ANSWER_LIMIT, |message| {
            if message["method"] == "fs/changed" {
                changes.push(message["params"].clone());
            }
        })?;
        Ok(match answer.get("error") {
            Some(error) => json!({"error": {"code": error["code"], "message": error["message"]}}),
            None => answer,
        })
    }

    /// The `fs/changed` of the next `window`, merged per watch: `{watchId: [paths]}`.
    fn collect_changes(&mut self, window: Duration) -> Value {
        let deadline = Instant::now() + window;
        while let Some(message) = self.inner.next_message(deadline) {
            if message["method"] == "fs/changed" {
                self.changes.push(message["params"].clone());
            }
        }
        let mut merged =
            std::collections::BTreeMap::<String, std::collections::BTreeSet<String>>::new();
        for change in self.changes.drain(..) {
            let paths = merged
                .entry(change["watchId"].as_str().unwrap_or_default().to_owned())
                .or_default();
            for path in change["changedPaths"].as_array().into_iter().flatten() {
                paths.insert(path.as_str().unwrap_or_default().to_owned());
            }
        }
        json!({"fs/changed": merged})
    }

    fn stop(self) {
        self.inner.stop();
    }
}

/// The answer with the root, times and listing order taken out.
fn normalize(answer: Value, root: &str) -> Value {
    let text = answer.to_string().replace(root, "$ROOT");
    let mut value: Value = serde_json::from_str(&text).expect("JSON stays JSON");
    if let Some(result) = value.get_mut("result") {
        for key in ["createdAtMs", "modifiedAtMs"] {
            if let Some(time) = result.get_mut(key) {
                *time = json!("<ms>");
            }
        }
        if let Some(Value::Array(entries)) = result.get_mut("entries") {
            entries.sort_by_key(|entry| entry["fileName"].as_str().unwrap_or_default().to_owned());
        }
    }
    if let Some(Value::String(message)) = value.pointer_mut("/error/message")
        && message.len() > 300
    {
        message.truncate(300);
    }
    value
}

/// Prints the table; whether every difference is intended.
fn report(reference: &[Value], tandem: &[Value]) -> bool {
    println!("| # | step | reference | tandem | |");
    println!("|---|---|---|---|---|");
    let mut unexpected = 0;
    for (index, ((label, _), (ours, theirs))) in
        steps().iter().zip(tandem.iter().zip(reference)).enumerate()
    {
        let verdict = if ours == theirs {
            "same".to_owned()
        } else if let Some((_, why)) = INTENDED.iter().find(|(step, _)| step == label) {
            format!("differs (intended: {why})")
        } else {
            unexpected += 1;
            "**DIFFERS**".to_owned()
        };
        let cell = |value: &Value| {
            let text = value.to_string().replace('|', "\\|");
            match text.char_indices().nth(CELL_CHARS) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text,
            }
        };
        let theirs_cell = cell(theirs);
        let ours_cell = if ours == theirs {
            "same".to_owned()
        } else {
            cell(ours)
        };
        println!(
            "| {} | {label} | `{theirs_cell}` | `{ours_cell}` | {verdict} |",
            index + 1
        );
    }
    println!();
    println!(
        "fs-compare: {} steps, {} differ unexpectedly",
        reference.len(),
        unexpected
    );
    unexpected == 0
}
