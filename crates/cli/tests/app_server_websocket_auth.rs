//! Websocket authentication and routes of `tandem app-server` (issue 8, acceptance 5):
//! `--ws-auth capability-token` with a token file or a SHA-256 digest (401 without the right
//! `Authorization: Bearer`, with a one-line reason), 403 for any request with an `Origin`
//! header, the health routes open without auth, and no unauthenticated non-loopback listener.

mod common;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::time::Instant;

use common::client::{self, Client};
use common::http;
use common::server::{AppServer, Launch, fresh_home};
use sha2::{Digest, Sha256};
use tokio_tungstenite::tungstenite;

const TOKEN: &str = "correct horse battery staple";

/// Writes `TOKEN` to a file the way a user would (`echo TOKEN > FILE; chmod 600 FILE`).
fn token_file(test: &str) -> PathBuf {
    let path = fresh_home(test).with_extension("token");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, format!("{TOKEN}\n")).expect("write the token file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
    path
}

async fn start(test: &str, auth: &[&str]) -> (AppServer, SocketAddr) {
    Launch::new(test)
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .args(auth.iter().copied())
        .websocket()
        .await
}

/// The status and body of a refused upgrade with `headers`.
async fn refused(address: SocketAddr, headers: &[(&str, &str)]) -> (u16, String) {
    match client::connect(address, headers).await {
        Ok(_) => panic!("the upgrade with {headers:?} was accepted"),
        Err(tungstenite::Error::Http(response)) => (
            response.status().as_u16(),
            String::from_utf8_lossy(response.body().as_deref().unwrap_or_default()).into_owned(),
        ),
        Err(other) => panic!("the upgrade with {headers:?} failed without a response: {other}"),
    }
}

/// A refusal reason is one line of text.
fn assert_one_line(body: &str) {
    let line = body
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("not a line: {body:?}"));
    assert!(!line.is_empty() && !line.contains('\n'), "{body:?}");
}

/// With a token required: refusals, then the right token answers `initialize`.
async fn assert_token_required(address: SocketAddr) {
    let bearer = format!("Bearer {TOKEN}");
    let wrong = format!("Bearer {TOKEN}!");
    let basic = "Basic dXNlcjpwYXNz";
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[], "missing Authorization"),
        (&[("Authorization", &wrong)], "invalid bearer token"),
        // An empty token (the header value's trailing space does not survive HTTP).
        (&[("Authorization", "Bearer ")], "Bearer"),
        (&[("Authorization", basic)], "not a Bearer token"),
    ];
    for (headers, reason) in cases {
        let (status, body) = refused(address, headers).await;
        assert_eq!(status, 401, "{headers:?}: {body}");
        assert_one_line(&body);
        assert!(body.contains(reason), "{headers:?}: {body}");
    }
    // A browser's request, even with the right token.
    let (status, body) = refused(
        address,
        &[
            ("Authorization", &bearer),
            ("Origin", "http://localhost:3000"),
        ],
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_one_line(&body);

    let mut client = Client::Ws(
        client::connect(address, &[("Authorization", &bearer)])
            .await
            .expect("the right token connects"),
    );
    client.initialize(false).await;
    client.assert_serves(1).await;
    client.into_ws().close().await;
}

#[tokio::test]
async fn a_token_file_is_required_at_the_upgrade() {
    let file = token_file("auth_file");
    let file = file.to_str().expect("utf-8 path");
    let (server, address) = start(
        "auth_file",
        &["--ws-auth", "capability-token", "--ws-token-file", file],
    )
    .await;
    assert_token_required(address).await;
    server.terminate().await;
}

#[tokio::test]
async fn a_token_digest_is_required_at_the_upgrade() {
    let digest: String = Sha256::digest(TOKEN.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let (server, address) = start(
        "auth_digest",
        &[
            "--ws-auth",
            "capability-token",
            "--ws-token-sha256",
            &digest,
        ],
    )
    .await;
    assert_token_required(address).await;
    server.terminate().await;
}

/// Health routes answer without auth; an `Origin` header gets 403 on every path.
#[tokio::test]
async fn health_routes_need_no_token_and_origins_are_refused() {
    let file = token_file("routes");
    let file = file.to_str().expect("utf-8 path");
    let (server, address) = start(
        "routes",
        &["--ws-auth", "capability-token", "--ws-token-file", file],
    )
    .await;
    for path in ["/readyz", "/healthz"] {
        let response = http::get(address, path, &[]).await;
        assert_eq!(response.status, 200, "{path}: {response:?}");
        let response = http::get(address, path, &[("Origin", "https://example.com")]).await;
        assert_eq!(response.status, 403, "{path}: {response:?}");
        assert_one_line(&response.body);
    }
    // Any other path is the upgrade; without a token a plain GET is refused like one.
    let response = http::get(address, "/", &[]).await;
    assert_eq!(response.status, 401, "{response:?}");
    server.terminate().await;
}

/// Without auth, upgrades on any path are accepted on loopback; origins are still refused.
#[tokio::test]
async fn without_auth_loopback_accepts_and_origins_are_refused() {
    let (server, address) = start("no_auth", &[]).await;
    let (status, _) = refused(address, &[("Origin", "http://localhost")]).await;
    assert_eq!(status, 403);
    let mut client = Client::Ws(client::connect(address, &[]).await.expect("connects"));
    client.initialize(false).await;
    client.assert_serves(1).await;
    client.into_ws().close().await;
    assert_eq!(http::get(address, "/healthz", &[]).await.status, 200);
    server.terminate().await;
}

#[tokio::test]
async fn a_non_loopback_address_without_auth_refuses_to_start() {
    for listen in ["ws://0.0.0.0:0", "ws://[::]:0"] {
        let (server, client) = Launch::new("non_loopback")
            .args(["app-server", "--listen", listen])
            .stdio();
        let since = Instant::now();
        let exited = server.wait_exit(since, common::SHUTDOWN_LIMIT).await;
        drop(client);
        assert_eq!(exited.status.code(), Some(2), "{listen}: {}", exited.stderr);
        assert!(
            exited.stderr.contains("--ws-auth"),
            "{listen}: {}",
            exited.stderr
        );
        assert!(!exited.stderr.contains("listening on"), "{}", exited.stderr);
        exited.assert_no_panic();
    }
}
