//! Issue 29, points 1 and 2: the agent's patches as `fileChange` items, driven by the scripted
//! agent's `/patch` through the in-process host. What applies without asking (inside the
//! writable roots), what asks (`item/fileChange/requestApproval`), what is refused (`never`),
//! all or nothing, the bad inputs of the issue (each leaves the files as they were and the
//! server running), and the turn's diff (`turn/diff/updated`).
//!
//! Real time, multi-threaded: the server reads and writes the files on blocking threads, and
//! a paused clock would jump to the test's timeouts while they run.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor};
use tandem_protocol::client_methods::{ThreadRead, ThreadStart, TurnStart};
use tandem_protocol::{
    ClientRequest, FileUpdateChange, PatchApplyStatus, PatchChangeKind, RequestId, RequestMethod,
    ServerNotification, ServerRequest, ThreadItem, Turn, TurnStatus,
};
use tandem_server::store::InMemoryThreadStore;
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::{event_method, initialize_params};
use tokio::time::timeout;

const PROMPT: Duration = Duration::from_secs(20);

async fn within<F: Future>(what: &str, future: F) -> F::Output {
    match timeout(PROMPT, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {PROMPT:?}: {what}"),
    }
}

fn next_id() -> RequestId {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed))
}

async fn call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> M::Response {
    let params: M::Params = serde_json::from_value(params).expect("params decode");
    let reply = handle.request(M::into_request(next_id(), params));
    let value = within(M::METHOD, reply)
        .await
        .expect("host answers")
        .unwrap_or_else(|error| panic!("{} failed: {error:?}", M::METHOD));
    serde_json::from_value(value).expect("reply decodes")
}

async fn start(home: &Path) -> InProcessClientHandle {
    let options = ServerOptions::load(ServerConfig::builder().tandem_home(home))
        .expect("options load")
        .with_store(Arc::new(InMemoryThreadStore::new()));
    let args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    );
    within("start", in_process::start(args))
        .await
        .expect("host starts")
}

/// The workspace-write policy with `cwd` as its only root (no `/tmp`, where the test's other
/// directories live).
fn workspace_write() -> Value {
    json!({"type": "workspaceWrite", "writableRoots": [], "networkAccess": false,
           "excludeTmpdirEnvVar": true, "excludeSlashTmp": true})
}

/// A project directory and a directory outside it (both temporary).
struct Dirs {
    _base: tempfile::TempDir,
    home: std::path::PathBuf,
    project: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn dirs() -> Dirs {
    let base = tempfile::tempdir().expect("temp dir");
    let root = std::fs::canonicalize(base.path()).expect("canonical");
    let [home, project, outside] = ["home", "project", "outside"].map(|name| root.join(name));
    for dir in [&home, &project, &outside] {
        std::fs::create_dir_all(dir).expect("dir");
    }
    Dirs {
        _base: base,
        home,
        project,
        outside,
    }
}

/// What one turn sent, in order, and how it ended.
struct Ran {
    events: Vec<InProcessServerEvent>,
    turn: Turn,
}

impl Ran {
    fn methods(&self) -> Vec<&str> {
        self.events.iter().map(event_method).collect()
    }

    fn notifications(&self) -> impl Iterator<Item = &ServerNotification> {
        self.events.iter().filter_map(|event| match event {
            InProcessServerEvent::ServerNotification(note) => Some(note),
            _ => None,
        })
    }

    fn approvals(&self) -> Vec<&tandem_protocol::FileChangeRequestApprovalParams> {
        self.events
            .iter()
            .filter_map(|event| match event {
                InProcessServerEvent::ServerRequest(ServerRequest::FileChangeRequestApproval {
                    params,
                    ..
                }) => Some(params),
                _ => None,
            })
            .collect()
    }

