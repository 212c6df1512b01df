//! Bad input to `tandem app-server` over websocket (issue 8, acceptance 2), each case its own
//! test: the cases shared with stdio (`common/bad_input.rs`), then the websocket's own: size
//! limits (close code 1009, the server and the other connections stay up), invalid UTF-8 in a
//! text frame, pings, and a closed connection being let go.

mod common;

use std::time::Duration;

use common::bad_input::{self, Transport, open, padded_request};
use common::client::{self, Client, Ended};
use common::{PROMPT, within};
use futures::{SinkExt as _, StreamExt as _};
use tokio::io::AsyncReadExt;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

#[tokio::test]
async fn invalid_json() {
    bad_input::invalid_json(Transport::WebSocket).await;
}

#[tokio::test]
async fn json_array() {
    bad_input::json_array(Transport::WebSocket).await;
}

#[tokio::test]
async fn number() {
    bad_input::number(Transport::WebSocket).await;
}

#[tokio::test]
async fn request_without_method() {
    bad_input::request_without_method(Transport::WebSocket).await;
}

#[tokio::test]
async fn unknown_method() {
    bad_input::unknown_method(Transport::WebSocket).await;
}

#[tokio::test]
async fn params_of_the_wrong_type() {
    bad_input::params_of_the_wrong_type(Transport::WebSocket).await;
}

/// In a binary frame, which the server reads like a text frame.
#[tokio::test]
async fn invalid_utf8() {
    bad_input::invalid_utf8(Transport::WebSocket).await;
}

#[tokio::test]
async fn response_to_an_unknown_server_request() {
    bad_input::response_to_an_unknown_server_request(Transport::WebSocket).await;
}

#[tokio::test]
async fn request_before_initialize() {
    bad_input::request_before_initialize(Transport::WebSocket).await;
}

#[tokio::test]
async fn second_initialize() {
    bad_input::second_initialize(Transport::WebSocket).await;
}

#[tokio::test]
async fn duplicate_in_flight_id() {
    bad_input::duplicate_in_flight_id(Transport::WebSocket).await;
}

#[tokio::test]
async fn an_id_reused_after_its_answer() {
    bad_input::an_id_reused_after_its_answer(Transport::WebSocket).await;
}

/// Another initialized connection to the same server.
async fn second_client(address: std::net::SocketAddr) -> Client {
    let mut other = Client::Ws(client::connect(address, &[]).await.expect("connect"));
    other.initialize(false).await;
    other
}

/// `--max-message-bytes` limits websocket messages: one over it closes that connection with
/// 1009, and the server and its other connections go on.
#[tokio::test]
async fn a_message_over_the_limit() {
    let mut session = open(
        Transport::WebSocket,
        "message_over_the_limit",
        &["--max-message-bytes", "1024"],
    )
    .await;
    let address = session.address.expect("websocket");
    session.client.initialize(false).await;
    let mut other = second_client(address).await;
    // At the limit: an ordinary request.
    let answer = session.client.send_and_recv(&padded_request(1, 1024)).await;
    assert!(answer["result"]["data"].is_array(), "{answer}");
    // One byte over.
    session.client.send_text(&padded_request(2, 1025)).await;
    let mut client = session.client.into_ws();
    let ended = client.until_closed().await;
    assert_eq!(ended.code(), Some(1009), "closed with {ended:?}");
    other.assert_serves(3).await;
    let mut fresh = second_client(address).await;
    fresh.assert_serves(4).await;
    other.into_ws().close().await;
    fresh.into_ws().close().await;
    session.server.terminate().await;
}

