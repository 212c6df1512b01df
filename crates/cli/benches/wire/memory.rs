//! The memory figure (issue 27, `--memory`): how much the server's resident memory grows for
//! one turn whose input is N bytes, on a client that reads everything at once (websocket, and
//! stdio beside it to show what the websocket stack adds).
//!
//! Each measurement starts `tandem app-server --listen ws://127.0.0.1:0` (or `stdio://`) with an empty home (no
//! model configured, so the scripted agent answers), initializes, runs a small warm-up turn on
//! a persisted thread, so that the database and the allocator's arenas exist before the
//! baseline, and starts the thread to measure. Then the server's peak resident size is reset
//! (`/proc/PID/clear_refs`), its `VmRSS` read as the baseline, and the turn runs: one text
//! input of N bytes on one line, which the scripted agent answers by quoting it (`You said:
//! "..."`, streamed in deltas), read until `turn/completed`. The growth is the server's `VmHWM`
//! then minus the baseline: every copy the turn made at once, plus what the server legitimately
//! keeps (the input and the answer, in the turn's history).
//!
//! The server's writer byte budget is raised to [`WRITER_QUEUE_BYTES`]: the turn's last
//! messages carry the whole input (an `item/completed` of N bytes and a `turn/completed` of
//! 2 N), and a budget smaller than what is in flight would close the connection.

use std::time::Duration;

use tandem_host::transport::stdio;
use tandem_protocol::wire::{ClientMessage, ServerMessage};
use tandem_protocol::{
    ClientRequest, RequestId, ServerNotification, ThreadItem, ThreadStartParams, TurnStartParams,
    TurnStatus,
};

use crate::MIB;
use crate::client::{WireClient, WireError};

/// The issue 27 bound on the growth: this many times N...
pub(crate) const GROWTH_PER_INPUT_BYTE: u64 = 4;
/// ...plus this much.
pub(crate) const GROWTH_CONSTANT: u64 = 32 * MIB;
/// How long one turn may take before the figure fails.
const TURN_PATIENCE: Duration = Duration::from_secs(300);
/// What the scripted agent puts around a quoted line: `You said: "` and `"`.
const QUOTE_OVERHEAD: usize = "You said: \"\"".len();

/// How the measured server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemoryTransport {
    /// `--listen ws://127.0.0.1:0`.
    WebSocket,
    /// `--listen stdio://`: the same server without the websocket stack, which shows what the
    /// websocket's own buffers add.
    Stdio,
}

/// One measurement: `turns` turns of `input_bytes` each, one after another on one thread.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemoryCase {
    /// The transport.
    pub(crate) transport: MemoryTransport,
    /// N, the bytes of each turn's text input.
    pub(crate) input_bytes: u64,
    /// Turns measured together (the growth covers all of them).
    pub(crate) turns: usize,
}

/// The cases of a run: the sizes of issue 27 one turn each, then three turns of 8 MiB (no
/// bound), on each transport; with `full` false, one turn of 1 MiB on each.
pub(crate) fn memory_cases(full: bool) -> Vec<MemoryCase> {
    let shapes: &[(u64, usize)] = if full {
        &[(8, 1), (16, 1), (48, 1), (8, 3)]
    } else {
        &[(1, 1)]
    };
    [MemoryTransport::WebSocket, MemoryTransport::Stdio]
        .into_iter()
        .flat_map(|transport| {
            shapes.iter().map(move |&(mib, turns)| MemoryCase {
                transport,
                input_bytes: mib * MIB,
                turns,
            })
        })
        .collect()
}

impl MemoryCase {
    /// The label of the case in the report, e.g. `websocket 1 x 48 MiB`.
    pub(crate) fn label(&self) -> String {
        let transport = match self.transport {
            MemoryTransport::WebSocket => "websocket",
            MemoryTransport::Stdio => "stdio",
        };
        format!(
            "{transport} {} x {} MiB",
            self.turns,
            self.input_bytes / MIB
        )
    }

    /// The bound of issue 27, for one turn: 4 N + 32 MiB.
    pub(crate) fn bound(&self) -> Option<u64> {
        (self.turns == 1).then(|| GROWTH_PER_INPUT_BYTE * self.input_bytes + GROWTH_CONSTANT)
    }
}

/// What one measurement found, in bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemoryFigure {
    /// `VmRSS` before the measured turns.
    pub(crate) baseline: u64,
    /// `VmHWM` after them (the peak was reset at the baseline).
    pub(crate) peak: u64,
    /// `VmRSS` after them.
    pub(crate) after: u64,
}

impl MemoryFigure {
    /// Peak minus baseline.
    pub(crate) fn growth(&self) -> u64 {
        self.peak.saturating_sub(self.baseline)
    }
}

