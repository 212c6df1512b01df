//! An app-server run as a child over stdio, for the checks that send the same requests to
//! Tandem and to the reference and compare the answers (`fs-compare`, `mcp-check`): its
//! input, its output lines decoded on a reader thread, `initialize` done, requests answered
//! within a time limit, and a stop that closes its input and kills it if it lingers.

use std::io::{self, BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a stopped server may take to exit once its input is closed, before it is killed.
const EXIT_LIMIT: Duration = Duration::from_secs(5);

/// Why talking to a server failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StdioServerError {
    #[error(
        "could not start `{command}`: {source}; is it installed, or named with --reference / --tandem BIN?"
    )]
    Spawn { command: String, source: io::Error },
    #[error("{server}: {what}")]
    Server { server: String, what: String },
}

/// A running app-server (see the module documentation).
pub(crate) struct StdioServer {
    name: String,
    child: Child,
    input: ChildStdin,
    lines: mpsc::Receiver<Value>,
    next_id: i64,
}

impl StdioServer {
    /// Starts `command` (its environment and directory already set by the caller) and
    /// initializes it as `client_name`, with `capabilities` when given, within `limit`.
    pub(crate) fn start(
        name: &str,
        command: &mut Command,
        client_name: &str,
        capabilities: Option<Value>,
        limit: Duration,
    ) -> Result<Self, StdioServerError> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| StdioServerError::Spawn {
                command: format!("{command:?}"),
                source,
            })?;
        let input = child.stdin.take().expect("piped");
        let output = child.stdout.take().expect("piped");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines() {
                let Ok(line) = line else { return };
                if let Ok(message) = serde_json::from_str(&line)
                    && sender.send(message).is_err()
                {
                    return;
                }
            }
        });
        let mut server = Self {
            name: name.to_owned(),
            child,
            input,
            lines,
            next_id: 0,
        };
        let mut params = json!({"clientInfo": {"name": client_name, "version": "1"}});
        if let Some(capabilities) = capabilities {
            params["capabilities"] = capabilities;
        }
        server.call("initialize", params, limit, |_| {})?;
        server.send(&json!({"method": "initialized"}))?;
        Ok(server)
    }

    /// Writes one message.
    pub(crate) fn send(&mut self, message: &Value) -> Result<(), StdioServerError> {
        writeln!(self.input, "{message}")
            .and_then(|()| self.input.flush())
            .map_err(|error| StdioServerError::Server {
                server: self.name.clone(),
                what: format!("its input closed: {error}"),
            })
    }

    /// Sends a request and returns `{"result": ...}` or `{"error": ...}` as answered within
    /// `limit`; every other message that comes first goes to `other`.
    pub(crate) fn call(
        &mut self,
        method: &str,
        params: Value,
        limit: Duration,
        mut other: impl FnMut(&Value),
    ) -> Result<Value, StdioServerError> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + limit;
        loop {
            let message = self
                .next_message(deadline)
                .ok_or_else(|| StdioServerError::Server {
                    server: self.name.clone(),
                    what: format!("no answer to {method} within {limit:?}"),
                })?;
            if message["id"] == json!(id) {
                return Ok(match message.get("error") {
                    Some(error) => json!({"error": error}),
                    None => json!({"result": message["result"]}),
                });
            }
            other(&message);
        }
    }

    /// The next message the server writes before `deadline`.
    pub(crate) fn next_message(&self, deadline: Instant) -> Option<Value> {
        self.lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .ok()
    }

    /// Closes its input and waits for it to exit, killing it past [`EXIT_LIMIT`].
    pub(crate) fn stop(mut self) {
        drop(self.input);
        let deadline = Instant::now() + EXIT_LIMIT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
