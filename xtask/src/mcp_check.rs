//! `cargo xtask mcp-check [--tandem BIN] [--reference BIN | --no-reference]`: Tandem's MCP
//! client against two real MCP servers (issue 30): `@modelcontextprotocol/server-everything`
//! (npm, Node) and `mcp-server-time` (PyPI, Python), both over stdio.
//!
//! It installs them, at pinned versions, under `target/mcp-check/` (`npm install --prefix`,
//! and a venv with pip; `MCP_CHECK_PYTHON` names the Python that makes the venv, 3.10 or
//! later), writes a `config.toml` naming both under `[mcp_servers.*]` into a fresh
//! `TANDEM_HOME`, starts `tandem app-server` over stdio and checks, as a JSON-RPC client:
//! both servers reach `connected` in `mcpServerStatus/list` with their tools listed;
//! `mcpServer/tool/call` of server-everything's `echo` and `get-sum` (its adding tool) and of
//! mcp-server-time's `get_current_time` answer what those tools compute;
//! `mcpServer/resource/read` of server-everything's first static resource answers it; and
//! `tandem mcp list` prints both servers connected with their tools.
//!
//! Then, unless `--no-reference`, the reference app-server (`codex app-server --listen
//! stdio://`, `CODEX_HOME` a fresh directory with the same `config.toml`) gets the same
//! requests, which it answers offline, and the answers are compared in a table (as
//! `cargo xtask fs-compare` does). Normalized first, because they legitimately differ there:
//! `runtimeStatus` (the reference answers `null`: its servers belong to a thread), keys whose
//! value is `null` (the reference leaves them out), the order of servers, tools and
//! resources, and the time `get_current_time` reads (`<datetime>`). Both advertise form and
//! URL elicitation, so server-everything offers both its elicitation tools to both.
//!
//! Exit 0 when every check passed and the answers agree, 1 when not, 2 when it could not
//! run. It needs the package registries (npm, PyPI) on its first run, so it is not in CI.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use crate::paths::target_dir;
use crate::stdio_server::{StdioServer, StdioServerError};
use serde_json::{Map, Value, json};

/// The npm package of server-everything and its pinned version.
const EVERYTHING: (&str, &str) = ("@modelcontextprotocol/server-everything", "2026.8.31");
/// The PyPI package of mcp-server-time and its pinned version.
const TIME: (&str, &str) = ("mcp-server-time", "2026.10.19");
/// The Python that creates the venv (the system's `python3`, which must be 3.10 or later);
/// `MCP_CHECK_PYTHON` overrides it.
const DEFAULT_PYTHON: &str = "python3";
/// The reference binary when `--reference` is not given.
const DEFAULT_REFERENCE: &str = "codex";
/// How long the servers may take to connect (Node and Python start in a few seconds).
const STARTUP_LIMIT: Duration = Duration::from_secs(60);
/// How long one answer may take.
const ANSWER_LIMIT: Duration = Duration::from_secs(30);
/// The text sent to `echo`.
const ECHOED: &str = "hello from mcp-check";
/// Longest table cell; longer answers are cut (they are compared whole).
const CELL_CHARS: usize = 120;