/// The command line of the measured server: `tandem` at `tandem_path` on the case's transport,
/// with a writer budget of [`WRITER_QUEUE_BYTES`] and a message limit that admits the input.
pub(crate) fn server_argv(tandem_path: &str, case: MemoryCase) -> Vec<String> {
    let default = u64::try_from(stdio::DEFAULT_MAX_LINE_BYTES).expect("64 MiB fits in u64");
    let max_message = (case.input_bytes + MIB).max(default);
    let listen = match case.transport {
        MemoryTransport::WebSocket => "ws://127.0.0.1:0",
        MemoryTransport::Stdio => "stdio://",
    };
    [
        tandem_path,
        "app-server",
        "--listen",
        listen,
        // The writer queue's byte budget is the default (64 MiB): a burst larger than it (a
        // 48 MiB turn's `turn/completed` is 96 MiB of JSON) no longer closes a client that
        // reads (issue 27 point 1), so the figure is that of a server as users start it.
        "--max-message-bytes",
        &max_message.to_string(),
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Runs `case` on a fresh server started from `argv`.
pub(crate) async fn measure_memory(
    argv: &[String],
    case: MemoryCase,
) -> Result<MemoryFigure, WireError> {
    let mut client = match case.transport {
        MemoryTransport::WebSocket => WireClient::websocket(argv).await?,
        MemoryTransport::Stdio => WireClient::stdio(argv).await?,
    };
    let measured = measure_on(&mut client, case).await;
    client.close().await;
    measured
}

async fn measure_on(client: &mut WireClient, case: MemoryCase) -> Result<MemoryFigure, WireError> {
    let pid = client.server_pid();
    let warm_up = start_thread(client).await?;
    run_turn(client, &warm_up, "warm up".to_owned()).await?;
    // A thread of its own: the measured input is its first, as a new conversation's is (the
    // first input also becomes the thread's preview).
    let thread_id = start_thread(client).await?;

    let input_bytes = usize::try_from(case.input_bytes).expect("the input fits in memory");
    let status = |client: &WireClient| {
        ProcStatus::read(pid).map_err(|error| {
            client.protocol_error(format!("cannot read /proc/{pid}/status: {error}"))
        })
    };
    reset_peak(pid).map_err(|error| {
        client.protocol_error(format!(
            "cannot reset the peak resident size (/proc/{pid}/clear_refs): {error}"
        ))
    })?;
    let baseline = status(client)?.rss;
    for _ in 0..case.turns {
        let answer = run_turn(client, &thread_id, "x".repeat(input_bytes)).await?;
        if answer != input_bytes + QUOTE_OVERHEAD {
            return Err(client.protocol_error(format!(
                "the agent answered {answer} bytes to an input of {input_bytes}; expected the \
                 scripted agent's quote of it"
            )));
        }
    }
    let end = status(client)?;
    Ok(MemoryFigure {
        baseline,
        peak: end.peak,
        after: end.rss,
    })
}

/// Starts a persisted thread and returns its id.
async fn start_thread(client: &mut WireClient) -> Result<String, WireError> {
    let id = RequestId::Integer(client.next_request_id());
    client.queue(&ClientMessage::Request(ClientRequest::ThreadStart {
        request_id: id.clone(),
        params: ThreadStartParams::new(),
    }));
    client.flush().await?;
    loop {
        match client.next().await? {
            ServerMessage::Response {
                id: answered,
                result,
            } if answered == id => {
                return result["thread"]["id"]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        client.protocol_error(format!("thread/start answered {result}"))
                    });
            }
            ServerMessage::Error { error, .. } => {
                return Err(client.protocol_error(format!("thread/start failed: {error}")));
            }
            _ => {}
        }
    }
}

/// Runs one turn with `text` as its input, reading every message until `turn/completed`, and
/// returns the length of the agent's completed message.
async fn run_turn(
    client: &mut WireClient,
    thread_id: &str,
    text: String,
) -> Result<usize, WireError> {
    let id = RequestId::Integer(client.next_request_id());
    client.queue(&ClientMessage::Request(ClientRequest::TurnStart {
        request_id: id,
        params: TurnStartParams::text(thread_id, text),
    }));
    client.flush().await?;
    let mut answer = 0;
    let read = tokio::time::timeout(TURN_PATIENCE, async {
        loop {
            let ServerMessage::Notification { notification, .. } = client.next().await? else {
                continue;
            };
            match notification {
                ServerNotification::ItemCompleted(completed) => {
                    if let ThreadItem::AgentMessage { text, .. } = completed.item {
                        answer = text.len();
                    }
                }
                ServerNotification::TurnCompleted(completed) => {
                    return match completed.turn.status {
                        TurnStatus::Completed => Ok(()),
                        other => Err(client.protocol_error(format!(
                            "the turn ended {other:?}: {:?}",
                            completed.turn.error
                        ))),
                    };
                }
                _ => {}
            }
        }
    })
    .await;
    match read {
        Ok(Ok(())) => Ok(answer),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(client.protocol_error(format!("no turn/completed within {TURN_PATIENCE:?}"))),
    }
}

/// The two lines of `/proc/PID/status` the figure reads, in bytes.
struct ProcStatus {
    rss: u64,
    peak: u64,
}

impl ProcStatus {
    fn read(pid: u32) -> std::io::Result<Self> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|value| value.trim().strip_suffix("kB"))
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map(|kib| kib * 1024)
                .ok_or_else(|| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("no {name} line in kB"),
                    )
                })
        };
        Ok(Self {
            rss: field("VmRSS:")?,
            peak: field("VmHWM:")?,
        })
    }
}

/// Resets the process's `VmHWM` to its current resident size (`5` in `clear_refs`, Linux 4.0
/// and later), so the peak read after the turn is the turn's.
fn reset_peak(pid: u32) -> std::io::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
}
