//! Issue 29, point 9: `restoreFiles: true` on `thread/revert` and `thread/rollback` puts back
//! what the reverted turns' patches wrote (added files removed, updated ones restored,
//! deleted ones recreated, moves undone), leaves a file changed on disk since alone and names
//! it, touches nothing without the flag, works after a restart (the checkpoints are in the
//! SQLite store), and names a turn past the bound instead of restoring part of it. Patches are
//! driven by the scripted agent's `/patch` through the in-process host.
//!
//! Real time, multi-threaded: the server reads and writes the files on blocking threads.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor};
use tandem_protocol::client_methods::{
    ThreadResume, ThreadRevert, ThreadRollback, ThreadStart, TurnStart,
};
use tandem_protocol::{
    ClientRequest, RequestId, RequestMethod, ServerNotification, ServerRequest, ThreadItem,
    TurnStatus,
};
use tandem_server::store::InMemoryThreadStore;
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;
use tokio::time::timeout;

const PROMPT: Duration = Duration::from_secs(60);

async fn within<F: Future>(what: &str, future: F) -> F::Output {
    match timeout(PROMPT, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {PROMPT:?}: {what}"),
    }
}

/// The answer to `M` with `params`, as JSON (so that absent members can be checked), or
/// the error.
async fn try_call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> Result<Value, tandem_protocol::JSONRPCErrorError> {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    let params: M::Params = serde_json::from_value(params).expect("params decode");
    let id = RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed));
    within(M::METHOD, handle.request(M::into_request(id, params)))
        .await
        .expect("host answers")
}

async fn call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> Value {
    try_call::<M>(handle, params)
        .await
        .unwrap_or_else(|error| panic!("{} failed: {error:?}", M::METHOD))
}

/// A server over `home`: its SQLite store, or an in-memory one.
async fn start(home: &Path, sqlite: bool) -> InProcessClientHandle {
    let mut options =
        ServerOptions::load(ServerConfig::builder().tandem_home(home)).expect("options load");
    if !sqlite {
        options = options.with_store(Arc::new(InMemoryThreadStore::new()));
    }
    let args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    );
    within("start", in_process::start(args))
        .await
        .expect("host starts")
}

/// A home and a project directory (the thread's cwd and only writable root).
struct Dirs {
    _base: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

fn dirs() -> Dirs {
    let base = tempfile::tempdir().expect("temp dir");
    let root = std::fs::canonicalize(base.path()).expect("canonical");
    let (home, project) = (root.join("home"), root.join("project"));
    for dir in [&home, &project] {
        std::fs::create_dir_all(dir).expect("dir");
    }
    Dirs {
        _base: base,
        home,
        project,
    }
}

async fn thread(handle: &InProcessClientHandle, cwd: &Path) -> String {
    let reply = call::<ThreadStart>(handle, json!({"cwd": cwd})).await;
    reply["thread"]["id"].as_str().expect("id").to_owned()
}

/// Runs one turn of `text` (workspace-write on the cwd, never asking) to its end; returns
/// the turn id and what the scripted agent said.
async fn run(handle: &mut InProcessClientHandle, thread_id: &str, text: &str) -> (String, String) {
    run_under(handle, thread_id, text, "never").await
}

/// [`run`] under `approval_policy`, accepting every file change the turn asks about.
async fn run_under(
    handle: &mut InProcessClientHandle,
    thread_id: &str,
    text: &str,
    approval_policy: &str,
) -> (String, String) {
    let sandbox = json!({"type": "workspaceWrite", "writableRoots": [], "networkAccess": false,
                         "excludeTmpdirEnvVar": true, "excludeSlashTmp": true});
    let reply = call::<TurnStart>(
        handle,
        json!({"threadId": thread_id, "input": [{"type": "text", "text": text}],
               "approvalPolicy": approval_policy, "sandboxPolicy": sandbox}),
    )
    .await;
    let turn_id = reply["turn"]["id"].as_str().expect("turn id").to_owned();
    loop {
        let event = within("turn/completed", handle.next_event())
            .await
            .expect("the host stays open");
        if let InProcessServerEvent::ServerRequest(ServerRequest::FileChangeRequestApproval {
            request_id,
            ..
        }) = &event
        {
            handle
                .respond_to_server_request(request_id.clone(), json!({"decision": "accept"}))
                .expect("answer sent");
            continue;
        }
        if let InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(done)) =
            event
            && done.turn.id == turn_id
        {
            assert_eq!(done.turn.status, TurnStatus::Completed, "{text}");
            let said: Vec<String> = done
                .turn
                .items
                .iter()
                .filter_map(|item| match item {
                    ThreadItem::AgentMessage { text, .. } => Some(text.to_string()),
                    _ => None,
                })
                .collect();
            return (turn_id, said.join("\n"));
        }
    }
}