/// Why the check could not run (as opposed to a check failing).
#[derive(Debug, thiserror::Error)]
enum CheckError {
    #[error("{0}\nusage: cargo xtask mcp-check [--tandem BIN] [--reference BIN | --no-reference]")]
    Usage(String),
    #[error("`{command}` failed ({status}); see its output above (is the registry reachable?)")]
    Step { command: String, status: String },
    #[error("could not run `{command}`: {source}; is it installed and on PATH?")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("{server}: {what}")]
    Server { server: String, what: String },
    #[error(transparent)]
    Child(#[from] StdioServerError),
    #[error("could not write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What the command line asked for.
struct Options {
    tandem: Option<PathBuf>,
    /// `None`: `--no-reference`.
    reference: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Options, CheckError> {
    let mut options = Options {
        tandem: None,
        reference: Some(PathBuf::from(DEFAULT_REFERENCE)),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .map(PathBuf::from)
                .ok_or_else(|| CheckError::Usage(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--tandem" => options.tandem = Some(value("--tandem")?),
            "--reference" => options.reference = Some(value("--reference")?),
            "--no-reference" => options.reference = None,
            other => return Err(CheckError::Usage(format!("unknown argument {other}"))),
        }
    }
    Ok(options)
}

/// `cargo xtask mcp-check ARGS`.
pub(crate) fn run(args: &[String]) -> ExitCode {
    crate::steps::exit_code("mcp-check", run_checked(args))
}

fn step(command: &mut Command) -> Result<(), CheckError> {
    crate::steps::run_step(
        "mcp-check",
        command,
        |command, source| CheckError::Spawn { command, source },
        |command, status| CheckError::Step {
            command,
            status: status.to_string(),
        },
    )
}

/// The two servers' commands.
struct Installed {
    everything: PathBuf,
    time: PathBuf,
}

/// Installs both servers under `dir` unless the pinned versions are there already (a stamp
/// file records what was installed).
fn install(dir: &Path) -> Result<Installed, CheckError> {
    let stamp = dir.join("installed");
    let wanted = format!(
        "{}@{}\n{}=={}\n",
        EVERYTHING.0, EVERYTHING.1, TIME.0, TIME.1
    );
    let installed = Installed {
        everything: dir.join("npm/node_modules/.bin/mcp-server-everything"),
        time: dir.join("venv/bin/mcp-server-time"),
    };
    let fresh = std::fs::read_to_string(&stamp).is_ok_and(|text| text == wanted)
        && installed.everything.exists()
        && installed.time.exists();
    if fresh {
        return Ok(installed);
    }
    std::fs::create_dir_all(dir).map_err(|source| CheckError::Write {
        path: dir.to_owned(),
        source,
    })?;
    step(
        Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(dir.join("npm"))
            .arg(format!("{}@{}", EVERYTHING.0, EVERYTHING.1)),
    )?;
    let venv = dir.join("venv");
    if !venv.join("bin/python").exists() {
        let python = std::env::var("MCP_CHECK_PYTHON").unwrap_or_else(|_| DEFAULT_PYTHON.into());
        step(Command::new(python).args(["-m", "venv"]).arg(&venv))?;
    }
    step(
        Command::new(venv.join("bin/python"))
            .args(["-m", "pip", "install", "--quiet"])
            .arg(format!("{}=={}", TIME.0, TIME.1)),
    )?;
    std::fs::write(&stamp, wanted).map_err(|source| CheckError::Write {
        path: stamp,
        source,
    })?;
    Ok(installed)
}

/// The `config.toml` both app-servers get.
fn config_toml(installed: &Installed) -> String {
    format!(
        "[mcp_servers.everything]\ncommand = {}\nargs = [\"stdio\"]\n\n\
         [mcp_servers.time]\ncommand = {}\nargs = [\"--local-timezone\", \"UTC\"]\n",
        Value::from(installed.everything.display().to_string()),
        Value::from(installed.time.display().to_string()),
    )
}

/// The `tandem` binary: `--tandem`, else a freshly built debug one.
fn tandem_binary(options: &Options) -> Result<PathBuf, CheckError> {
    if let Some(tandem) = &options.tandem {
        return Ok(tandem.clone());
    }
    step(Command::new(env!("CARGO")).args(["build", "-p", "tandem-cli", "--bin", "tandem"]))?;
    Ok(target_dir().join("debug/tandem"))
}

fn run_checked(args: &[String]) -> Result<bool, CheckError> {
    let options = parse(args)?;
    let dir = target_dir().join("mcp-check");
    let installed = install(&dir)?;
    let config = config_toml(&installed);
    let tandem = tandem_binary(&options)?;
    let work = std::env::temp_dir().join(format!("tandem-mcp-check-{}", std::process::id()));

    let tandem_home = prepare_home(&work.join("tandem"), &config)?;
    let ours = exchange(
        "tandem",
        Command::new(&tandem).arg("app-server"),
        &tandem_home,
        "TANDEM_HOME",
    )?;
    let mut passed = true;
    println!("## Tandem against server-everything and mcp-server-time\n");
    for (what, outcome) in checks(&ours) {
        match outcome {
            Ok(()) => println!("- ok: {what}"),
            Err(why) => {
                passed = false;
                println!("- **FAILED**: {what}: {why}");
            }
        }
    }
    let listed = Command::new(&tandem)
        .args(["mcp", "list"])
        .env("TANDEM_HOME", &tandem_home)
        .env_remove("TANDEM_LOG")
        .output()
        .map_err(|source| CheckError::Spawn {
            command: format!("{} mcp list", tandem.display()),
            source,
        })?;
    let printed = String::from_utf8_lossy(&listed.stdout);
    let expected = [
        "everything  connected",
        "time  connected",
        "tool mcp__everything__echo",
        "tool mcp__everything__get-sum",
        "tool mcp__time__get_current_time",
    ];
    match expected.iter().find(|line| !printed.contains(*line)) {
        None if listed.status.success() => println!("- ok: `tandem mcp list` prints both"),
        missing => {
            passed = false;
            println!(
                "- **FAILED**: `tandem mcp list` ({}) lacks {missing:?}:\n{printed}",
                listed.status
            );
        }
    }
    println!("\n`tandem mcp list`:\n\n```text\n{}```\n", printed);

    if let Some(reference) = &options.reference {
        let reference_home = prepare_home(&work.join("reference"), &config)?;
        let theirs = exchange(
            "reference",
            Command::new(reference).args(["app-server", "--listen", "stdio://"]),
            &reference_home,
            "CODEX_HOME",
        )?;
        passed &= report(&theirs, &ours);
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(passed)
}

fn prepare_home(home: &Path, config: &str) -> Result<PathBuf, CheckError> {
    let write = |path: &Path, result: std::io::Result<()>| {
        result.map_err(|source| CheckError::Write {
            path: path.to_owned(),
            source,
        })
    };
    write(home, std::fs::create_dir_all(home))?;
    let file = home.join("config.toml");
    write(&file, std::fs::write(&file, config))?;
    Ok(home.to_owned())
}

/// One server's answers, by step label, in order.
type Answers = Vec<(&'static str, Value)>;

/// Runs the sequence against one app-server: a thread (the reference starts its MCP servers
/// with it), the status list once both servers are up, the calls, a resource read.
fn exchange(
    name: &str,
    command: &mut Command,
    home: &Path,
    home_variable: &str,
) -> Result<Answers, CheckError> {
    let mut server = Server::start(name, command, home, home_variable)?;
    let thread = server.call("thread/start", json!({}))?;
    let thread_id = thread
        .pointer("/result/thread/id")
        .and_then(Value::as_str)
        .ok_or_else(|| CheckError::Server {
            server: name.to_owned(),
            what: format!("thread/start answered {thread}"),
        })?
        .to_owned();
    let status = server.wait_for_servers()?;
    let mut answers = vec![("mcpServerStatus/list", status.clone())];
    let call = |tool: &str, server_name: &str, arguments: Value| json!({"threadId": thread_id, "server": server_name, "tool": tool, "arguments": arguments});
    answers.push((
        "everything: echo",
        server.call(
            "mcpServer/tool/call",
            call("echo", "everything", json!({"message": ECHOED})),
        )?,
    ));
    answers.push((
        "everything: get-sum",
        server.call(
            "mcpServer/tool/call",
            call("get-sum", "everything", json!({"a": 2, "b": 3})),
        )?,
    ));
    answers.push((
        "time: get_current_time",
        server.call(
            "mcpServer/tool/call",
            call("get_current_time", "time", json!({"timezone": "UTC"})),
        )?,
    ));
    let uri = first_static_resource(&status).unwrap_or_default();
    answers.push((
        "everything: resource/read",
        server.call(
            "mcpServer/resource/read",
            json!({"threadId": thread_id, "server": "everything", "uri": uri}),
        )?,
    ));
    server.stop();
    Ok(answers)
}

/// The server named `name` in a status list answer.
fn server_status<'a>(status: &'a Value, name: &str) -> Option<&'a Value> {
    status
        .pointer("/result/data")?
        .as_array()?
        .iter()
        .find(|server| server["name"] == name)
}

/// The first (by URI) static resource server-everything listed.
fn first_static_resource(status: &Value) -> Option<String> {
    let resources = server_status(status, "everything")?["resources"].as_array()?;
    resources
        .iter()
        .filter_map(|resource| resource["uri"].as_str())
        .filter(|uri| uri.starts_with("demo://resource/static/"))
        .min()
        .map(str::to_owned)
}

/// The text of a tool call answer's first content block.
fn first_text(answer: &Value) -> Option<&str> {
    answer.pointer("/result/content/0/text")?.as_str()
}

/// What must hold of Tandem's answers.
fn checks(answers: &Answers) -> Vec<(&'static str, Result<(), String>)> {
    let answer = |label: &str| {
        answers
            .iter()
            .find(|(step, _)| *step == label)
            .map(|(_, answer)| answer.clone())
            .unwrap_or_default()
    };
    let expect = |holds: bool, answer: &Value| {
        if holds {
            Ok(())
        } else {
            Err(answer.to_string().chars().take(600).collect())
        }
    };
    let status = answer("mcpServerStatus/list");
    let connected_with = |name: &str, tools: &[&str]| {
        let server = server_status(&status, name);
        let holds = server.is_some_and(|server| {
            server["runtimeStatus"] == "connected"
                && tools
                    .iter()
                    .all(|tool| server["tools"].get(*tool).is_some())
        });
        expect(holds, server.unwrap_or(&status))
    };
    let echo = answer("everything: echo");
    let sum = answer("everything: get-sum");
    let time = answer("time: get_current_time");
    let read = answer("everything: resource/read");
    let uri = first_static_resource(&status);
    vec![
        (
            "server-everything connected, with echo and get-sum",
            connected_with("everything", &["echo", "get-sum"]),
        ),
        (
            "mcp-server-time connected, with get_current_time",
            connected_with("time", &["get_current_time", "convert_time"]),
        ),
        (
            "echo answers its message",
            expect(first_text(&echo) == Some(&format!("Echo: {ECHOED}")), &echo),
        ),
        (
            "get-sum adds 2 and 3",
            expect(first_text(&sum) == Some("The sum of 2 and 3 is 5."), &sum),
        ),
        (
            "get_current_time answers the time in UTC",
            expect(
                time.pointer("/result/structuredContent/timezone") == Some(&json!("UTC"))
                    && time
                        .pointer("/result/structuredContent/datetime")
                        .and_then(Value::as_str)
                        .is_some_and(|datetime| datetime.ends_with("+00:00")),
                &time,
            ),
        ),
        (
            "resource/read answers server-everything's first static resource",
            expect(
                uri.is_some()
                    && read
                        .pointer("/result/contents/0/uri")
                        .and_then(Value::as_str)
                        == uri.as_deref()
                    && read
                        .pointer("/result/contents/0/text")
                        .and_then(Value::as_str)
                        .is_some_and(|text| !text.is_empty()),
                &read,
            ),
        ),
    ]
}

/// `value` without its `null` members (recursively): one side leaves out what the other
/// writes as `null`.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(key, value)| (key, without_nulls(value)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

/// An answer with what legitimately differs taken out (see the module documentation).
fn normalize(label: &str, answer: &Value) -> Value {
    let mut value = without_nulls(answer.clone());
    if let Some(Value::Array(servers)) = value.pointer_mut("/result/data") {
        servers.sort_by_key(|server| server["name"].as_str().unwrap_or_default().to_owned());
        for server in servers {
            if let Some(server) = server.as_object_mut() {
                server.remove("runtimeStatus");
            }
            for key in ["resources", "resourceTemplates"] {
                if let Some(Value::Array(items)) = server.get_mut(key) {
                    items.sort_by_key(|item| item.to_string());
                }
            }
        }
    }
    if label == "time: get_current_time"
        && let Some(Value::String(datetime)) =
            value.pointer("/result/structuredContent/datetime").cloned()
    {
        let text = value.to_string().replace(&datetime, "<datetime>");
        value = serde_json::from_str(&text).expect("JSON stays JSON");
    }
    value
}

/// Prints the comparison table; whether the answers agree.
fn report(reference: &Answers, tandem: &Answers) -> bool {
    println!("## Against the reference (normalized answers)\n");
    println!("| step | reference | tandem | |");
    println!("|---|---|---|---|");
    let mut agree = true;
    for ((label, theirs), (_, ours)) in reference.iter().zip(tandem) {
        let (theirs, ours) = (normalize(label, theirs), normalize(label, ours));
        let cell = |value: &Value| {
            let text = value.to_string().replace('|', "\\|");
            match text.char_indices().nth(CELL_CHARS) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text,
            }
        };
        let (ours_cell, verdict) = if ours == theirs {
            ("same".to_owned(), "same".to_owned())
        } else {
            agree = false;
            (
                cell(&ours),
                format!("**DIFFERS** at {}", first_difference(&theirs, &ours, "")),
            )
        };
        println!("| {label} | {} | {ours_cell} | {verdict} |", cell(&theirs));
    }
    agree
}

/// The JSON pointer of the first place where `a` and `b` differ.
fn first_difference(a: &Value, b: &Value, at: &str) -> String {
    match (a, b) {
        (Value::Object(a_map), Value::Object(b_map)) => {
            let mut keys: Vec<&String> = a_map.keys().chain(b_map.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .find_map(|key| {
                    let (left, right) = (a_map.get(key), b_map.get(key));
                    (left != right).then(|| match (left, right) {
                        (Some(left), Some(right)) => {
                            first_difference(left, right, &format!("{at}/{key}"))
                        }
                        _ => format!("{at}/{key}"),
                    })
                })
                .unwrap_or_else(|| at.to_owned())
        }
        (Value::Array(a_items), Value::Array(b_items)) if a_items.len() == b_items.len() => a_items
            .iter()
            .zip(b_items)
            .enumerate()
            .find(|(_, (left, right))| left != right)
            .map(|(index, (left, right))| first_difference(left, right, &format!("{at}/{index}")))
            .unwrap_or_else(|| at.to_owned()),
        _ => at.to_owned(),
    }
}

/// An app-server of the check, in its own home.
struct Server(StdioServer);

impl Server {
    fn start(
        name: &str,
        command: &mut Command,
        home: &Path,
        home_variable: &str,
    ) -> Result<Self, CheckError> {
        command
            .env(home_variable, home)
            .env_remove("TANDEM_LOG")
            .current_dir(home);
        let capabilities = json!({"experimentalApi": true});
        let server =
            StdioServer::start(name, command, "mcp-check", Some(capabilities), ANSWER_LIMIT)?;
        Ok(Self(server))
    }

    /// Sends a request and returns `{"result": ...}` or `{"error": ...}`.
    fn call(&mut self, method: &str, params: Value) -> Result<Value, CheckError> {
        Ok(self.0.call(method, params, ANSWER_LIMIT, |_| {})?)
    }

    /// Asks for the status list until both servers list their tools (and, from Tandem,
    /// are `connected` or `failed`): the last answer.
    fn wait_for_servers(&mut self) -> Result<Value, CheckError> {
        let deadline = Instant::now() + STARTUP_LIMIT;
        loop {
            let status = self.call("mcpServerStatus/list", json!({}))?;
            let settled = ["everything", "time"].iter().all(|name| {
                server_status(&status, name).is_some_and(|server| {
                    matches!(server["runtimeStatus"].as_str(), Some("failed"))
                        || server["tools"]
                            .as_object()
                            .is_some_and(|tools| !tools.is_empty())
                })
            });
            if settled || Instant::now() >= deadline {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn stop(self) {
        self.0.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizing_drops_nulls_status_and_the_time_read() {
        let reference = json!({"result": {"content": [{"type": "text",
            "text": "{\"datetime\": \"2026-12-06T17:40:34+00:00\"}"}],
            "structuredContent": {"datetime": "2026-12-06T17:40:34+00:00"}}});
        let tandem = json!({"result": {"content": [{"type": "text",
            "text": "{\"datetime\": \"2026-12-06T17:41:00+00:00\"}"}],
            "structuredContent": {"datetime": "2026-12-06T17:41:00+00:00"},
            "isError": null, "_meta": null}});
        let label = "time: get_current_time";
        assert_eq!(normalize(label, &reference), normalize(label, &tandem));
        let list = |status: Value| json!({"result": {"data": [{"name": "b", "runtimeStatus": status}, {"name": "a"}]}});
        assert_eq!(
            normalize("list", &list(Value::Null)),
            normalize("list", &list(json!("connected")))
        );
        // Every tool counts, the elicitation ones too.
        let tools = |tools: Value| json!({"result": {"data": [{"name": "e", "tools": tools}]}});
        assert_ne!(
            normalize(
                "list",
                &tools(json!({"echo": {}, "trigger-url-elicitation": {}}))
            ),
            normalize("list", &tools(json!({"echo": {}})))
        );
        assert_ne!(
            normalize("list", &tools(json!({"echo": {}, "get-sum": {}}))),
            normalize("list", &tools(json!({"echo": {}})))
        );
        assert_ne!(
            normalize("echo", &json!({"result": {"text": "x"}})),
            normalize("echo", &json!({"result": {"text": "y"}}))
        );
    }

    #[test]
    fn the_first_difference_is_named_by_its_pointer() {
        let a = json!({"result": {"tools": {"echo": {"title": "Echo"}}, "n": 1}});
        let b = json!({"result": {"tools": {"echo": {"title": "echo"}}, "n": 1}});
        assert_eq!(first_difference(&a, &b, ""), "/result/tools/echo/title");
        assert_eq!(first_difference(&json!([1, 2]), &json!([1, 3]), ""), "/1");
    }
}
