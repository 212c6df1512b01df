//! A front end's test on a cassette: one agent turn answered from
//! `examples/cassettes/hello.jsonl`, offline and the same on every run.
//!
//! Run it: `cargo run -p tandem-test-support --features cassette --example cassette_replay`.
//!
//! To re-record against a real OpenAI-compatible server (here a llama.cpp `llama-server` or
//! Ollama on port 8080; `TANDEM_EXAMPLE_BASE_URL` points elsewhere), delete the cassette and
//! run it with `TANDEM_CASSETTE_MODE=record`. The committed cassette was recorded against
//! Tandem's loopback model mock standing in for such a server, so the answer is the mock's.

use tandem_test_support::cassette::{CassetteServer, agent_text};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let base_url = std::env::var("TANDEM_EXAMPLE_BASE_URL")
            .unwrap_or_else(|_| "http://127.0.0.1:8080/v1".to_owned());
        let cassette = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/cassettes/hello.jsonl"
        );
        let mut server = CassetteServer::builder(cassette)
            .provider("local")
            .config_override("model_providers.local.base_url", base_url)
            .model("qwen3:8b")
            .start()
            .await?;
        let thread = server.start_thread(serde_json::json!({})).await?;
        let events = server
            .run_turn(&thread, "Say hello to the test suite.")
            .await?;
        let said = agent_text(&events);
        println!("{:?} mode, the agent said: {said}", server.mode());
        // What a front end's test asserts: the same answer every time.
        assert_eq!(said, "Hello, test suite! Nothing here needed a network.");
        server.shutdown().await?;
        Ok(())
    })
}
