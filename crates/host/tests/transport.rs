//! The wire transports' lane rules, with a test processor behind them: host-made answers that
//! are never dropped, process-control replies that pass queued notifications, the stdio line
//! rules, and websocket connections that do not wait for each other.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tandem_host::transport::websocket::{self, BearerToken, WebSocketOptions};
use tandem_host::transport::{TransportHost, TransportHostOptions, stdio};
use tandem_test_support::{TestProcessor, within};
use tokio::io::{AsyncBufReadExt as _, BufReader, DuplexStream};
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

const LIMIT: Duration = Duration::from_secs(10);

fn initialize(id: i64, experimental: bool) -> String {
    json!({"id": id, "method": "initialize", "params": {
        "clientInfo": {"name": "t", "version": "1"},
        "capabilities": {"experimentalApi": experimental}}})
    .to_string()
}

/// A client of a stdio session served by [`stdio::serve_io`] on pipes.
struct StdioClient {
    input: Option<std::io::PipeWriter>,
    output: tokio::io::Lines<BufReader<DuplexStream>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    host: Arc<TransportHost>,
}

impl StdioClient {
    /// `output_buffer` is how many bytes the server can write before the client reads.
    fn start(
        processor: TestProcessor,
        options: TransportHostOptions,
        stdio_options: stdio::StdioOptions,
        output_buffer: usize,
    ) -> Self {
        let host = TransportHost::start(processor.factory(), options);
        let (reader, writer) = std::io::pipe().expect("pipe");
        let (server_side, client_side) = tokio::io::duplex(output_buffer);
        let served = {
            let host = host.clone();
            tokio::spawn(
                async move { stdio::serve_io(&host, reader, server_side, stdio_options).await },
            )
        };
        Self {
            input: Some(writer),
            output: BufReader::new(client_side).lines(),
            served,
            host,
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let input = self.input.as_mut().expect("input open");
        input.write_all(bytes).expect("write");
        input.flush().expect("flush");
    }

    fn send(&mut self, line: &str) {
        self.send_raw(format!("{line}\n").as_bytes());
    }

    async fn next(&mut self) -> Value {
        let line = within(LIMIT, "a line from the server", self.output.next_line())
            .await
            .expect("read")
            .expect("server output open");
        serde_json::from_str(&line).expect("the server writes JSON lines")
    }

    async fn finish(mut self) {
        self.input = None;
        within(LIMIT, "serve_io to return", self.served)
            .await
            .expect("join")
            .expect("served");
        within(LIMIT, "host shutdown", self.host.shutdown()).await;
    }
}

fn echo_processor() -> TestProcessor {
    TestProcessor::builder().on("echo", |call| async move {
        let params = call.params();
        call.reply(params).await;
    })
}

#[tokio::test]
async fn stdio_answers_bad_lines_and_keeps_the_session() {
    let options = stdio::StdioOptions {
        max_line_bytes: 200,
    };
    let mut client = StdioClient::start(
        echo_processor(),
        TransportHostOptions::default(),
        options,
        1 << 20,
    );
    client.send(&initialize(0, false));
    assert_eq!(client.next().await["id"], 0);

    // Over the limit: -32600 with a null id, and the line is skipped.
    client.send(&format!(
        r#"{{"id":1,"method":"echo","params":{{"pad":"{}"}}}}"#,
        "x".repeat(300)
    ));
    let answer = client.next().await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (Value::Null, json!(-32600))
    );
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("200 bytes")
    );

    // Invalid UTF-8: -32700 with a null id.
    client.send_raw(b"{\"id\":2,\"method\":\"echo\",\"params\":{\"a\":\"\xff\xfe\"}}\n");
    let answer = client.next().await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );

    // Blank and CRLF lines are fine, and the session goes on.
    client.send_raw(b"\n\r\n{\"id\":3,\"method\":\"echo\",\"params\":{\"ok\":true}}\r\n");
    assert_eq!(
        client.next().await,
        json!({"id": 3, "result": {"ok": true}})
    );
    client.finish().await;
}

