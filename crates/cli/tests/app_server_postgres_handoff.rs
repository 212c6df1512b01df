//! Issue 32: a resume of a thread another server holds waits for the handoff. Two real
//! `tandem app-server` processes on one throwaway PostgreSQL cluster with the default
//! `store.handoff_wait_ms`: a thread idle on one moves to the other on the first request, a busy
//! one is refused with `retryAfterMs`, and the holder listens again after the database
//! terminated its connections.
//!
//! Each test skips (saying why) where PostgreSQL is not installed, unless
//! `TANDEM_REQUIRE_POSTGRES=1` (CI), which makes that a failure.

mod common;

use std::time::Duration;

use common::postgres::*;
use common::{PROMPT, within};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_of_a_thread_idle_elsewhere_succeeds_on_the_first_request() {
    let Some(cluster) = cluster() else { return };
    let url = cluster.create_database();
    // Neither the TTL nor a renewal (every 200 s) nor an idle unload (600 s) can hand the
    // thread over within the test: only the request B sends A, and A's release, can.
    let (a, mut alice) = started_waiting("pg-wait-a", &url, 600_000, 600).await;
    let (_b, mut bob) = started_waiting("pg-wait-b", &url, 600_000, 600).await;
    let thread_id = new_thread(&mut alice, "t").await;
    let turn = start_turn(&mut alice, "turn", &thread_id, "on A").await;
    assert_eq!(completed(&mut alice, &turn).await["status"], "completed");

    // Idle on A, still loaded and subscribed there: B's first resume waits for the handoff.
    let answer = bob
        .call("resume", "thread/resume", json!({"threadId": thread_id}))
        .await;
    assert!(
        answer.get("result").is_some(),
        "the first resume is granted: {answer}"
    );
    alice
        .notification("thread/closed", |params| params["threadId"] == thread_id)
        .await;
    let turn = start_turn(&mut bob, "turn", &thread_id, "on B").await;
    assert_eq!(completed(&mut bob, &turn).await["status"], "completed");
    assert_eq!(turns_of(&mut bob, "read", &thread_id).await.len(), 2);

    // A turn running on B: A waits its bound, then is refused with a retryAfterMs.
    let busy = start_turn(&mut bob, "busy", &thread_id, "/sleep 60000").await;
    bob.notification("turn/started", |params| params["turn"]["id"] == busy)
        .await;
    let answer = alice
        .call("back", "thread/resume", json!({"threadId": thread_id}))
        .await;
    let b_pid = owner_pid_of(&answer);
    assert_ne!(b_pid, a.pid);
    assert_leased_elsewhere(&answer, &thread_id, b_pid);
    assert_eq!(answer["error"]["data"]["retryAfterMs"], 2000, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_listens_again_after_its_connections_are_terminated() {
    let Some(cluster) = cluster() else { return };
    let (database, _) = cluster.create_named_database();
    let role_a = format!("{database}_a");
    let role_b = format!("{database}_b");
    let url_a = role_url(cluster, &database, &role_a);
    let url_b = role_url(cluster, &database, &role_b);
    // As in the first-request test: only a notification can move the thread in time.
    let (_a, mut alice) = started_waiting("pg-relisten-a", &url_a, 600_000, 600).await;
    let (_b, mut bob) = started_waiting("pg-relisten-b", &url_b, 600_000, 600).await;
    let thread_id = new_thread(&mut alice, "t").await;
    let turn = start_turn(&mut alice, "turn", &thread_id, "on A").await;
    assert_eq!(completed(&mut alice, &turn).await["status"], "completed");

    // Every connection of A goes, its listener's too; A opens it again by itself.
    let listener_of_a = || {
        cluster
            .sql(&format!(
                "SELECT pid FROM pg_stat_activity WHERE usename = '{role_a}' \
                 AND query LIKE 'LISTEN%'"
            ))
            .expect("find A's listener")
    };
    let before = listener_of_a();
    assert!(!before.is_empty(), "A listens");
    terminate_backends_of(cluster, &role_a);
    within(PROMPT, "A listening again", async {
        loop {
            let now = listener_of_a();
            if !now.is_empty() && now != before {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let answer = bob
        .call("resume", "thread/resume", json!({"threadId": thread_id}))
        .await;
    assert!(
        answer.get("result").is_some(),
        "the holder heard the request on its new listening connection: {answer}"
    );
}
