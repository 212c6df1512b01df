//! The cursor watcher of one websocket server: a raw JSON-RPC client (not tandem-client, which
//! drops replayed duplicates and hides cursors, the very things checked here) that runs turns
//! on a thread of its own through the cutting proxy, and checks every event's cursor:
//!
//! - on one connection, each event of the thread is the previous one plus one (no gap, no
//!   duplicate, no foreign epoch);
//! - after a cut, `thread/resume` from the last cursor replays exactly the missed events
//!   (contiguous, as many as `replayed` says, ending at the answer's `cursor`), each equal to
//!   the event a second, never-cut connection (the anchor) received; `gap: true` is right only
//!   after a restart or when more was missed than the window holds (`cursors::check_resume`).
//!
//! The anchor stays subscribed directly to the server, so the thread stays loaded while the
//! watcher is away (on PostgreSQL a thread whose last subscriber leaves is unloaded at once,
//! and an unloaded thread starts a new stream), and its log says what the watcher missed.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::cursors::{Cursor, EventLog, ResumeAnswer, ResumeContext, Stream, check_resume};
use super::record::{Counters, Violations, lock};

/// How long one message may take to arrive while a turn runs.
const SILENCE_LIMIT: Duration = Duration::from_secs(60);
/// How long the watcher keeps trying to reconnect.
const RECONNECT_LIMIT: Duration = Duration::from_secs(120);
/// The server's replay window (its defaults: docs/protocol.md section 10).
const WINDOW_EVENTS: u64 = 4096;
const WINDOW_BYTES: usize = 4 * 1024 * 1024;
/// Events the anchor remembers (more than the window, so it can tell what a resume missed).
const LOG_EVENTS: usize = 8192;
/// The watcher's turns, in turn: an approved command whose output streams for about a
/// second, a quoted text, a wait.
const INPUTS: [&str; 3] = [
    "/sh for i in $(seq 1 20); do echo watcher-$i; sleep 0.05; done",
    "watching the stream",
    "/sleep 300\nawake",
];

/// Where a server is: its life (one more per restart) and address (`None` while down).
pub(crate) type ServerAt = watch::Receiver<(u32, Option<SocketAddr>)>;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A raw connection: requests by id, everything else handed back as it comes.
struct Conn {
    socket: Socket,
    next_id: i64,
}

/// Why a connection stopped.
#[derive(Debug)]
struct Lost(String);

impl Conn {
    async fn open(url: &str, counters: &Counters) -> Result<Self, Lost> {
        let (socket, _) = tokio_tungstenite::connect_async(url)
            .await
            .map_err(|e| Lost(format!("connect {url}: {e}")))?;
        let mut conn = Self { socket, next_id: 1 };
        let init = json!({"clientInfo": {"name": "soak-watcher", "version": "1"},
                          "capabilities": {"experimentalApi": true}});
        conn.call("initialize", init, counters, &mut |_| {})
            .await?
            .map_err(|e| Lost(format!("initialize refused: {e}")))?;
        conn.send(json!({"method": "initialized"})).await?;
        Ok(conn)
    }

    async fn send(&mut self, message: Value) -> Result<(), Lost> {
        self.socket
            .send(Message::text(message.to_string()))
            .await
            .map_err(|e| Lost(format!("send: {e}")))
    }

    /// The next JSON message and its size; `Err` when the connection ended or stayed silent
    /// past [`SILENCE_LIMIT`].
    async fn next(&mut self) -> Result<(Value, usize), Lost> {
        loop {
            let frame = tokio::time::timeout(SILENCE_LIMIT, self.socket.next())
                .await
                .map_err(|_| Lost(format!("silent for {SILENCE_LIMIT:?}")))?;
            match frame {
                Some(Ok(Message::Text(text))) => {
                    let value = serde_json::from_str(text.as_str())
                        .map_err(|e| Lost(format!("undecodable frame: {e}")))?;
                    return Ok((value, text.len()));
                }
                Some(Ok(Message::Close(_))) | None => return Err(Lost("closed".into())),
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(Lost(error.to_string())),
            }
        }
    }

