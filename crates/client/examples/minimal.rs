//! A minimal embedder: the reference server in this process, one thread, one turn, the
//! agent's text printed as it streams.
//!
//! `cargo run -p tandem-client --example minimal -- "hello"`

use std::io::Write;

use tandem_client::{Client, TurnEvent};
use tandem_protocol::{ThreadStartParams, TurnStartParams};
use tandem_server::ServerOptions;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prompt = std::env::args().nth(1).unwrap_or_else(|| "hello".into());
    let home = std::env::temp_dir().join("tandem-client-minimal-example");
    let client = Client::in_process(ServerOptions::new(home)?).await?;

    let thread = client.start_thread(ThreadStartParams::new()).await?.thread;
    let mut turn = client
        .start_turn(TurnStartParams::text(&thread.id, prompt))
        .await?;
    while let Some(event) = turn.next_event().await {
        match event? {
            TurnEvent::AgentText { delta, .. } => {
                print!("{delta}");
                std::io::stdout().flush()?;
            }
            // Nothing is approved here: declining keeps the example harmless.
            TurnEvent::Approval(request) => request.decline().await?,
            TurnEvent::Completed(done) => println!("\n[{:?}]", done.status),
            _ => {}
        }
    }
    client.close().await;
    Ok(())
}
