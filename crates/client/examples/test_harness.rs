//! A test harness: a scripted processor from tandem-test-support behind tandem-client, so a
//! test drives it with typed calls, subscriptions and deadlines instead of raw host events.
//!
//! `cargo run -p tandem-client --example test_harness`

use std::time::Duration;

use serde_json::json;
use tandem_client::{
    Client, ClientOptions, Event, SubscriptionFilter, SubscriptionOptions, Transport,
};
use tandem_protocol::ServerNotification;
use tandem_test_support::{TestProcessor, within};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The processor under test: `ping` answers and announces itself.
    let processor = TestProcessor::builder().on("ping", |call| async move {
        call.reply(json!({"pong": call.params()["n"]})).await;
        call.notify("pinged", json!({})).await;
    });
    let start = processor.start_args(false);
    let client = Client::start(
        Transport::Processor(start.processor),
        ClientOptions::new().request_timeout(Some(Duration::from_secs(5))),
    )
    .await?;

    let mut events = client.subscribe(SubscriptionOptions::new(SubscriptionFilter::All));
    let reply = client.request("ping", json!({"n": 7})).await?;
    assert_eq!(reply, json!({"pong": 7}));

    match within(
        Duration::from_secs(5),
        "the pinged notification",
        events.next(),
    )
    .await
    {
        Some(Ok(Event::Notification(ServerNotification::Custom { method, .. }))) => {
            assert_eq!(method, "pinged");
        }
        other => panic!("unexpected {other:?}"),
    }
    println!("ping answered and announced");
    client.close().await;
    Ok(())
}
