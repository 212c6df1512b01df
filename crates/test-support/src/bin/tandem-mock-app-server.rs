//! `tandem-mock-app-server`: the scripted mock app-server of
//! `tandem_test_support::mock_app_server` on stdin and stdout, for testing clients that
//! launch a server process.

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    tandem_test_support::mock_app_server::run_stdio().await
}