#[tokio::test]
async fn stdio_end_of_input_answers_what_was_already_sent() {
    let processor = TestProcessor::builder().on("slow", |call| async move {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            call.reply(json!({"done": true})).await;
        });
    });
    let mut client = StdioClient::start(
        processor,
        TransportHostOptions::default(),
        stdio::StdioOptions::default(),
        1 << 20,
    );
    client.send(&initialize(0, false));
    client.send(r#"{"id":1,"method":"slow"}"#);
    // End of input right away: the answer still comes before the session ends.
    client.input = None;
    assert_eq!(client.next().await["id"], 0);
    assert_eq!(
        client.next().await,
        json!({"id": 1, "result": {"done": true}})
    );
    client.finish().await;
}

/// The processor is stuck (its handler waits for the test, behind notifications the client has
/// not read), its queue (capacity 1) is full, and every further request is answered -32001:
/// none of those answers is lost, and they come before the notifications queued first.
#[tokio::test]
async fn overload_answers_are_never_dropped_and_pass_queued_notifications() {
    let stuck = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let processor = {
        let (stuck, release) = (stuck.clone(), release.clone());
        TestProcessor::builder()
            .on("flood", move |call| {
                let (stuck, release) = (stuck.clone(), release.clone());
                async move {
                    call.reply(json!({})).await;
                    stuck.notify_one();
                    // Runs on the processor task: until the test releases it, nothing else is
                    // taken from the processor queue.
                    for n in 0..200 {
                        call.notify("tick", json!({"n": n})).await;
                    }
                    release.notified().await;
                }
            })
            .on("ping", |call| async move {
                call.reply(json!({"pong": true})).await
            })
    };
    let options = TransportHostOptions {
        channel_capacity: 1,
        ..TransportHostOptions::default()
    };
    let mut client = StdioClient::start(processor, options, stdio::StdioOptions::default(), 256);
    client.send(&initialize(0, false));
    assert_eq!(client.next().await["id"], 0);
    client.send(r#"{"id":1,"method":"flood"}"#);
    assert_eq!(client.next().await, json!({"id": 1, "result": {}}));
    within(LIMIT, "the flood to start", stuck.notified()).await;
    for id in 2..12 {
        client.send(&format!(r#"{{"id":{id},"method":"ping"}}"#));
    }
    // Only now does the client read: one ping fits the queue behind the stuck handler, the
    // other nine bounce, and their answers come ahead of the ticks queued before them.
    let mut overloaded = std::collections::BTreeSet::new();
    let mut ticks = 0;
    let mut ticks_before_first_overload = None;
    while overloaded.len() < 9 {
        let message = client.next().await;
        if message["method"] == "tick" {
            ticks += 1;
            continue;
        }
        assert_eq!(message["error"]["code"], -32001, "{message}");
        ticks_before_first_overload.get_or_insert(ticks);
        let id = message["id"].as_i64().expect("an answer");
        assert!(overloaded.insert(id), "answered twice: {id}");
    }
    assert!(
        ticks_before_first_overload.is_some_and(|ticks| ticks < 200),
        "overload answers waited behind the whole flood"
    );
    release.notify_one();
    // The one that fit is answered once the processor is free, and every tick arrives.
    let mut accepted = None;
    while accepted.is_none() || ticks < 200 {
        let message = client.next().await;
        if message["method"] == "tick" {
            ticks += 1;
            continue;
        }
        assert_eq!(message["result"], json!({"pong": true}), "{message}");
        accepted = message["id"].as_i64();
    }
    let accepted = accepted.unwrap();
    assert!(!overloaded.contains(&accepted));
    let mut all: Vec<i64> = overloaded.into_iter().chain([accepted]).collect();
    all.sort_unstable();
    assert_eq!(all, (2..12).collect::<Vec<_>>());
    assert_eq!(ticks, 200);
    client.finish().await;
}

/// On the wire too, a process-control reply passes notifications queued before it.
#[tokio::test]
async fn process_control_replies_pass_queued_notifications_on_the_wire() {
    let queued = Arc::new(Notify::new());
    let replied = Arc::new(Notify::new());
    let processor = {
        let queued = queued.clone();
        TestProcessor::builder()
            .on("flood", move |call| {
                let queued = queued.clone();
                async move {
                    call.reply(json!({})).await;
                    // Off the processor task, so the kill below is processed meanwhile.
                    tokio::spawn(async move {
                        for n in 0..50 {
                            call.notify("tick", json!({"n": n})).await;
                        }
                        queued.notify_one();
                    });
                }
            })
            .on("process/kill", {
                let replied = replied.clone();
                move |call| {
                    let replied = replied.clone();
                    async move {
                        call.reply(json!({"killed": true})).await;
                        replied.notify_one();
                    }
                }
            })
    };
    let mut client = StdioClient::start(
        processor,
        TransportHostOptions::default(),
        stdio::StdioOptions::default(),
        256,
    );
    client.send(&initialize(0, true));
    assert_eq!(client.next().await["id"], 0);
    client.send(r#"{"id":1,"method":"flood"}"#);
    assert_eq!(client.next().await["id"], 1);
    within(LIMIT, "the ticks to be queued", queued.notified()).await;
    client.send(r#"{"id":2,"method":"process/kill","params":{"processHandle":"p"}}"#);
    // The reply is on the reply lane before the client reads anything more.
    within(LIMIT, "the kill reply", replied.notified()).await;
    let mut ticks_before_reply = None;
    let mut ticks = 0;
    while ticks_before_reply.is_none() || ticks < 50 {
        let message = client.next().await;
        if message["method"] == "tick" {
            ticks += 1;
        } else {
            assert_eq!(message, json!({"id": 2, "result": {"killed": true}}));
            ticks_before_reply = Some(ticks);
        }
    }
    let ticks_before_reply = ticks_before_reply.unwrap();
    assert!(
        ticks_before_reply < 50,
        "the kill reply waited behind all {ticks_before_reply} queued notifications"
    );
    client.finish().await;
}

// ---------------------------------------------------------------------------------------------
// websocket
// ---------------------------------------------------------------------------------------------

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn start_websocket(
    processor: TestProcessor,
    options: WebSocketOptions,
) -> (Arc<TransportHost>, std::net::SocketAddr) {
    let host = TransportHost::start(processor.factory(), TransportHostOptions::default());
    let (listener, address) = websocket::bind("127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind");
    tokio::spawn(websocket::serve(host.clone(), listener, options));
    (host, address)
}

async fn connect(address: std::net::SocketAddr, token: Option<&str>) -> Result<Socket, String> {
    let mut request = format!("ws://{address}/")
        .into_client_request()
        .expect("request");
    if let Some(token) = token {
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
    }
    match within(LIMIT, "connect", tokio_tungstenite::connect_async(request)).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            let body = response
                .body()
                .as_ref()
                .map(|body| String::from_utf8_lossy(body).into_owned())
                .unwrap_or_default();
            Err(format!("{} {}", response.status().as_u16(), body.trim()))
        }
        Err(error) => Err(error.to_string()),
    }
}

async fn next_json(socket: &mut Socket) -> Value {
    loop {
        let message = within(LIMIT, "a websocket message", socket.next())
            .await
            .expect("socket open")
            .expect("read");
        match message {
            Message::Text(text) => return serde_json::from_str(&text).expect("JSON"),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn websocket_checks_the_bearer_token_and_refuses_origins() {
    let options = WebSocketOptions {
        auth: Some(BearerToken::from_token("open sesame").unwrap()),
        ..WebSocketOptions::default()
    };
    let (host, address) = start_websocket(echo_processor(), options).await;
    assert_eq!(
        connect(address, None).await.err().as_deref(),
        Some("401 missing Authorization: Bearer <token> header")
    );
    assert_eq!(
        connect(address, Some("open sesam")).await.err().as_deref(),
        Some("401 invalid bearer token")
    );
    let mut socket = connect(address, Some("open sesame"))
        .await
        .expect("right token");
    socket
        .send(Message::text(initialize(0, false)))
        .await
        .unwrap();
    assert_eq!(next_json(&mut socket).await["id"], 0);
    // Pings are answered.
    socket
        .send(Message::Ping(b"are you there".to_vec().into()))
        .await
        .unwrap();
    let pong = within(LIMIT, "pong", socket.next()).await.unwrap().unwrap();
    assert_eq!(pong, Message::Pong(b"are you there".to_vec().into()));

    let mut request = format!("ws://{address}/").into_client_request().unwrap();
    request
        .headers_mut()
        .insert("origin", "https://evil.example".parse().unwrap());
    request
        .headers_mut()
        .insert("authorization", "Bearer open sesame".parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 403);
        }
        other => panic!("expected 403, got {other:?}"),
    }
    within(LIMIT, "shutdown", host.shutdown()).await;
}

#[tokio::test]
async fn an_oversized_message_closes_only_its_connection_with_1009() {
    let options = WebSocketOptions {
        max_message_bytes: 1024,
        ..WebSocketOptions::default()
    };
    let (host, address) = start_websocket(echo_processor(), options).await;
    let mut bystander = connect(address, None).await.unwrap();
    bystander
        .send(Message::text(initialize(0, false)))
        .await
        .unwrap();
    assert_eq!(next_json(&mut bystander).await["id"], 0);

    let mut offender = connect(address, None).await.unwrap();
    offender
        .send(Message::text(initialize(0, false)))
        .await
        .unwrap();
    assert_eq!(next_json(&mut offender).await["id"], 0);
    let big = format!(
        r#"{{"id":1,"method":"echo","params":{{"pad":"{}"}}}}"#,
        "x".repeat(4096)
    );
    offender.send(Message::text(big)).await.unwrap();
    let closed = within(LIMIT, "close frame", offender.next()).await;
    match closed {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(u16::from(frame.code), 1009),
        other => panic!("expected a 1009 close, got {other:?}"),
    }
    bystander
        .send(Message::text(
            r#"{"id":2,"method":"echo","params":{"still":"here"}}"#,
        ))
        .await
        .unwrap();
    assert_eq!(
        next_json(&mut bystander).await,
        json!({"id": 2, "result": {"still": "here"}})
    );
    within(LIMIT, "shutdown", host.shutdown()).await;
}

/// A processor whose `flood {count, bytes, pace_ms}` sends `count` notifications of `bytes`
/// to the caller off the processor task, `pace_ms` apart; `sent` counts those handed over.
fn flooding_processor(sent: Arc<AtomicUsize>) -> TestProcessor {
    TestProcessor::builder()
        .on("echo", |call| async move {
            let params = call.params();
            call.reply(params).await;
        })
        .on("flood", move |call| {
            let sent = sent.clone();
            async move {
                let params = call.params();
                let count = params["count"].as_u64().unwrap_or(0);
                let pad = "y".repeat(params["bytes"].as_u64().unwrap_or(0) as usize);
                let pace = Duration::from_millis(params["pace_ms"].as_u64().unwrap_or(0));
                call.reply(json!({})).await;
                tokio::spawn(async move {
                    for n in 0..count {
                        call.notify("tick", json!({"n": n, "pad": pad})).await;
                        sent.fetch_add(1, Ordering::Relaxed);
                        if !pace.is_zero() {
                            tokio::time::sleep(pace).await;
                        }
                    }
                });
            }
        })
}

/// Connects, initializes, and starts a flood that this client does not read.
async fn stalled_reader(address: std::net::SocketAddr, flood: Value) -> Socket {
    let mut slow = connect(address, None).await.unwrap();
    slow.send(Message::text(initialize(0, false)))
        .await
        .unwrap();
    assert_eq!(next_json(&mut slow).await["id"], 0);
    let request = json!({"id": 1, "method": "flood", "params": flood});
    slow.send(Message::text(request.to_string())).await.unwrap();
    assert_eq!(next_json(&mut slow).await["id"], 1);
    slow
}

/// Waits, without reading, until the host has closed its only connection (a stalled peer):
/// bounded, so a server that never gives up fails the test instead of hanging it.
async fn until_closed(host: &TransportHost) {
    within(
        Duration::from_secs(60),
        "the server to close the stalled connection",
        async {
            while host.open_connections() > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        },
    )
    .await;
}

/// While one connection's writer is stuck (38 MiB queued for it, far more than loopback socket
/// buffers hold), another connection's requests are answered; and the stuck one, once it
/// reads, gets every message in order: nothing was dropped while it lived.
#[tokio::test]
async fn a_connection_that_never_reads_delays_nobody_and_loses_nothing() {
    let sent = Arc::new(AtomicUsize::new(0));
    let options = WebSocketOptions {
        writer_queue_capacity: 1000,
        // Never closed during this test: only independence is checked here.
        slow_connection_grace: Duration::from_secs(3600),
        ..WebSocketOptions::default()
    };
    let (host, address) = start_websocket(flooding_processor(sent.clone()), options).await;
    let flood = json!({"count": 600, "bytes": 64 * 1024});
    let mut slow = stalled_reader(address, flood).await;
    within(LIMIT, "the router to take the whole flood", async {
        while sent.load(Ordering::Relaxed) < 600 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    let mut other = connect(address, None).await.unwrap();
    other
        .send(Message::text(initialize(0, false)))
        .await
        .unwrap();
    assert_eq!(next_json(&mut other).await["id"], 0);
    for id in 1..=20 {
        other
            .send(Message::text(
                json!({"id": id, "method": "echo", "params": {}}).to_string(),
            ))
            .await
            .unwrap();
        assert_eq!(next_json(&mut other).await["id"], id);
    }
    for n in 0..600 {
        let tick = next_json(&mut slow).await;
        assert_eq!(tick["params"]["n"], n);
    }
    within(LIMIT, "shutdown", host.shutdown()).await;
}

/// A connection whose peer takes no bytes for the grace period is closed; reading it then
/// drains what its socket buffered and ends.
#[tokio::test]
async fn a_connection_that_never_reads_is_closed_after_the_grace_period() {
    let sent = Arc::new(AtomicUsize::new(0));
    let options = WebSocketOptions {
        writer_queue_capacity: 64,
        slow_connection_grace: Duration::from_secs(1),
        ..WebSocketOptions::default()
    };
    let (host, address) = start_websocket(flooding_processor(sent.clone()), options).await;
    // Paced so the backlog grows by at most 50 during the grace period: the close comes from
    // the grace period, not from the backlog outgrowing the queue.
    let flood = json!({"count": 100_000, "bytes": 256 * 1024, "pace_ms": 20});
    let mut slow = stalled_reader(address, flood).await;
    // Reading earlier would let the writer make progress and restart the grace period: the
    // client reads nothing until the server has closed the connection.
    until_closed(&host).await;
    let received = within(
        Duration::from_secs(30),
        "the slow connection to end",
        async {
            let mut received = 0;
            loop {
                match slow.next().await {
                    Some(Ok(Message::Text(_))) => received += 1,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return received,
                    Some(Ok(_)) => {}
                }
            }
        },
    )
    .await;
    assert!(received < 100_000, "the connection was never closed");
    within(LIMIT, "shutdown", host.shutdown()).await;
}

/// Issue 27, point 1, on a real socket: a burst five times the writer queue's bytes (as one
/// turn re-emits its input) reaches a client that reads, whole and in order; only a backlog
/// past its ceiling (seven queues) would close it.
#[tokio::test]
async fn a_burst_past_the_queue_s_bytes_reaches_a_client_that_reads() {
    const MIB: usize = 1024 * 1024;
    let sent = Arc::new(AtomicUsize::new(0));
    let host = TransportHost::start(
        flooding_processor(sent).factory(),
        TransportHostOptions {
            writer_queue_bytes: MIB,
            ..TransportHostOptions::default()
        },
    );
    let options = WebSocketOptions {
        max_message_bytes: MIB,
        ..WebSocketOptions::default()
    };
    let (listener, address) = websocket::bind("127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind");
    tokio::spawn(websocket::serve(host.clone(), listener, options));
    let flood = json!({"count": 6, "bytes": 900_000});
    let mut client = stalled_reader(address, flood).await;
    for n in 0..6 {
        let tick = next_json(&mut client).await;
        assert_eq!(tick["params"]["n"], n, "a tick lost or reordered");
    }
    within(LIMIT, "shutdown", host.shutdown()).await;
}

/// Issue 27, point 2, on a real socket: the writer is inside one 12 MiB write with its queue
/// under every limit (default options) and the peer reads nothing; the connection is closed
/// once its socket has taken nothing for the grace period. Reading afterwards gets what the
/// kernel buffered, then the end: the message never arrives whole.
#[tokio::test]
async fn a_peer_that_takes_nothing_of_one_large_write_is_closed_after_the_grace() {
    let grace = Duration::from_secs(1);
    let options = WebSocketOptions {
        slow_connection_grace: grace,
        ..WebSocketOptions::default()
    };
    let sent = Arc::new(AtomicUsize::new(0));
    let (host, address) = start_websocket(flooding_processor(sent), options).await;
    // Under the client's 16 MiB frame limit, far over what loopback socket buffers hold.
    let flood = json!({"count": 1, "bytes": 12 * 1024 * 1024});
    let mut slow = stalled_reader(address, flood).await;
    // Nothing is read until the server gave up: a fixed sleep here was flaky under load, when
    // building the message and filling the socket took longer than the sleep.
    until_closed(&host).await;
    let ended = within(LIMIT, "the stalled connection to end", async {
        loop {
            match slow.next().await {
                Some(Ok(Message::Text(text))) => return Err(format!("{} bytes", text.len())),
                Some(Ok(Message::Close(_))) | None => return Ok(()),
                Some(Err(tokio_tungstenite::tungstenite::Error::Capacity(error))) => {
                    return Err(format!("the client refused the frame: {error}"));
                }
                // The server dropped the socket without a close frame, as it does for a peer
                // that cannot take one.
                Some(Err(_)) => return Ok(()),
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert_eq!(ended, Ok(()), "the message arrived: never closed");
    within(LIMIT, "shutdown", host.shutdown()).await;
}

/// A text of `bytes` with characters JSON escapes (quotes, newlines, backslashes) and
/// multi-byte ones, so that a part boundary falls inside escapes and characters.
fn awkward_text(bytes: usize) -> String {
    "ab\"c\\d\ne\u{e9}\u{1f600}".repeat(bytes / 16)
}

/// Issue 27, point 1: a message over the parts threshold (1 MiB) leaves in parts; on the wire it
/// is one message, byte for byte what a whole encoding gives, between the small ones around it.
#[tokio::test]
async fn stdio_a_large_message_arrives_whole_and_in_order() {
    let mut client = StdioClient::start(
        echo_processor(),
        TransportHostOptions::default(),
        stdio::StdioOptions::default(),
        64 * 1024,
    );
    client.send(&initialize(0, false));
    assert_eq!(client.next().await["id"], 0);
    let text = awkward_text(3 * 1024 * 1024);
    client.send(&json!({"id": 1, "method": "echo", "params": {"n": 1}}).to_string());
    client.send(&json!({"id": 2, "method": "echo", "params": {"text": text}}).to_string());
    client.send(&json!({"id": 3, "method": "echo", "params": {"n": 3}}).to_string());
    assert_eq!(client.next().await, json!({"id": 1, "result": {"n": 1}}));
    let large = client.next().await;
    assert_eq!(large["id"], 2);
    assert!(large["result"]["text"] == text, "the large answer differs");
    assert_eq!(client.next().await, json!({"id": 3, "result": {"n": 3}}));
    client.finish().await;
}

/// The same over websocket: the large answer arrives as one text message in fragments. The
/// client accepts frames of at most 1 MiB: a message sent as a single frame would be refused.
#[tokio::test]
async fn websocket_a_large_message_arrives_in_fragments_whole_and_in_order() {
    let (host, address) = start_websocket(echo_processor(), WebSocketOptions::default()).await;
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_frame_size(Some(1024 * 1024))
        .max_message_size(Some(64 * 1024 * 1024));
    let request = format!("ws://{address}/")
        .into_client_request()
        .expect("request");
    let (mut client, _) = within(
        LIMIT,
        "connect",
        tokio_tungstenite::connect_async_with_config(request, Some(config), false),
    )
    .await
    .expect("connect");
    client
        .send(Message::text(initialize(0, false)))
        .await
        .unwrap();
    assert_eq!(next_json(&mut client).await["id"], 0);
    let text = awkward_text(3 * 1024 * 1024);
    for request in [
        json!({"id": 1, "method": "echo", "params": {"n": 1}}),
        json!({"id": 2, "method": "echo", "params": {"text": text}}),
        json!({"id": 3, "method": "echo", "params": {"n": 3}}),
    ] {
        client
            .send(Message::text(request.to_string()))
            .await
            .unwrap();
    }
    assert_eq!(
        next_json(&mut client).await,
        json!({"id": 1, "result": {"n": 1}})
    );
    let large = next_json(&mut client).await;
    assert_eq!(large["id"], 2);
    assert!(large["result"]["text"] == text, "the large answer differs");
    assert_eq!(
        next_json(&mut client).await,
        json!({"id": 3, "result": {"n": 3}})
    );
    within(LIMIT, "shutdown", host.shutdown()).await;
}

/// Large frames leave past tungstenite's write buffer (`transport::raw_frames`), and the pongs
/// tungstenite writes by itself must never land inside one. The client lets a flood of 100 KB
/// notifications fill the socket, then reads it while pinging every millisecond, so that pings
/// arrive while the server is inside a frame the socket could not take at once: every tick
/// arrives whole and in order, and the pings are answered. A pong written mid-frame would
/// break the client's framing.
#[tokio::test]
async fn pings_during_a_flood_of_large_frames_are_answered_between_whole_frames() {
    pings_during_a_flood_are_answered_between_whole_frames(300, 100_000).await;
}

/// The same with notifications over the parts threshold (1 MiB): each leaves as a text frame
/// and continuation frames of 256 KiB, each written past tungstenite's buffer, and pongs come
/// between the fragments (RFC 6455 section 5.4 allows it): every message arrives whole and in
/// order. (A pong while a frame is half written is the test above's case: it fails without the
/// gate, and this one does not reliably reach it; this one fails on a part framed wrong.)
#[tokio::test]
async fn pings_during_a_flood_of_messages_in_parts_are_answered_between_whole_frames() {
    pings_during_a_flood_are_answered_between_whole_frames(40, 1_200_000).await;
}

async fn pings_during_a_flood_are_answered_between_whole_frames(ticks_sent: u64, bytes: usize) {
    const PINGS: u16 = 400;
    let sent = Arc::new(AtomicUsize::new(0));
    let (host, address) = start_websocket(
        flooding_processor(sent.clone()),
        WebSocketOptions::default(),
    )
    .await;
    let flood = json!({"count": ticks_sent, "bytes": bytes});
    let client = stalled_reader(address, flood).await;
    // The socket and the writer's queue fill up: the flood's task stops handing over ticks.
    within(LIMIT, "the flood to stall", async {
        loop {
            let before = sent.load(Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(50)).await;
            if sent.load(Ordering::Relaxed) == before {
                break;
            }
        }
    })
    .await;
    let (mut pings, mut reads) = client.split();
    let pinging = tokio::spawn(async move {
        for n in 0..PINGS {
            pings
                .send(Message::Ping(n.to_be_bytes().to_vec().into()))
                .await
                .expect("ping");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let (mut ticks, mut pongs) = (0, Vec::new());
    let last = (PINGS - 1).to_be_bytes().to_vec();
    while ticks < ticks_sent || !pongs.contains(&last) {
        let message = within(LIMIT, "a tick or a pong", reads.next())
            .await
            .expect("socket open")
            .expect("a well-formed frame");
        match message {
            Message::Text(text) => {
                let tick: Value = serde_json::from_str(&text).expect("a whole JSON tick");
                assert_eq!(tick["params"]["n"], ticks, "a tick lost or reordered");
                assert_eq!(tick["params"]["pad"].as_str().map(str::len), Some(bytes));
                ticks += 1;
            }
            Message::Pong(payload) => pongs.push(payload.to_vec()),
            other => panic!("unexpected {other:?}"),
        }
    }
    within(LIMIT, "the pings", pinging).await.unwrap();
    // tungstenite answers the latest ping it has not answered yet, so pings that arrive
    // together get one pong; the last one is always answered, and pongs come in order.
    let numbers: Vec<u16> = pongs
        .iter()
        .map(|pong| u16::from_be_bytes(pong[..].try_into().expect("a 2-byte pong")))
        .collect();
    assert!(numbers.is_sorted(), "pongs out of order: {numbers:?}");
    within(LIMIT, "shutdown", host.shutdown()).await;
}