    /// Sends a request and returns its answer (a result, or the error object as `Err`),
    /// handing every message before it to `other`.
    async fn call(
        &mut self,
        method: &str,
        params: Value,
        counters: &Counters,
        other: &mut (dyn FnMut((Value, usize)) + Send),
    ) -> Result<Result<Value, Value>, Lost> {
        let id = self.next_id;
        self.next_id += 1;
        counters.request();
        self.send(json!({"id": id, "method": method, "params": params}))
            .await?;
        loop {
            let (message, size) = self.next().await?;
            if message.get("method").is_none() && message.get("id") == Some(&json!(id)) {
                return Ok(match message.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                });
            }
            other((message, size));
        }
    }

    /// Answers a server request: approvals accepted, questions answered empty.
    async fn answer(&mut self, request: &Value) -> Result<(), Lost> {
        let result = match request["method"].as_str() {
            Some("item/commandExecution/requestApproval") => json!({"decision": "accept"}),
            Some("item/tool/requestUserInput") => json!({"answers": {}}),
            _ => json!({}),
        };
        self.send(json!({"id": request["id"].clone(), "result": result}))
            .await
    }
}

/// A notification's cursor, if it is an event of `thread`.
fn event_cursor(message: &Value, thread: &str) -> Option<Cursor> {
    message.get("method")?;
    if message.get("id").is_some() || message["params"]["threadId"].as_str() != Some(thread) {
        return None;
    }
    Cursor::from_json(message.get("cursor")?)
}

/// What the log compares: the event without its per-write members.
fn body(message: &Value) -> String {
    json!({"method": message["method"], "params": message["params"]}).to_string()
}

/// Everything the watcher of one server shares with its anchor and the phase.
pub(crate) struct Watcher {
    /// Which server (for the report).
    pub(crate) name: String,
    /// The proxy's address, through which the watcher's own connection runs.
    pub(crate) proxy: SocketAddr,
    /// The server's life and direct address, for the anchor and restart detection.
    pub(crate) server: ServerAt,
    /// The violations of the phase.
    pub(crate) violations: Arc<Violations>,
    /// The counters of the phase.
    pub(crate) counters: Arc<Counters>,
}

