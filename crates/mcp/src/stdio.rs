//! Starting a stdio MCP server: its environment cleared to an allow-list, in a process group
//! of its own registered with Tandem's watchdog, its stdout read through a line bound so that
//! one oversized message closes the connection instead of growing memory, and its stderr
//! logged line by line.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::process::Stdio;
use std::task::{Context, Poll};

use tandem_process::GuardedGroup;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, BufReader, ReadBuf};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use crate::config::StdioServerConfig;
use crate::error::McpError;

/// The variables of Tandem's own environment every stdio server gets (when set), as the
/// reference passes them; `env_vars` adds names, `env` sets values over all of them.
pub const ENV_ALLOW_LIST: &[&str] = &[
    "HOME", "PATH", "LANG", "TERM", "TMPDIR", "USER", "SHELL", "LOGNAME", "TZ",
];

/// The most bytes one message (one line) from a stdio server may have; a longer one closes
/// the connection. rmcp's own line codec would drop such a line and carry on, leaving the
/// call it answered to wait for its timeout; closing fails that call at once, with a reason.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The most bytes of one stderr line logged; the rest of the line is skipped.
const MAX_STDERR_LINE_BYTES: usize = 4096;

/// A started stdio server: its pipes, and its group, killed when this drops.
pub(crate) struct StdioChild {
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: BoundedLines<ChildStdout>,
    pub(crate) group: GuardedGroup,
}

/// The environment a server with `config` gets, from Tandem's own (`lookup`).
pub fn server_environment(
    config: &StdioServerConfig,
    lookup: impl Fn(&str) -> Option<String>,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for name in ENV_ALLOW_LIST
        .iter()
        .copied()
        .chain(config.env_vars.iter().map(String::as_str))
    {
        if let Some(value) = lookup(name) {
            env.insert(name.to_owned(), value);
        }
    }
    env.extend(config.env.clone());
    env
}

/// Spawns the server `name` described by `config`.
pub(crate) fn spawn(name: &str, config: &StdioServerConfig) -> Result<StdioChild, McpError> {
    let env = server_environment(config, |name| std::env::var(name).ok());
    let mut command = Command::new(&config.command);
    command
        .args(&config.args)
        .env_clear()
        .envs(&env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // The group is killed when the connection's `GuardedGroup` drops; this is the backstop
        // for a child whose handle is dropped some other way.
        .kill_on_drop(true);
    if let Some(cwd) = &config.cwd {
        command.current_dir(cwd);
    }
    GuardedGroup::prepare(&mut command);
    let mut child = command.spawn().map_err(|source| McpError::Spawn {
        server: name.to_owned(),
        command: config.command.clone(),
        source,
    })?;
    let group = GuardedGroup::watch(child.id().unwrap_or_default());
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(McpError::Connect {
            server: name.to_owned(),
            reason: "the child has no stdio pipes".to_owned(),
        });
    };
    tokio::spawn(log_stderr(name.to_owned(), stderr));
    Ok(StdioChild {
        child,
        stdin,
        stdout: BoundedLines::new(name, stdout),
        group,
    })
}

/// Logs the server's stderr, a line at a time (at debug level: servers chat there freely).
async fn log_stderr(server: String, stderr: ChildStderr) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        // `take` bounds what one line may hold; the rest of a longer line is read as the next.
        match (&mut reader)
            .take(MAX_STDERR_LINE_BYTES as u64)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                tracing::debug!(server, line = %String::from_utf8_lossy(&line).trim_end(), "MCP server stderr")
            }
        }
    }
}

/// An `AsyncRead` over a server's stdout that fails once a line exceeds
/// [`MAX_MESSAGE_BYTES`] or starts with something other than a JSON object or array (`{`,
/// `[`): the transport then closes, and the reason is logged. A line that starts like JSON
/// but is broken is left to rmcp, which skips it.
pub(crate) struct BoundedLines<R> {
    inner: R,
    server: String,
    /// Bytes since the last newline.
    line: usize,
    limit: usize,
    /// Whether only whitespace was read since the last newline.
    at_line_start: bool,
}

impl<R> BoundedLines<R> {
    pub(crate) fn new(server: &str, inner: R) -> Self {
        Self::with_limit(server, inner, MAX_MESSAGE_BYTES)
    }

    pub(crate) fn with_limit(server: &str, inner: R, limit: usize) -> Self {
        Self {
            inner,
            server: server.to_owned(),
            line: 0,
            limit,
            at_line_start: true,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let mut failure = None;
                for &byte in &buf.filled()[before..] {
                    if byte == b'\n' {
                        this.line = 0;
                        this.at_line_start = true;
                        continue;
                    }
                    this.line += 1;
                    if this.line > this.limit {
                        failure = Some(format!("message longer than {} bytes", this.limit));
                        break;
                    }
                    if this.at_line_start && !matches!(byte, b' ' | b'\t' | b'\r') {
                        this.at_line_start = false;
                        // rmcp skips a line that is not JSON and carries on, leaving the call
                        // it should have answered to its timeout; what a server prints there
                        // by mistake (a log line) fails at once instead.
                        if !matches!(byte, b'{' | b'[') {
                            failure = Some("a line that is not a JSON-RPC message".to_owned());
                            break;
                        }
                    }
                }
                if let Some(reason) = failure {
                    // A read that fails hands over nothing (tokio's contract).
                    buf.set_filled(before);
                    tracing::warn!(
                        server = %this.server,
                        %reason,
                        "MCP server sent a malformed message; closing its connection"
                    );
                    return Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        reason,
                    )));
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_the_allow_list_plus_env_vars_and_env() {
        let config = StdioServerConfig {
            command: "x".into(),
            args: Vec::new(),
            env: BTreeMap::from([("PATH".to_owned(), "/opt/bin".to_owned())]),
            env_vars: vec!["GITHUB_TOKEN".into()],
            cwd: None,
        };
        let outer = |name: &str| match name {
            "HOME" => Some("/home/me".to_owned()),
            "PATH" => Some("/usr/bin".to_owned()),
            "GITHUB_TOKEN" => Some("t".to_owned()),
            "AWS_SECRET_ACCESS_KEY" => Some("s".to_owned()),
            _ => None,
        };
        let env = server_environment(&config, outer);
        assert_eq!(
            env,
            BTreeMap::from([
                ("HOME".to_owned(), "/home/me".to_owned()),
                ("PATH".to_owned(), "/opt/bin".to_owned()),
                ("GITHUB_TOKEN".to_owned(), "t".to_owned()),
            ])
        );
    }

    #[tokio::test]
    async fn a_line_past_the_limit_fails_the_read() {
        let input: &[u8] = b"{short\n{abcdefghijk\n";
        let mut reader = BoundedLines::with_limit("s", input, 8);
        let mut out = Vec::new();
        let error = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            reader.read_to_end(&mut out),
        )
        .await
        .expect("no hang")
        .expect_err("too long");
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
        let mut fine = BoundedLines::with_limit("s", &b"{1234567\n [345678\n"[..], 8);
        let mut out = Vec::new();
        fine.read_to_end(&mut out).await.expect("within the limit");
        assert_eq!(out.len(), 18);
        let mut log_line = BoundedLines::with_limit("s", &b"{}\nstarting up\n"[..], 64);
        let error = log_line
            .read_to_end(&mut Vec::new())
            .await
            .expect_err("not JSON-RPC");
        assert!(
            error.to_string().contains("not a JSON-RPC message"),
            "{error}"
        );
    }
}