    /// The completed `fileChange` items.
    fn file_changes(&self) -> Vec<(Vec<FileUpdateChange>, PatchApplyStatus)> {
        self.notifications()
            .filter_map(|note| match note {
                ServerNotification::ItemCompleted(done) => match &done.item {
                    ThreadItem::FileChange {
                        changes, status, ..
                    } => Some((changes.clone(), *status)),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    fn diffs(&self) -> Vec<String> {
        self.notifications()
            .filter_map(|note| match note {
                ServerNotification::TurnDiffUpdated(update) => Some(update.diff.clone()),
                _ => None,
            })
            .collect()
    }

    /// The agent messages (the scripted agent says what the model would be told).
    fn said(&self) -> Vec<String> {
        self.turn
            .items
            .iter()
            .filter_map(|item| match item {
                ThreadItem::AgentMessage { text, .. } => Some(text.to_string()),
                _ => None,
            })
            .collect()
    }
}

/// Runs one turn of `text` under `policy` (approval policy and sandbox), answering each file
/// change approval with `decision`, and collects what it sent.
async fn run(
    handle: &mut InProcessClientHandle,
    thread_id: &str,
    text: &str,
    approval_policy: &str,
    sandbox: Value,
    decision: Option<&str>,
) -> Ran {
    call::<TurnStart>(
        handle,
        json!({"threadId": thread_id, "input": [{"type": "text", "text": text}],
               "approvalPolicy": approval_policy, "sandboxPolicy": sandbox}),
    )
    .await;
    let mut events = Vec::new();
    loop {
        let event = within("the turn's events", handle.next_event())
            .await
            .expect("the host stays open");
        if let InProcessServerEvent::ServerRequest(ServerRequest::FileChangeRequestApproval {
            request_id,
            ..
        }) = &event
        {
            let decision = decision.expect("no approval was expected");
            handle
                .respond_to_server_request(request_id.clone(), json!({"decision": decision}))
                .expect("answer sent");
        }
        if let InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(done)) =
            &event
        {
            let turn = done.turn.clone();
            events.push(event);
            return Ran { events, turn };
        }
        events.push(event);
    }
}

async fn thread(handle: &InProcessClientHandle, cwd: &Path) -> String {
    call::<ThreadStart>(handle, json!({"cwd": cwd}))
        .await
        .thread
        .id
}

fn patch(body: &str) -> String {
    format!("/patch\n*** Begin Patch\n{body}\n*** End Patch")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_inside_the_roots_applies_without_asking_as_one_item() {
    let dirs = dirs();
    let project = &dirs.project;
    std::fs::write(project.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(project.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(project.join("old.txt"), "moving\n").unwrap();
    let mut handle = start(&dirs.home).await;
    let id = thread(&handle, project).await;
    let text = patch(
        "*** Update File: a.txt\n@@\n one\n-two\n+TWO\n three\n\
         *** Add File: sub/new.txt\n+fresh\n\
         *** Delete File: gone.txt\n\
         *** Update File: old.txt\n*** Move to: moved.txt\n@@\n-moving\n+moved",
    );
    let ran = run(
        &mut handle,
        &id,
        &text,
        "on-request",
        workspace_write(),
        None,
    )
    .await;

    assert_eq!(ran.turn.status, TurnStatus::Completed);
    assert!(ran.approvals().is_empty(), "{:?}", ran.methods());
    let methods = ran.methods();
    let position = |method: &str| {
        methods
            .iter()
            .position(|seen| *seen == method)
            .unwrap_or_else(|| panic!("no {method} in {methods:?}"))
    };
    assert!(position("item/fileChange/patchUpdated") < position("turn/diff/updated"));
    let started = ran
        .notifications()
        .find_map(|note| match note {
            ServerNotification::ItemStarted(started) => match &started.item {
                ThreadItem::FileChange { status, .. } => Some(*status),
                _ => None,
            },
            _ => None,
        })
        .expect("a fileChange started");
    assert_eq!(started, PatchApplyStatus::InProgress);
    let [(changes, status)] = ran.file_changes().try_into().expect("one item");
    assert_eq!(status, PatchApplyStatus::Completed);
    let kinds: Vec<(String, PatchChangeKind)> = changes
        .iter()
        .map(|change| (change.path.clone(), change.kind.clone()))
        .collect();
    let abs = |name: &str| project.join(name).display().to_string();
    assert_eq!(
        kinds,
        vec![
            (abs("a.txt"), PatchChangeKind::Update { move_path: None }),
            (abs("sub/new.txt"), PatchChangeKind::Add),
            (abs("gone.txt"), PatchChangeKind::Delete),
            (
                abs("old.txt"),
                PatchChangeKind::Update {
                    move_path: Some(abs("moved.txt"))
                }
            ),
        ]
    );
    assert!(
        changes[0].diff.contains("-two\n+TWO\n"),
        "{}",
        changes[0].diff
    );

    assert_eq!(read(&project.join("a.txt")), "one\nTWO\nthree\n");
    assert_eq!(read(&project.join("sub/new.txt")), "fresh\n");
    assert_eq!(read(&project.join("moved.txt")), "moved\n");
    assert!(!project.join("gone.txt").exists() && !project.join("old.txt").exists());
    // No temporary file or backup is left beside them.
    let mut names: Vec<String> = std::fs::read_dir(project)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "moved.txt", "sub"]);

    let [diff] = ran.diffs().try_into().expect("one turn diff");
    assert!(diff.contains("diff --git a/a.txt b/a.txt\n"), "{diff}");
    assert!(
        diff.contains("deleted file mode 100644\n--- a/gone.txt\n"),
        "{diff}"
    );
    assert!(
        diff.contains("rename from old.txt\nrename to moved.txt\n"),
        "{diff}"
    );
    assert!(
        diff.contains("new file mode 100644\n--- /dev/null\n+++ b/sub/new.txt\n"),
        "{diff}"
    );

    let said = ran.said().join("\n");
    for line in [
        "updated a.txt",
        "added sub/new.txt",
        "deleted gone.txt",
        "updated old.txt and moved it to moved.txt",
    ] {
        assert!(said.contains(line), "{said}");
    }
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_diff_runs_from_the_first_content_across_patches() {
    let dirs = dirs();
    let project = &dirs.project;
    std::fs::write(project.join("a.txt"), "v1\n").unwrap();
    let mut handle = start(&dirs.home).await;
    let id = thread(&handle, project).await;
    let text = format!(
        "{}\n{}",
        patch("*** Update File: a.txt\n@@\n-v1\n+v2"),
        patch("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-v2\n+v3")
    );
    let ran = run(&mut handle, &id, &text, "never", workspace_write(), None).await;
    let diffs = ran.diffs();
    assert_eq!(diffs.len(), 2, "one turn/diff/updated per change");
    assert!(diffs[0].contains("-v1\n+v2\n"), "{}", diffs[0]);
    assert!(
        diffs[1].contains("rename from a.txt\nrename to b.txt\n"),
        "{}",
        diffs[1]
    );
    assert!(diffs[1].contains("-v1\n+v3\n"), "{}", diffs[1]);
    for note in ran.notifications() {
        if let ServerNotification::TurnDiffUpdated(update) = note {
            assert_eq!(update.thread_id, id);
            assert_eq!(update.turn_id, ran.turn.id);
        }
    }
    // A new turn starts a new diff.
    let next = run(
        &mut handle,
        &id,
        &patch("*** Update File: b.txt\n@@\n-v3\n+v4"),
        "never",
        workspace_write(),
        None,
    )
    .await;
    let [diff] = next.diffs().try_into().expect("one");
    assert!(
        diff.contains("-v3\n+v4\n") && !diff.contains("v1"),
        "{diff}"
    );
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_the_roots_asks_and_the_answer_decides() {
    let dirs = dirs();
    let target = dirs.outside.join("notes.txt");
    std::fs::write(&target, "before\n").unwrap();
    let mut handle = start(&dirs.home).await;
    let id = thread(&handle, &dirs.project).await;
    let text = patch(&format!(
        "*** Update File: {}\n@@\n-before\n+after",
        target.display()
    ));

    let declined = run(
        &mut handle,
        &id,
        &text,
        "on-request",
        workspace_write(),
        Some("decline"),
    )
    .await;
    let [approval] = declined.approvals().try_into().expect("one approval");
    assert_eq!(approval.thread_id, id);
    assert!(
        approval
            .reason
            .as_deref()
            .is_some_and(|reason| reason.contains(&target.display().to_string())),
        "{approval:?}"
    );
    let [(_, status)] = declined.file_changes().try_into().expect("one item");
    assert_eq!(status, PatchApplyStatus::Declined);
    assert_eq!(read(&target), "before\n");
    assert!(
        declined.said().join("").contains("declined"),
        "{:?}",
        declined.said()
    );
    assert!(declined.diffs().is_empty());

    let approved = run(
        &mut handle,
        &id,
        &text,
        "on-request",
        workspace_write(),
        Some("accept"),
    )
    .await;
    assert_eq!(approved.approvals().len(), 1);
    let methods = approved.methods();
    let asked = methods
        .iter()
        .position(|method| *method == "item/fileChange/requestApproval")
        .unwrap();
    let resolved = methods
        .iter()
        .position(|method| *method == "serverRequest/resolved")
        .unwrap();
    assert!(asked < resolved, "{methods:?}");
    let [(_, status)] = approved.file_changes().try_into().expect("one item");
    assert_eq!(status, PatchApplyStatus::Completed);
    assert_eq!(read(&target), "after\n");

    // Under `never` nothing can be asked: refused, unchanged, no request sent.
    let refused = run(
        &mut handle,
        &id,
        &patch(&format!(
            "*** Update File: {}\n@@\n-after\n+again",
            target.display()
        )),
        "never",
        workspace_write(),
        None,
    )
    .await;
    assert!(refused.approvals().is_empty());
    let [(_, status)] = refused.file_changes().try_into().expect("one item");
    assert_eq!(status, PatchApplyStatus::Declined);
    assert!(
        refused.said().join("").contains("`never`"),
        "{:?}",
        refused.said()
    );
    assert_eq!(read(&target), "after\n");
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_for_session_covers_later_changes_to_the_same_files_only() {
    let dirs = dirs();
    let approved = dirs.outside.join("approved.txt");
    let other = dirs.outside.join("other.txt");
    std::fs::write(&approved, "one\n").unwrap();
    std::fs::write(&other, "one\n").unwrap();
    let mut handle = start(&dirs.home).await;
    let id = thread(&handle, &dirs.project).await;
    let edit = |path: &Path, from: &str, to: &str| {
        patch(&format!(
            "*** Update File: {}\n@@\n-{from}\n+{to}",
            path.display()
        ))
    };

    let first = run(
        &mut handle,
        &id,
        &edit(&approved, "one", "two"),
        "on-request",
        workspace_write(),
        Some("acceptForSession"),
    )
    .await;
    assert_eq!(first.approvals().len(), 1);
    assert_eq!(read(&approved), "two\n");
    // A later turn changing the same file applies without asking.
    let again = run(
        &mut handle,
        &id,
        &edit(&approved, "two", "three"),
        "on-request",
        workspace_write(),
        None,
    )
    .await;
    assert!(again.approvals().is_empty(), "{:?}", again.methods());
    let [(_, status)] = again.file_changes().try_into().expect("one item");
    assert_eq!(status, PatchApplyStatus::Completed);
    assert_eq!(read(&approved), "three\n");
    // Another file outside the roots is still asked for.
    let elsewhere = run(
        &mut handle,
        &id,
        &edit(&other, "one", "two"),
        "on-request",
        workspace_write(),
        Some("decline"),
    )
    .await;
    assert_eq!(elsewhere.approvals().len(), 1);
    assert_eq!(read(&other), "one\n");
    // `never` still refuses: a session approval does not widen that policy.
    let never = run(
        &mut handle,
        &id,
        &edit(&approved, "three", "four"),
        "never",
        workspace_write(),
        None,
    )
    .await;
    let [(_, status)] = never.file_changes().try_into().expect("one item");
    assert_eq!(status, PatchApplyStatus::Declined);
    assert_eq!(read(&approved), "three\n");
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_sandbox_asks_for_every_change_and_git_stays_read_only() {
    let dirs = dirs();
    let project = &dirs.project;
    std::fs::create_dir_all(project.join(".git/hooks")).unwrap();
    std::fs::write(project.join("a.txt"), "x\n").unwrap();
    let mut handle = start(&dirs.home).await;
    let id = thread(&handle, project).await;
    let inside = patch("*** Update File: a.txt\n@@\n-x\n+y");
    let read_only = json!({"type": "readOnly", "networkAccess": false});
    let ran = run(
        &mut handle,
        &id,
        &inside,
        "on-request",
        read_only.clone(),
        Some("decline"),
    )
    .await;
    let [approval] = ran.approvals().try_into().expect("asked");
    assert!(
        approval
            .reason
            .as_deref()
            .is_some_and(|reason| reason.contains("read-only")),
        "{approval:?}"
    );
    assert_eq!(read(&project.join("a.txt")), "x\n");
    let refused = run(&mut handle, &id, &inside, "never", read_only, None).await;
    assert_eq!(refused.file_changes()[0].1, PatchApplyStatus::Declined);
    assert_eq!(read(&project.join("a.txt")), "x\n");

    // Beneath a writable root, its top-level `.git` is not writable without approval.
    let hook = patch("*** Add File: .git/hooks/pre-commit\n+#!/bin/sh");
    let ran = run(&mut handle, &id, &hook, "never", workspace_write(), None).await;
    assert_eq!(ran.file_changes()[0].1, PatchApplyStatus::Declined);
    assert!(!project.join(".git/hooks/pre-commit").exists());
    handle.shutdown().await.expect("clean shutdown");
}

/// The bad inputs of the issue: each fails (or is declined) with a message the model can act
/// on, writes nothing, and the server goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_patches_change_nothing_and_say_why() {
    let dirs = dirs();
    let project = &dirs.project;
    std::fs::write(project.join("a.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(project.join("b.txt"), "gamma\n").unwrap();
    std::fs::write(project.join("blob.bin"), b"\x00\x01binary\n").unwrap();
    std::os::unix::fs::symlink("/etc", project.join("etc")).unwrap();
    let mut handle = start(&dirs.home).await;
    let id = thread(&handle, project).await;
    let big = format!(
        "/patch\n*** Begin Patch\n*** Add File: huge.txt\n{}*** End Patch",
        "+0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n".repeat(1_600_000)
    );
    let cases: Vec<(&str, String, PatchApplyStatus, &str)> = vec![
        (
            "unparsable",
            "/patch\n*** Begin Patch\n*** Frobnicate File: a.txt\n*** End Patch".into(),
            PatchApplyStatus::Failed,
            "line 2",
        ),
        (
            "context mismatch in the second file",
            patch(
                "*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Update File: b.txt\n@@\n-delta\n+DELTA",
            ),
            PatchApplyStatus::Failed,
            "b.txt",
        ),
        (
            "binary file",
            patch("*** Update File: blob.bin\n@@\n-binary\n+text"),
            PatchApplyStatus::Failed,
            "binary",
        ),
        ("100 MB add", big, PatchApplyStatus::Failed, "bytes"),
        (
            "outside every root",
            patch("*** Add File: ../escape.txt\n+out"),
            PatchApplyStatus::Declined,
            "escape.txt",
        ),
        (
            "symlink to /etc",
            patch("*** Add File: etc/tandem-apply29-probe\n+owned"),
            PatchApplyStatus::Declined,
            "etc/tandem-apply29-probe",
        ),
    ];
    for (case, text, expected, named) in cases {
        let ran = run(&mut handle, &id, &text, "never", workspace_write(), None).await;
        assert_eq!(ran.turn.status, TurnStatus::Completed, "{case}");
        let items = ran.file_changes();
        assert_eq!(items.len(), 1, "{case}: {:?}", ran.methods());
        assert_eq!(items[0].1, expected, "{case}");
        let said = ran.said().join("\n");
        assert!(said.contains("no file was changed"), "{case}: {said}");
        assert!(said.contains(named), "{case}: {said}");
        assert!(ran.diffs().is_empty(), "{case}");
        assert_eq!(read(&project.join("a.txt")), "alpha\nbeta\n", "{case}");
        assert_eq!(read(&project.join("b.txt")), "gamma\n", "{case}");
    }
    assert!(!project.join("huge.txt").exists());
    assert!(!dirs.project.parent().unwrap().join("escape.txt").exists());
    assert!(!Path::new("/etc/tandem-apply29-probe").exists());
    assert_eq!(
        std::fs::read(project.join("blob.bin")).unwrap(),
        b"\x00\x01binary\n"
    );
    // The server still serves.
    let ran = run(
        &mut handle,
        &id,
        "still there?",
        "never",
        workspace_write(),
        None,
    )
    .await;
    assert_eq!(ran.said(), ["You said: \"still there?\""]);
    handle.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_item_is_stored_in_progress_with_its_changes_before_any_write() {
    let dirs = dirs();
    let target = dirs.outside.join("later.txt");
    let mut handle = start(&dirs.home).await;
    let id = thread(&handle, &dirs.project).await;
    call::<TurnStart>(
        &handle,
        json!({"threadId": id, "input": [{"type": "text",
               "text": patch(&format!("*** Add File: {}\n+x", target.display()))}],
               "approvalPolicy": "on-request", "sandboxPolicy": workspace_write()}),
    )
    .await;
    // While the approval waits, the thread shows the item with its planned change.
    let request_id = loop {
        let event = within("approval", handle.next_event()).await.expect("open");
        if let InProcessServerEvent::ServerRequest(ServerRequest::FileChangeRequestApproval {
            request_id,
            ..
        }) = event
        {
            break request_id;
        }
    };
    let read_back =
        call::<ThreadRead>(&handle, json!({"threadId": id, "includeTurns": true})).await;
    let items = &read_back
        .thread
        .turns
        .last()
        .expect("the running turn")
        .items;
    let planned = items
        .iter()
        .find_map(|item| match item {
            ThreadItem::FileChange {
                changes, status, ..
            } => Some((changes.clone(), *status)),
            _ => None,
        })
        .expect("the fileChange item is there");
    assert_eq!(planned.1, PatchApplyStatus::InProgress);
    assert_eq!(planned.0[0].path, target.display().to_string());
    assert!(!target.exists());
    handle
        .respond_to_server_request(request_id, json!({"decision": "cancel"}))
        .expect("answer");
    loop {
        let event = within("turn end", handle.next_event()).await.expect("open");
        if let InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(done)) =
            event
        {
            assert_eq!(done.turn.status, TurnStatus::Interrupted);
            assert!(done.turn.items.iter().any(|item| matches!(
                item,
                ThreadItem::FileChange {
                    status: PatchApplyStatus::Declined,
                    ..
                }
            )));
            break;
        }
    }
    assert!(!target.exists());
    handle.shutdown().await.expect("clean shutdown");
}