impl Watcher {
    /// Runs turns and checks cursors until `stop`.
    pub(crate) async fn run(self, mut stop: watch::Receiver<bool>) {
        let log = Arc::new(Mutex::new(EventLog::new(LOG_EVENTS)));
        let url = format!("ws://{}", self.proxy);
        let (mut conn, thread, mut stream, mut life) = loop {
            match self.begin(&url).await {
                Ok(begun) => break begun,
                Err(Lost(reason)) => {
                    if *stop.borrow() {
                        return;
                    }
                    eprintln!(
                        "soak: watcher {}: start failed ({reason}); retrying",
                        self.name
                    );
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        };
        let anchor = tokio::spawn(anchor(
            thread.clone(),
            self.server.clone(),
            log.clone(),
            self.violations.clone(),
            self.counters.clone(),
            self.name.clone(),
            stop.clone(),
        ));
        let mut turn = 0usize;
        while !*stop.borrow() {
            let input = INPUTS[turn % INPUTS.len()];
            turn += 1;
            let outcome = tokio::select! {
                outcome = self.one_turn(&mut conn, &thread, &mut stream, input) => outcome,
                _ = stop.changed() => break,
            };
            if outcome.is_ok() {
                continue;
            }
            match self
                .resume(&url, &thread, &stream, &log, life, &mut stop)
                .await
            {
                Some((new_conn, new_stream, new_life)) => {
                    conn = new_conn;
                    stream = new_stream;
                    life = new_life;
                }
                None => break,
            }
        }
        let _ = conn.socket.close(None).await;
        let _ = anchor.await;
    }

    /// Connects, starts the watcher's thread and returns where its stream stands.
    async fn begin(&self, url: &str) -> Result<(Conn, String, Stream, u32), Lost> {
        let life = self.server.borrow().0;
        let mut conn = Conn::open(url, &self.counters).await?;
        let params = json!({"approvalPolicy": "on-request"});
        let mut early = Vec::new();
        let started = conn
            .call("thread/start", params, &self.counters, &mut |m| {
                early.push(m)
            })
            .await?
            .map_err(|e| Lost(format!("thread/start failed: {e}")))?;
        let thread = started["thread"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let cursor = Cursor::from_json(&started["cursor"])
            .ok_or_else(|| Lost("thread/start answered no cursor".into()))?;
        let mut stream = Stream::at(cursor);
        for message in early {
            self.take(&mut conn, &thread, &mut stream, "", message)
                .await?;
        }
        Ok((conn, thread, stream, life))
    }

    /// Runs one turn to its `turn/completed`, checking every event on the way.
    async fn one_turn(
        &self,
        conn: &mut Conn,
        thread: &str,
        stream: &mut Stream,
        input: &str,
    ) -> Result<(), Lost> {
        let params = json!({"threadId": thread, "input": [{"type": "text", "text": input}]});
        let mut early = Vec::new();
        let answer = conn
            .call("turn/start", params, &self.counters, &mut |m| early.push(m))
            .await?;
        let mut done = false;
        let turn_id = match answer {
            Ok(result) => result["turn"]["id"].as_str().unwrap_or_default().to_owned(),
            // The store refused it (a full disk, a database restart): try again later.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(500)).await;
                done = true;
                String::new()
            }
        };
        for message in early {
            done |= self.take(conn, thread, stream, &turn_id, message).await?;
        }
        while !done {
            let message = conn.next().await?;
            done = self.take(conn, thread, stream, &turn_id, message).await?;
        }
        Ok(())
    }

    /// Handles one message of the watcher's connection; `true` once `turn_id` completed.
    async fn take(
        &self,
        conn: &mut Conn,
        thread: &str,
        stream: &mut Stream,
        turn_id: &str,
        (message, _): (Value, usize),
    ) -> Result<bool, Lost> {
        if message.get("method").is_some() && message.get("id").is_some() {
            conn.answer(&message).await?;
            return Ok(false);
        }
        let Some(cursor) = event_cursor(&message, thread) else {
            return Ok(false);
        };
        self.counters.events_checked.fetch_add(1, Ordering::Relaxed);
        if let Err(anomaly) = stream.observe(&cursor) {
            self.violations.add(format!(
                "watcher {}: the live stream of thread {thread} broke: {anomaly:?}",
                self.name
            ));
        }
        Ok(message["method"] == "turn/completed"
            && message["params"]["turn"]["id"].as_str() == Some(turn_id))
    }

    /// Reconnects through the proxy and resumes from the stream's last cursor, judging the
    /// replay. `None` when stopped or the server never came back.
    async fn resume(
        &self,
        url: &str,
        thread: &str,
        stream: &Stream,
        log: &Mutex<EventLog>,
        life: u32,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<(Conn, Stream, u32)> {
        let deadline = tokio::time::Instant::now() + RECONNECT_LIMIT;
        loop {
            if *stop.borrow() {
                return None;
            }
            if tokio::time::Instant::now() > deadline {
                self.violations.add(format!(
                    "watcher {}: could not resume thread {thread} within {RECONNECT_LIMIT:?}",
                    self.name
                ));
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            let Ok(mut conn) = Conn::open(url, &self.counters).await else {
                continue;
            };
            let from = stream.last().clone();
            let params = json!({"threadId": thread, "excludeTurns": true,
                                "cursor": {"epoch": from.epoch, "seq": from.seq}});
            let mut before = Vec::new();
            let Ok(answer) = conn
                .call("thread/resume", params, &self.counters, &mut |m| {
                    before.push(m)
                })
                .await
            else {
                continue;
            };
            let answer = match answer {
                Ok(answer) => answer,
                // Refused while the store is away (a restart, a lease): try again.
                Err(_) => continue,
            };
            // Read after the answer: a restart bumps the life before the new server listens,
            // so a resume that reached a new server always sees the new life.
            let now_life = self.server.borrow().0;
            let Some(cursor) = Cursor::from_json(&answer["cursor"]) else {
                self.violations.add(format!(
                    "watcher {}: thread/resume with a cursor answered no cursor: {answer}",
                    self.name
                ));
                return None;
            };
            let replayed: Vec<(Cursor, String)> = before
                .iter()
                .filter_map(|(m, _)| Some((event_cursor(m, thread)?, body(m))))
                .collect();
            let judged = ResumeAnswer {
                gap: answer["gap"].as_bool().unwrap_or(false),
                replayed: answer["replayed"].as_u64().unwrap_or(0),
                cursor,
            };
            let (missed, beyond_window) = match lock(log).after(&from) {
                Some((events, bytes)) => (
                    Some(events),
                    events > WINDOW_EVENTS || bytes > WINDOW_BYTES * 9 / 10,
                ),
                None => (None, false),
            };
            let context = ResumeContext {
                restarted: now_life != life,
                missed,
                beyond_window,
            };
            let cursors: Vec<Cursor> = replayed.iter().map(|(c, _)| c.clone()).collect();
            let (mut anomalies, new_stream) = check_resume(&from, &cursors, &judged, context);
            for (cursor, body) in &replayed {
                if lock(log).differs(cursor, body) {
                    anomalies.push(super::cursors::Anomaly::Altered { seq: cursor.seq });
                }
            }
            for anomaly in anomalies {
                self.violations.add(format!(
                    "watcher {}: resume of thread {thread} from seq {} ({context:?}): {anomaly:?}",
                    self.name, from.seq
                ));
            }
            self.counters.resumes.fetch_add(1, Ordering::Relaxed);
            self.counters
                .replayed
                .fetch_add(judged.replayed, Ordering::Relaxed);
            if judged.gap && context.restarted {
                self.counters.restart_gaps.fetch_add(1, Ordering::Relaxed);
            }
            // Requests re-sent after the answer (a pending approval) are answered as they come
            // by the next turn's reading; those that came before it are answered now.
            for (message, _) in &before {
                if message.get("method").is_some() && message.get("id").is_some() {
                    let _ = conn.answer(message).await;
                }
            }
            return Some((conn, new_stream, now_life));
        }
    }
}

/// The anchor: subscribed to the watcher's thread directly on the server, it checks the live
/// stream and keeps the log the watcher's resumes are judged against. It reconnects after a
/// restart (a new stream, logged afresh).
async fn anchor(
    thread: String,
    mut server: ServerAt,
    log: Arc<Mutex<EventLog>>,
    violations: Arc<Violations>,
    counters: Arc<Counters>,
    name: String,
    mut stop: watch::Receiver<bool>,
) {
    while !*stop.borrow() {
        let address = server.borrow_and_update().1;
        let Some(address) = address else {
            tokio::select! {
                _ = server.changed() => continue,
                _ = stop.changed() => return,
            }
        };
        let session = follow(address, &thread, &log, &violations, &counters, &name);
        tokio::select! {
            Err(Lost(_)) = session => {
                // Lost (a restart, or refused while the store is away): try again shortly.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            _ = stop.changed() => return,
        }
    }
}

/// One connection of the anchor, until it is lost.
async fn follow(
    address: SocketAddr,
    thread: &str,
    log: &Mutex<EventLog>,
    violations: &Violations,
    counters: &Counters,
    name: &str,
) -> Result<Infallible, Lost> {
    let mut conn = Conn::open(&format!("ws://{address}"), counters).await?;
    let params = json!({"threadId": thread, "excludeTurns": true});
    // Live events after the point the answer names may arrive before the answer itself.
    let mut early = std::collections::VecDeque::new();
    let answer = conn
        .call("thread/resume", params, counters, &mut |m| {
            early.push_back(m)
        })
        .await?
        .map_err(|e| Lost(format!("thread/resume refused: {e}")))?;
    let mut stream = Stream::at(
        Cursor::from_json(&answer["cursor"])
            .ok_or_else(|| Lost("thread/resume answered no cursor".into()))?,
    );
    loop {
        let next = match early.pop_front() {
            Some(message) => Ok(message),
            None => conn.next().await,
        };
        let (message, size) = match next {
            // Quiet between the watcher's turns is not a loss.
            Err(Lost(reason)) if reason.starts_with("silent") => continue,
            other => other?,
        };
        let Some(cursor) = event_cursor(&message, thread) else {
            continue;
        };
        counters.events_checked.fetch_add(1, Ordering::Relaxed);
        if let Err(anomaly) = stream.observe(&cursor) {
            violations.add(format!(
                "anchor of watcher {name}: the live stream of thread {thread} broke: {anomaly:?}"
            ));
        }
        lock(log).record(&cursor, size, body(&message));
    }
}
