//! Starting a stdio MCP server: its environment cleared to an allow-list, in a process group
//! of its own registered with Tandem's watchdog, its stdout read through a check of every line
//! (its size bound, that it is JSON) so that one oversized or malformed message closes the
//! connection at once instead of growing memory or leaving a call to its timeout, and its
//! stderr logged line by line.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
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

/// Lines longer than this are validated in a buffer of their own that is freed afterwards;
/// shorter ones reuse it.
const KEPT_LINE_CAPACITY: usize = 64 * 1024;

/// An `AsyncRead` over a server's stdout that fails once a line exceeds
/// [`MAX_MESSAGE_BYTES`], starts with something other than a JSON object or array (`{`,
/// `[`), or is not valid JSON: the transport then closes (failing every call in flight at
/// once), the reason is logged and kept for the calls' error. rmcp would skip the last two
/// and carry on, leaving the call the line answered to wait for its timeout.
///
/// The lines before the refused one are handed over first, so that what the server sent
/// before it (a call's progress, another call's answer) still arrives.
pub(crate) struct BoundedLines<R> {
    inner: R,
    server: String,
    /// Bytes since the last newline.
    line: usize,
    limit: usize,
    /// Whether only whitespace was read since the last newline.
    at_line_start: bool,
    /// Whether the current line started like JSON (`{` or `[`).
    in_json: bool,
    /// The current line when it started like JSON, to check it once its newline comes.
    json: Vec<u8>,
    /// The refusal to report at the next read, once the lines before it were handed over.
    refused: Option<String>,
    /// Where the reason of a refusal goes, for the connection's error.
    report: Option<Arc<OnceLock<String>>>,
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
            in_json: false,
            json: Vec::new(),
            refused: None,
            report: None,
        }
    }

    /// Also sets the reason of a refusal in `report`.
    pub(crate) fn reporting_to(mut self, report: Arc<OnceLock<String>>) -> Self {
        self.report = Some(report);
        self
    }

    /// Checks `bytes`, just read; on a refusal, the reason and how many of the bytes (the
    /// whole lines before the refused one) may still be handed over.
    fn check(&mut self, bytes: &[u8]) -> Result<(), (String, usize)> {
        // Where the current line starts within `bytes` (0 when it began in an earlier read,
        // whose bytes were handed over already).
        let mut line_start = 0;
        for (index, &byte) in bytes.iter().enumerate() {
            if byte == b'\n' {
                if self.in_json {
                    self.json.extend_from_slice(&bytes[line_start..index]);
                    let parsed = serde_json::from_slice::<serde::de::IgnoredAny>(&self.json);
                    if self.json.capacity() > KEPT_LINE_CAPACITY {
                        self.json = Vec::new();
                    } else {
                        self.json.clear();
                    }
                    self.in_json = false;
                    if let Err(error) = parsed {
                        return Err((format!("malformed JSON: {error}"), line_start));
                    }
                }
                self.line = 0;
                self.at_line_start = true;
                line_start = index + 1;
                continue;
            }
            self.line += 1;
            if self.line > self.limit {
                return Err((
                    format!("a message longer than {} bytes", self.limit),
                    line_start,
                ));
            }
            if self.at_line_start && !matches!(byte, b' ' | b'\t' | b'\r') {
                self.at_line_start = false;
                // What a server prints here by mistake (a log line) is refused at once.
                if !matches!(byte, b'{' | b'[') {
                    return Err((
                        "a line that is not a JSON-RPC message".to_owned(),
                        line_start,
                    ));
                }
                self.in_json = true;
            }
        }
        if self.in_json {
            // The line goes on in the next read: keep what there is of it.
            self.json.extend_from_slice(&bytes[line_start..]);
        }
        Ok(())
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if let Some(reason) = this.refused.take() {
            // Closed for good: every later read fails the same way.
            this.refused = Some(reason.clone());
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                reason,
            )));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let Err((reason, keep)) = this.check(&buf.filled()[before..]) else {
                    return Poll::Ready(Ok(()));
                };
                tracing::warn!(
                    server = %this.server,
                    %reason,
                    "MCP server sent a malformed message; closing its connection"
                );
                if let Some(report) = &this.report {
                    let _ = report.set(reason.clone());
                }
                // The whole lines before the refused one are handed over now (a read that
                // hands over nothing would mean the end of the stream), the failure next.
                buf.set_filled(before + keep);
                if keep > 0 {
                    this.refused = Some(reason);
                    return Poll::Ready(Ok(()));
                }
                this.refused = Some(reason.clone());
                Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    reason,
                )))
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

    /// Reads `reader` to its end `chunk` bytes at a time (so lines cross reads): what it
    /// handed over, and the error it ended with.
    async fn read_in_chunks(
        mut reader: BoundedLines<&[u8]>,
        chunk: usize,
    ) -> (Vec<u8>, Option<std::io::Error>) {
        let mut out = Vec::new();
        let mut buffer = vec![0; chunk];
        loop {
            match reader.read(&mut buffer).await {
                Ok(0) => return (out, None),
                Ok(read) => out.extend_from_slice(&buffer[..read]),
                Err(error) => return (out, Some(error)),
            }
        }
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_in_any_chunking() {
        let input: &[u8] = b"{\"a\":1}\n  [1,2]\r\n\n{\"long\":\"abc\"}\n";
        for chunk in [1, 3, 7, 64] {
            let reader = BoundedLines::with_limit("s", input, 16);
            let (out, error) = read_in_chunks(reader, chunk).await;
            assert!(error.is_none(), "chunk {chunk}: {error:?}");
            assert_eq!(out, input, "chunk {chunk}");
        }
    }

    #[tokio::test]
    async fn a_refused_line_fails_the_read_after_the_lines_before_it() {
        let cases: [(&[u8], &str); 3] = [
            (
                b"{\"a\":1}\n[1,2,3,4,5,6,7,8,9,10]\n",
                "longer than 16 bytes",
            ),
            (b"{\"a\":1}\n{\"b\": 2.0\",\n{}\n", "malformed JSON"),
            (b"{\"a\":1}\nstarting up\n", "not a JSON-RPC message"),
        ];
        for (input, why) in cases {
            for chunk in [1, 5, 64] {
                let reader = BoundedLines::with_limit("s", input, 16);
                let report = Arc::new(OnceLock::new());
                let (out, error) =
                    read_in_chunks(reader.reporting_to(Arc::clone(&report)), chunk).await;
                let error = error.unwrap_or_else(|| panic!("{why}, chunk {chunk}: no error"));
                assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
                assert!(error.to_string().contains(why), "{error}");
                assert!(
                    report.get().is_some_and(|reason| reason.contains(why)),
                    "{report:?}"
                );
                // The line before the refused one was handed over whole.
                assert!(
                    out.starts_with(b"{\"a\":1}\n"),
                    "{why}, chunk {chunk}: {out:?}"
                );
                assert!(out.len() < input.len(), "{why}, chunk {chunk}");
            }
        }
    }
}
