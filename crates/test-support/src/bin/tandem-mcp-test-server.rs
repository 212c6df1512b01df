//! `tandem-mcp-test-server`: the MCP test server of `tandem_test_support::mcp_server` as a
//! process, for the MCP client's tests.
//!
//! `tandem-mcp-test-server [--log FILE]` serves over stdio;
//! `tandem-mcp-test-server --http [--log FILE]` serves streamable HTTP on a free loopback port
//! and prints its URL (`http://127.0.0.1:PORT/mcp`) as the first line of stdout.
//! `--start-delay-ms N` waits N ms before serving (a server slow to start).

use std::path::PathBuf;
use std::time::Duration;

use tandem_test_support::mcp_server::{CrashMode, TestMcpServer, serve_http, serve_stdio};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut http = false;
    let mut log = None;
    let mut delay = Duration::ZERO;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => http = true,
            "--log" => log = args.next().map(PathBuf::from),
            "--start-delay-ms" => {
                let millis = args.next().and_then(|ms| ms.parse().ok()).unwrap_or(0);
                delay = Duration::from_millis(millis);
            }
            other => {
                eprintln!("tandem-mcp-test-server: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    tokio::time::sleep(delay).await;
    let mut server = TestMcpServer::new(CrashMode::Exit);
    if let Some(log) = log {
        server = server.with_log(log);
    }
    if http {
        let served = serve_http(server, 0).await?;
        println!("{}", served.url);
        std::future::pending::<()>().await;
        Ok(())
    } else {
        serve_stdio(server).await
    }
}
