//! The shared server requests of [`super::PendingServerRequests`]: first answer wins, only
//! the audience may answer, joining re-sends, leaving waits and expiry declines.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tandem_protocol::{JSONRPCErrorError, RequestId, ServerRequest};

use super::{PendingServerRequests, is_unanswered};
use crate::processor::ConnectionId;

const TIMEOUT: Duration = Duration::from_secs(30);

fn request(id: RequestId) -> ServerRequest {
    ServerRequest::Custom {
        request_id: id,
        method: "test/approve".to_owned(),
        params: json!({}),
    }
}

fn gone() -> JSONRPCErrorError {
    JSONRPCErrorError::internal("gone")
}

#[tokio::test(start_paused = true)]
async fn the_first_answer_from_the_audience_wins() {
    let pending = Arc::new(PendingServerRequests::new(TIMEOUT));
    let (one, two, stranger) = (ConnectionId(1), ConnectionId(2), ConnectionId(3));
    let (sent, answer) = pending.register_shared("thread", vec![one, two], request);
    let id = sent.id().clone();
    assert!(!pending.resolve_from(stranger, &id, Ok(json!("stranger"))));
    assert!(pending.resolve_from(two, &id, Ok(json!("two"))));
    assert!(
        !pending.resolve_from(one, &id, Ok(json!("one"))),
        "too late"
    );
    assert_eq!(answer.await.expect("answered"), Ok(json!("two")));
}

#[tokio::test(start_paused = true)]
async fn a_request_left_by_everyone_waits_for_a_joiner() {
    let pending = Arc::new(PendingServerRequests::new(TIMEOUT));
    let (one, back) = (ConnectionId(1), ConnectionId(2));
    let (sent, mut answer) = pending.register_shared("thread", vec![one], request);
    let id = sent.id().clone();
    pending.leave(one, |_| true, &gone());
    tokio::time::sleep(TIMEOUT - Duration::from_secs(1)).await;
    assert!(answer.try_recv().is_err(), "not declined while it waits");
    assert!(pending.join("other thread", back).is_empty());
    assert_eq!(pending.join("thread", back), vec![sent.clone()]);
    assert!(
        pending.join("thread", back).is_empty(),
        "sent once per connection"
    );
    // The expiry timer of the empty audience no longer applies.
    tokio::time::sleep(TIMEOUT * 2).await;
    assert!(answer.try_recv().is_err());
    assert!(pending.resolve_from(back, &id, Ok(json!("back"))));
    assert_eq!(answer.await.expect("answered"), Ok(json!("back")));
}

#[tokio::test(start_paused = true)]
async fn nobody_coming_back_declines_after_the_timeout() {
    let pending = Arc::new(PendingServerRequests::new(TIMEOUT));
    let one = ConnectionId(1);
    let (_, answer) = pending.register_shared("thread", vec![one], request);
    pending.leave(one, |group| group == Some("thread"), &gone());
    tokio::time::sleep(TIMEOUT + Duration::from_millis(1)).await;
    let error = answer.await.expect("resolved").expect_err("declined");
    assert!(is_unanswered(&error), "{error:?}");
}

#[tokio::test(start_paused = true)]
async fn a_connection_s_own_request_fails_when_it_leaves() {
    let pending = Arc::new(PendingServerRequests::new(TIMEOUT));
    let one = ConnectionId(1);
    let (_, answer) = pending.register(one);
    let (_, shared) = pending.register_shared("thread", vec![one, ConnectionId(2)], request);
    pending.leave(one, |_| true, &gone());
    assert_eq!(answer.await.expect("resolved"), Err(gone()));
    let mut shared = shared;
    assert!(
        shared.try_recv().is_err(),
        "another subscriber may still answer"
    );
}