fn patch(body: &str) -> String {
    format!("/patch\n*** Begin Patch\n{body}\n*** End Patch")
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn paths(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|entry| {
            entry
                .as_str()
                .or_else(|| entry["path"].as_str())
                .expect("a path")
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_restores_added_updated_deleted_and_moved_files_of_two_turns() {
    let dirs = dirs();
    let project = &dirs.project;
    let at = |name: &str| project.join(name);
    std::fs::write(at("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(at("gone.txt"), "bye\n").unwrap();
    std::fs::write(at("old.txt"), "moving\n").unwrap();
    let mut handle = start(&dirs.home, false).await;
    let id = thread(&handle, project).await;
    run(
        &mut handle,
        &id,
        &patch(
            "*** Update File: a.txt\n@@\n one\n-two\n+TWO\n\
             *** Add File: sub/new.txt\n+fresh\n\
             *** Delete File: gone.txt\n\
             *** Update File: old.txt\n*** Move to: moved.txt\n@@\n-moving\n+moved",
        ),
    )
    .await;
    // A second turn changes a file of the first again and adds one of its own.
    run(
        &mut handle,
        &id,
        &patch("*** Update File: a.txt\n@@\n one\n-TWO\n+2\n*** Add File: b.txt\n+b"),
    )
    .await;
    assert_eq!(read(&at("a.txt")).as_deref(), Some("one\n2\n"));

    let answer = call::<ThreadRollback>(
        &handle,
        json!({"threadId": id, "numTurns": 2, "restoreFiles": true}),
    )
    .await;

    assert_eq!(read(&at("a.txt")).as_deref(), Some("one\ntwo\n"));
    assert_eq!(read(&at("gone.txt")).as_deref(), Some("bye\n"));
    assert_eq!(read(&at("old.txt")).as_deref(), Some("moving\n"));
    for added in ["sub/new.txt", "moved.txt", "b.txt"] {
        assert!(!at(added).exists(), "{added} is removed again");
    }
    let abs = |name: &str| at(name).display().to_string();
    let mut expected = [
        "a.txt",
        "b.txt",
        "gone.txt",
        "moved.txt",
        "old.txt",
        "sub/new.txt",
    ]
    .map(abs)
    .to_vec();
    expected.sort();
    assert_eq!(paths(&answer["restoredFiles"]), expected);
    assert_eq!(answer["skippedFiles"], json!([]));
    assert_eq!(answer["unrestorableTurns"], json!([]));
    assert_eq!(answer["thread"]["turns"], json!([]));
    // No temporary file or backup is left behind.
    let mut names: Vec<String> = std::fs::read_dir(project)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "gone.txt", "old.txt", "sub"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_on_disk_since_is_left_alone_and_named() {
    let dirs = dirs();
    let project = &dirs.project;
    let at = |name: &str| project.join(name);
    std::fs::write(at("a.txt"), "a\n").unwrap();
    std::fs::write(at("b.txt"), "b\n").unwrap();
    let mut handle = start(&dirs.home, false).await;
    let id = thread(&handle, project).await;
    let (turn_id, _) = run(
        &mut handle,
        &id,
        &patch("*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-b\n+B"),
    )
    .await;
    // The user edits b.txt after the turn.
    std::fs::write(at("b.txt"), "mine\n").unwrap();

    let answer = call::<ThreadRevert>(
        &handle,
        json!({"threadId": id, "beforeTurnId": turn_id, "restoreFiles": true}),
    )
    .await;

    assert_eq!(read(&at("a.txt")).as_deref(), Some("a\n"));
    assert_eq!(read(&at("b.txt")).as_deref(), Some("mine\n"), "left alone");
    assert_eq!(
        paths(&answer["restoredFiles"]),
        [at("a.txt").display().to_string()]
    );
    let skipped = answer["skippedFiles"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 1, "{answer}");
    assert_eq!(skipped[0]["path"], json!(at("b.txt").display().to_string()));
    let reason = skipped[0]["reason"].as_str().expect("reason");
    assert!(
        reason.contains("changed on disk") && reason.contains(&turn_id),
        "{reason}"
    );
    // The history is cut as without the flag.
    assert_eq!(answer["turnsBackwardsCursor"], Value::Null);
    let resumed = call::<ThreadResume>(&handle, json!({"threadId": id})).await;
    assert_eq!(resumed["thread"]["turns"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_restore_files_no_file_is_touched_and_the_answer_is_the_references() {
    let dirs = dirs();
    let project = &dirs.project;
    let file = project.join("a.txt");
    std::fs::write(&file, "a\n").unwrap();
    let mut handle = start(&dirs.home, false).await;
    let id = thread(&handle, project).await;
    for flag in [None, Some(false)] {
        let (turn_id, _) = run(&mut handle, &id, &patch("*** Add File: added.txt\n+new")).await;
        let mut params = json!({"threadId": id, "beforeTurnId": turn_id});
        if let Some(flag) = flag {
            params["restoreFiles"] = json!(flag);
        }
        let answer = call::<ThreadRevert>(&handle, params).await;
        let members: Vec<&String> = answer.as_object().expect("object").keys().collect();
        assert_eq!(
            members,
            ["itemsBackwardsCursor", "thread", "turnsBackwardsCursor"],
            "{flag:?}"
        );
        assert_eq!(read(&project.join("added.txt")).as_deref(), Some("new\n"));
        std::fs::remove_file(project.join("added.txt")).unwrap();
    }
    let (_, _) = run(
        &mut handle,
        &id,
        &patch("*** Update File: a.txt\n@@\n-a\n+b"),
    )
    .await;
    let answer = call::<ThreadRollback>(&handle, json!({"threadId": id, "numTurns": 1})).await;
    assert!(answer.get("restoredFiles").is_none(), "{answer}");
    assert_eq!(read(&file).as_deref(), Some("b\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checkpoints_survive_a_restart() {
    let dirs = dirs();
    let project = &dirs.project;
    let file = project.join("a.txt");
    std::fs::write(&file, "before\n").unwrap();
    let id = {
        let mut handle = start(&dirs.home, true).await;
        let id = thread(&handle, project).await;
        run(
            &mut handle,
            &id,
            &patch("*** Update File: a.txt\n@@\n-before\n+after\n*** Add File: new.txt\n+n"),
        )
        .await;
        within("shutdown", handle.shutdown())
            .await
            .expect("clean shutdown");
        id
    };
    assert_eq!(read(&file).as_deref(), Some("after\n"));
    let handle = start(&dirs.home, true).await;
    call::<ThreadResume>(&handle, json!({"threadId": id})).await;
    let answer = call::<ThreadRollback>(
        &handle,
        json!({"threadId": id, "numTurns": 1, "restoreFiles": true}),
    )
    .await;
    assert_eq!(read(&file).as_deref(), Some("before\n"));
    assert!(!project.join("new.txt").exists());
    assert_eq!(paths(&answer["restoredFiles"]).len(), 2, "{answer}");
    assert_eq!(answer["skippedFiles"], json!([]));
}

/// Three files of 11 MiB changed in one turn: more than the 32 MiB of earlier content a turn
/// keeps. The turn is named, each of its files is left alone with the reason, and a later
/// turn within the bound is still restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_past_the_bound_is_named_and_none_of_its_files_is_touched() {
    let dirs = dirs();
    let project = &dirs.project;
    let big = "x".repeat(1023) + "\n";
    let big = big.repeat(11 * 1024);
    for name in ["1.txt", "2.txt", "3.txt"] {
        std::fs::write(project.join(name), format!("first\n{big}")).unwrap();
    }
    std::fs::write(project.join("small.txt"), "s\n").unwrap();
    let mut handle = start(&dirs.home, false).await;
    let id = thread(&handle, project).await;
    let body: String = ["1.txt", "2.txt", "3.txt"]
        .map(|name| format!("*** Update File: {name}\n@@\n-first\n+FIRST\n"))
        .concat();
    let (big_turn, said) = run(&mut handle, &id, &patch(body.trim_end())).await;
    assert!(said.contains("updated 3.txt"), "{said}");
    run(
        &mut handle,
        &id,
        &patch("*** Update File: small.txt\n@@\n-s\n+S"),
    )
    .await;

    let answer = call::<ThreadRevert>(
        &handle,
        json!({"threadId": id, "beforeTurnId": big_turn, "restoreFiles": true}),
    )
    .await;

    assert_eq!(answer["unrestorableTurns"], json!([big_turn]));
    let skipped = answer["skippedFiles"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 3, "{:?}", paths(&answer["skippedFiles"]));
    for entry in skipped {
        let reason = entry["reason"].as_str().expect("reason");
        assert!(
            reason.contains(&big_turn) && reason.contains("33554432"),
            "{reason}"
        );
    }
    for name in ["1.txt", "2.txt", "3.txt"] {
        let text = read(&project.join(name)).expect("still there");
        assert!(
            text.starts_with("FIRST\n"),
            "{name} left as the turn left it"
        );
    }
    assert_eq!(read(&project.join("small.txt")).as_deref(), Some("s\n"));
    assert_eq!(
        paths(&answer["restoredFiles"]),
        [project.join("small.txt").display().to_string()]
    );
}

/// A file outside the writable roots (written because the user approved it) and one in the
/// project's `.git` are never written by a restore: both are named, the rest is restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_outside_the_writable_roots_are_named_and_not_written() {
    let dirs = dirs();
    let project = &dirs.project;
    let outside = dirs.home.with_file_name("outside.txt");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::write(project.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(&outside, "out\n").unwrap();
    std::fs::write(project.join("in.txt"), "in\n").unwrap();
    let mut handle = start(&dirs.home, false).await;
    let id = thread(&handle, project).await;
    let (turn_id, said) = run_under(
        &mut handle,
        &id,
        &patch(&format!(
            "*** Update File: {}\n@@\n-out\n+OUT\n\
             *** Update File: .git/config\n@@\n-[core]\n+[core] x\n\
             *** Update File: in.txt\n@@\n-in\n+IN",
            outside.display()
        )),
        "on-request",
    )
    .await;
    assert!(said.contains("updated in.txt"), "{said}");
    assert_eq!(read(&outside).as_deref(), Some("OUT\n"));

    let answer = call::<ThreadRevert>(
        &handle,
        json!({"threadId": id, "beforeTurnId": turn_id, "restoreFiles": true}),
    )
    .await;

    assert_eq!(read(&outside).as_deref(), Some("OUT\n"));
    assert_eq!(
        read(&project.join(".git/config")).as_deref(),
        Some("[core] x\n")
    );
    assert_eq!(read(&project.join("in.txt")).as_deref(), Some("in\n"));
    let mut expected = vec![
        outside.display().to_string(),
        project.join(".git/config").display().to_string(),
    ];
    expected.sort();
    assert_eq!(paths(&answer["skippedFiles"]), expected);
    for entry in answer["skippedFiles"].as_array().unwrap() {
        let reason = entry["reason"].as_str().unwrap();
        assert!(reason.contains("outside the writable roots"), "{reason}");
    }
}