/// The default limit is 64 MiB: a 70 MiB frame closes its connection with 1009 ("message too
/// big") as soon as its header is read.
#[tokio::test]
async fn a_70_mib_frame() {
    let mut session = open(Transport::WebSocket, "frame_of_70_mib", &[]).await;
    let address = session.address.expect("websocket");
    session.client.initialize(false).await;
    let mut other = second_client(address).await;
    let (mut sink, mut stream) = session.client.into_ws().into_socket().split();
    // The server stops reading at the header: the rest of the send may fail, which is fine.
    let sending = tokio::spawn(async move {
        let frame = padded_request(1, 70 * 1024 * 1024);
        let _ = sink.send(Message::text(frame)).await;
        sink
    });
    let close = within(PROMPT, "the close frame", async {
        loop {
            match stream.next().await {
                Some(Ok(Message::Close(frame))) => return Ended::Close(frame),
                Some(Ok(_)) => {}
                Some(Err(error)) => return Ended::Gone(Some(error)),
                None => return Ended::Gone(None),
            }
        }
    })
    .await;
    assert_eq!(close.code(), Some(1009), "closed with {close:?}");
    if let Ended::Close(Some(frame)) = &close {
        assert_eq!(frame.reason.as_str(), "message too big");
    }
    let _ = within(PROMPT, "the sender to give up", sending).await;
    other.assert_serves(2).await;
    let mut fresh = second_client(address).await;
    fresh.assert_serves(3).await;
    other.into_ws().close().await;
    fresh.into_ws().close().await;
    session.server.terminate().await;
}

/// RFC 6455 requires failing a connection whose text frame is not UTF-8 (close code 1007);
/// the server and its other connections go on.
#[tokio::test]
async fn invalid_utf8_in_a_text_frame() {
    let mut session = open(Transport::WebSocket, "invalid_utf8_text_frame", &[]).await;
    let address = session.address.expect("websocket");
    session.client.initialize(false).await;
    let mut other = second_client(address).await;
    let mut client = session.client.into_ws();
    let payload =
        b"{\"id\": 1, \"method\": \"thread/loaded/list\", \"params\": {\"cursor\": \"\xff\"}}";
    let frame = Frame::message(payload.to_vec(), OpCode::Data(Data::Text), true);
    client.send_message(Message::Frame(frame)).await;
    let ended = client.until_closed().await;
    assert_eq!(ended.code(), Some(1007), "closed with {ended:?}");
    other.assert_serves(2).await;
    other.into_ws().close().await;
    session.server.terminate().await;
}

#[tokio::test]
async fn pings_are_answered_with_pongs() {
    let mut session = open(Transport::WebSocket, "pings", &[]).await;
    session.client.initialize(false).await;
    let mut client = session.client.into_ws();
    for payload in [&b"are you there"[..], b""] {
        client
            .send_message(Message::Ping(payload.to_vec().into()))
            .await;
        let pong = loop {
            match client.next_message().await {
                Some(Ok(Message::Pong(pong))) => break pong,
                Some(Ok(Message::Ping(_))) => {}
                other => panic!("expected a pong, got {other:?}"),
            }
        };
        assert_eq!(&pong[..], payload);
    }
    let mut client = Client::Ws(client);
    client.assert_serves(1).await;
    client.into_ws().close().await;
    session.server.terminate().await;
}

/// After the closing handshake the server closes the TCP connection (RFC 6455 section 7.1.1:
/// the server closes first), rather than keeping the socket and its writer until shutdown.
#[tokio::test]
async fn a_closed_connection_is_let_go() {
    let mut session = open(Transport::WebSocket, "closed_connection", &[]).await;
    let address = session.address.expect("websocket");
    session.client.initialize(false).await;
    let mut socket = session.client.into_ws().into_socket();
    within(PROMPT, "the closing handshake", socket.close(None))
        .await
        .expect("close handshake");
    // The server's close frame came back; what follows on the socket must be its end.
    let mut tcp = socket.into_inner();
    let mut rest = Vec::new();
    let read = within(
        Duration::from_secs(5),
        "the server to close the TCP connection",
        tcp.read_to_end(&mut rest),
    )
    .await;
    match read {
        Ok(_) => {}
        // A reset is also the end of the connection.
        Err(error) => assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset),
    }
    // And the server goes on.
    let mut fresh = second_client(address).await;
    fresh.assert_serves(1).await;
    fresh.into_ws().close().await;
    session.server.terminate().await;
}
