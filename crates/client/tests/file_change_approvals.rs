//! tandem-client's typed `item/fileChange/requestApproval` (issue 29, point 8): a turn handle
//! hands it over as [`TurnEvent::FileChangeApproval`] after the `fileChange` item it names has
//! started; accepting writes the file, declining leaves it unwritten; a handle read with
//! `wait_completed` gives it to the default handler, which declines. The server's default
//! sandbox is read-only, so every patch asks.

use std::time::Duration;

use tandem_client::{Client, ClientOptions, Transport, TurnEvent};
use tandem_protocol::{
    PatchApplyStatus, ThreadItem, ThreadStartParams, TurnStartParams, TurnStatus,
};
use tandem_server::ServerOptions;
use tandem_test_support::within;

const LIMIT: Duration = Duration::from_secs(60);

async fn client(home: &tempfile::TempDir) -> Client {
    let server = ServerOptions::new(home.path()).expect("server options");
    Client::start(Transport::InProcess(server), ClientOptions::new())
        .await
        .expect("client starts")
}

fn add_file(path: &std::path::Path) -> String {
    format!(
        "/patch\n*** Begin Patch\n*** Add File: {}\n+hello\n*** End Patch",
        path.display()
    )
}

/// Runs a turn that adds `path`, answering its approval with `accept`; returns the final
/// status of the `fileChange` item.
async fn patch_turn(
    client: &Client,
    thread: &str,
    path: &std::path::Path,
    accept: bool,
) -> PatchApplyStatus {
    let mut turn = client
        .start_turn(TurnStartParams::text(thread, add_file(path)))
        .await
        .expect("turn");
    let mut started = None;
    let mut status = None;
    loop {
        match within(LIMIT, "turn events", turn.next_event()).await {
            Some(Ok(TurnEvent::ItemStarted(ThreadItem::FileChange { id, changes, .. }))) => {
                assert_eq!(changes.len(), 1);
                started = Some(id);
            }
            Some(Ok(TurnEvent::FileChangeApproval(request))) => {
                assert_eq!(
                    Some(request.item_id()),
                    started.as_deref(),
                    "the approval names the item started before it"
                );
                assert!(request.params().reason.is_some());
                let answered = if accept {
                    request.accept().await
                } else {
                    request.decline().await
                };
                answered.expect("answered");
            }
            Some(Ok(TurnEvent::ItemCompleted(ThreadItem::FileChange { status: done, .. }))) => {
                status = Some(done);
            }
            Some(Ok(TurnEvent::Completed(done))) => {
                assert_eq!(done.status, TurnStatus::Completed);
                break;
            }
            Some(Ok(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    status.expect("the fileChange item completed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_change_approvals_are_typed_and_decide_the_write() {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp home");
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp work");
    let client = client(&home).await;
    let thread = client
        .start_thread(
            ThreadStartParams::new()
                .ephemeral(true)
                .cwd(work.path().display().to_string()),
        )
        .await
        .expect("thread")
        .thread;

    let accepted = work.path().join("accepted.txt");
    assert_eq!(
        patch_turn(&client, &thread.id, &accepted, true).await,
        PatchApplyStatus::Completed
    );
    assert_eq!(
        std::fs::read_to_string(&accepted).expect("written"),
        "hello\n"
    );

    let declined = work.path().join("declined.txt");
    assert_eq!(
        patch_turn(&client, &thread.id, &declined, false).await,
        PatchApplyStatus::Declined
    );
    assert!(!declined.exists());

    // Unattended: the default handler declines.
    let unattended = work.path().join("unattended.txt");
    let turn = client
        .start_turn(TurnStartParams::text(&thread.id, add_file(&unattended)))
        .await
        .expect("turn");
    let done = within(LIMIT, "the turn's end", turn.wait_completed())
        .await
        .expect("completed");
    assert!(
        done.items.iter().any(|item| matches!(
            item,
            ThreadItem::FileChange {
                status: PatchApplyStatus::Declined,
                ..
            }
        )),
        "{:?}",
        done.items
    );
    assert!(!unattended.exists());
    client.close().await;
}
