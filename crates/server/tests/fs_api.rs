//! The `fs/*` API (issue 29, point 5): every method, the reference's errors, the read bound,
//! watches (change, unwatch, a burst bounded, the end of a connection) and the `fs_api`
//! switch, driven through the in-process host as an embedder would (and, for a connection
//! that closes, through the stdio transport). Real time throughout: the OS watcher and the
//! blocking pool do not follow a paused clock.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::transport::{TransportHost, TransportHostOptions, stdio};
use tandem_host::{InProcessClientHandle, MessageProcessor, OutgoingMessageSender};
use tandem_protocol::client_methods::{
    FsCopy, FsCreateDirectory, FsGetMetadata, FsReadDirectory, FsReadFile, FsRemove, FsUnwatch,
    FsWatch, FsWriteFile,
};
use tandem_protocol::{
    ClientRequest, JSONRPCErrorError, JSONRPCRequest, RequestId, RequestMethod, ServerNotification,
    error_codes,
};
use tandem_server::{
    FS_MAX_CHANGED_PATHS, FS_WATCH_DEBOUNCE, ServerConfig, ServerOptions, TandemServer,
};
use tandem_test_support::{eventually, expect_no_event, initialize_params, within};

/// Upper bound for anything that should happen promptly.
const PROMPT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

fn options(home: &Path, overrides: &[(&str, toml::Value)]) -> ServerOptions {
    let mut builder = ServerConfig::builder().tandem_home(home);
    for (key, value) in overrides {
        builder = builder.config_override(key, value.clone());
    }
    ServerOptions::load(builder).expect("options load")
}

/// A server in process, with the server itself for its watch counts.
async fn start(home: &Path, overrides: &[(&str, toml::Value)]) -> InProcessClientHandle {
    let options = options(home, overrides);
    let args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(false),
    );
    within(PROMPT, "start", in_process::start(args))
        .await
        .expect("host starts")
}

fn next_id() -> RequestId {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed))
}

fn request<M: RequestMethod<Request = ClientRequest>>(params: Value) -> ClientRequest {
    let params: M::Params = serde_json::from_value(params).expect("params decode");
    M::into_request(next_id(), params)
}

async fn try_call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> Result<Value, JSONRPCErrorError> {
    within(PROMPT, M::METHOD, handle.request(request::<M>(params)))
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

/// The error of a request expected to fail, as `(code, message)`.
async fn fail<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> (i64, String) {
    match try_call::<M>(handle, params).await {
        Ok(value) => panic!("{} succeeded with {value}, expected an error", M::METHOD),
        Err(error) => (error.code, error.message),
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read back")
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// The next `fs/changed` within `limit`, as `(watchId, changedPaths)`.
async fn next_change(
    handle: &mut InProcessClientHandle,
    limit: Duration,
) -> Option<(String, Vec<PathBuf>)> {
    let wait = async {
        while let Some(event) = handle.next_event().await {
            if let InProcessServerEvent::ServerNotification(ServerNotification::FsChanged(
                changed,
            )) = event
            {
                let paths = changed
                    .changed_paths
                    .into_iter()
                    .map(|path| path.into_path_buf())
                    .collect();
                return Some((changed.watch_id, paths));
            }
        }
        None
    };
    tokio::time::timeout(limit, wait).await.ok().flatten()
}

async fn shutdown(mut handle: InProcessClientHandle) {
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("clean shutdown");
}

// ---------------------------------------------------------------------------------------------
// Every method
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_method_does_what_the_reference_does() {
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let root = root.path();
    let handle = start(home.path(), &[]).await;

    // writeFile creates and replaces; readFile returns the bytes.
    let file = root.join("a.txt");
    call::<FsWriteFile>(
        &handle,
        json!({"path": p(&file), "dataBase64": b64(b"first")}),
    )
    .await;
    call::<FsWriteFile>(
        &handle,
        json!({"path": p(&file), "dataBase64": b64(b"hello\0bin")}),
    )
    .await;
    let read = call::<FsReadFile>(&handle, json!({"path": p(&file)})).await;
    assert_eq!(read, json!({"dataBase64": b64(b"hello\0bin")}));
    // An empty file and `..` in the path.
    call::<FsWriteFile>(
        &handle,
        json!({"path": p(&root.join("empty")), "dataBase64": ""}),
    )
    .await;
    let dotted = format!("{}/x/../a.txt", p(root));
    assert_eq!(
        call::<FsReadFile>(&handle, json!({"path": dotted})).await,
        read
    );

    // createDirectory: parents by default, an existing directory accepted.
    let deep = root.join("d/e/f");
    assert_eq!(
        call::<FsCreateDirectory>(&handle, json!({"path": p(&deep)})).await,
        json!({})
    );
    call::<FsCreateDirectory>(&handle, json!({"path": p(&deep)})).await;
    call::<FsCreateDirectory>(
        &handle,
        json!({"path": p(&root.join("d/g")), "recursive": false}),
    )
    .await;
    assert!(root.join("d/g").is_dir());

    // getMetadata: kinds, the link flag, times.
    #[cfg(unix)]
    std::os::unix::fs::symlink(&file, root.join("link")).expect("symlink");
    let meta = call::<FsGetMetadata>(&handle, json!({"path": p(&file)})).await;
    assert_eq!(meta["isFile"], true);
    assert_eq!(meta["isDirectory"], false);
    assert_eq!(meta["isSymlink"], false);
    assert!(
        meta["modifiedAtMs"].as_i64().expect("ms") > 1_600_000_000_000,
        "{meta}"
    );
    assert!(meta["createdAtMs"].is_i64(), "{meta}");
    let dir_meta = call::<FsGetMetadata>(&handle, json!({"path": p(&root.join("d"))})).await;
    assert_eq!(
        (dir_meta["isDirectory"].clone(), dir_meta["isFile"].clone()),
        (json!(true), json!(false))
    );
    #[cfg(unix)]
    {
        let link = call::<FsGetMetadata>(&handle, json!({"path": p(&root.join("link"))})).await;
        assert_eq!(
            (link["isSymlink"].clone(), link["isFile"].clone()),
            (json!(true), json!(true))
        );
    }

    // readDirectory: names only, sorted, kinds through links.
    let listing = call::<FsReadDirectory>(&handle, json!({"path": p(root)})).await;
    let names: Vec<&str> = listing["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|entry| entry["fileName"].as_str().expect("name"))
        .collect();
    #[cfg(unix)]
    assert_eq!(names, ["a.txt", "d", "empty", "link"]);
    assert_eq!(
        listing["entries"][1],
        json!({"fileName": "d", "isDirectory": true, "isFile": false})
    );

    // copy: a file, a tree (merged into an existing destination), a link as a link.
    call::<FsCopy>(
        &handle,
        json!({"sourcePath": p(&file), "destinationPath": p(&root.join("b.txt"))}),
    )
    .await;
    assert_eq!(text(&root.join("b.txt")), "hello\0bin");
    std::fs::write(root.join("d/e/inner"), "inner").expect("write");
    let copy = json!({"sourcePath": p(&root.join("d")), "destinationPath": p(&root.join("d2")), "recursive": true});
    call::<FsCopy>(&handle, copy.clone()).await;
    call::<FsCopy>(&handle, copy).await;
    assert_eq!(text(&root.join("d2/e/inner")), "inner");
    assert!(root.join("d2/e/f").is_dir() && root.join("d2/g").is_dir());
    #[cfg(unix)]
    {
        call::<FsCopy>(
            &handle,
            json!({"sourcePath": p(&root.join("link")), "destinationPath": p(&root.join("link2"))}),
        )
        .await;
        assert_eq!(
            std::fs::read_link(root.join("link2")).expect("a link"),
            file
        );
    }

    // remove: a file, a link (not its target), a tree; a missing path by default.
    #[cfg(unix)]
    {
        call::<FsRemove>(&handle, json!({"path": p(&root.join("link"))})).await;
        assert!(file.exists());
    }
    call::<FsRemove>(
        &handle,
        json!({"path": p(&root.join("b.txt")), "recursive": false}),
    )
    .await;
    call::<FsRemove>(&handle, json!({"path": p(&root.join("d2"))})).await;
    call::<FsRemove>(
        &handle,
        json!({"path": p(&root.join("d/g")), "recursive": false}),
    )
    .await;
    call::<FsRemove>(&handle, json!({"path": p(&root.join("missing"))})).await;
    assert!(
        !root.join("b.txt").exists() && !root.join("d2").exists() && !root.join("d/g").exists()
    );

    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connections_requests_run_in_arrival_order() {
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let handle = start(home.path(), &[]).await;
    let file = root.path().join("ordered");
    // Sent back to back without waiting: every read sees the write before it.
    let mut replies = Vec::new();
    for round in 0..20u8 {
        replies.push(handle.request(request::<FsWriteFile>(
            json!({"path": p(&file), "dataBase64": b64(&[round; 3])}),
        )));
        replies.push(handle.request(request::<FsReadFile>(json!({"path": p(&file)}))));
    }
    for (index, reply) in replies.into_iter().enumerate() {
        let answer = within(PROMPT, "reply", reply)
            .await
            .expect("host")
            .expect("ok");
        if index % 2 == 1 {
            let round = u8::try_from(index / 2).expect("small");
            assert_eq!(
                answer,
                json!({"dataBase64": b64(&[round; 3])}),
                "read {round}"
            );
        }
    }
    shutdown(handle).await;
}

// ---------------------------------------------------------------------------------------------
// Errors: the reference's codes and words
// ---------------------------------------------------------------------------------------------

#[test]
fn a_relative_or_empty_path_does_not_decode_as_the_reference_words_it() {
    for (method, params) in [
        ("fs/readFile", json!({"path": "rel/a.txt"})),
        ("fs/remove", json!({"path": ""})),
        ("fs/watch", json!({"path": "rel", "watchId": "w"})),
        (
            "fs/copy",
            json!({"sourcePath": "/a", "destinationPath": "b"}),
        ),
    ] {
        let wire = JSONRPCRequest {
            id: RequestId::Integer(1),
            method: method.to_owned(),
            params: Some(params),
        };
        let error = ClientRequest::try_from(wire).expect_err("a relative path is refused");
        assert_eq!(error.code, error_codes::INVALID_REQUEST, "{method}");
        assert_eq!(
            error.message, "Invalid request: AbsolutePathBuf deserialized without a base path",
            "{method}"
        );
    }
    let wire = JSONRPCRequest {
        id: RequestId::Integer(1),
        method: "fs/readFile".to_owned(),
        params: Some(json!({"path": 5})),
    };
    assert_eq!(
        ClientRequest::try_from(wire)
            .expect_err("not a string")
            .message,
        "Invalid request: invalid type: integer `5`, expected path string"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_have_the_references_codes_and_messages() {
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let root = root.path();
    let handle = start(home.path(), &[]).await;
    std::fs::create_dir_all(root.join("dir/sub")).expect("mkdir");
    std::fs::write(root.join("dir/a.txt"), "a").expect("write");
    let missing = p(&root.join("missing"));
    let not_found = (
        error_codes::INTERNAL_ERROR,
        "No such file or directory (os error 2)".to_owned(),
    );
    let invalid = |message: String| (error_codes::INVALID_REQUEST, message);

    assert_eq!(
        fail::<FsReadFile>(&handle, json!({"path": missing})).await,
        not_found
    );
    assert_eq!(
        fail::<FsGetMetadata>(&handle, json!({"path": missing})).await,
        not_found
    );
    assert_eq!(
        fail::<FsReadDirectory>(&handle, json!({"path": missing})).await,
        not_found
    );
    assert_eq!(
        fail::<FsRemove>(&handle, json!({"path": missing, "force": false})).await,
        not_found
    );
    assert_eq!(
        fail::<FsCopy>(
            &handle,
            json!({"sourcePath": missing, "destinationPath": p(&root.join("x"))})
        )
        .await,
        not_found
    );
    assert_eq!(
        fail::<FsWriteFile>(
            &handle,
            json!({"path": p(&root.join("nodir/x")), "dataBase64": ""})
        )
        .await,
        not_found
    );
    let dir = p(&root.join("dir"));
    assert_eq!(
        fail::<FsReadFile>(&handle, json!({"path": dir})).await,
        invalid(format!("path `{dir}` is not a file"))
    );
    assert_eq!(
        fail::<FsWriteFile>(&handle, json!({"path": dir, "dataBase64": ""})).await,
        (
            error_codes::INTERNAL_ERROR,
            "Is a directory (os error 21)".to_owned()
        )
    );
    assert_eq!(
        fail::<FsReadDirectory>(&handle, json!({"path": p(&root.join("dir/a.txt"))})).await,
        (
            error_codes::INTERNAL_ERROR,
            "Not a directory (os error 20)".to_owned()
        )
    );
    assert_eq!(
        fail::<FsWriteFile>(
            &handle,
            json!({"path": p(&root.join("w")), "dataBase64": "!!notbase64"})
        )
        .await,
        invalid(
            "fs/writeFile requires valid base64 dataBase64: Invalid symbol 33, offset 0."
                .to_owned()
        )
    );
    let exists = (
        error_codes::INTERNAL_ERROR,
        "File exists (os error 17)".to_owned(),
    );
    assert_eq!(
        fail::<FsCreateDirectory>(&handle, json!({"path": dir, "recursive": false})).await,
        exists
    );
    assert_eq!(
        fail::<FsCreateDirectory>(&handle, json!({"path": p(&root.join("dir/a.txt"))})).await,
        exists
    );
    assert_eq!(
        fail::<FsRemove>(&handle, json!({"path": dir, "recursive": false})).await,
        (
            error_codes::INTERNAL_ERROR,
            "Directory not empty (os error 39)".to_owned()
        )
    );
    assert_eq!(
        fail::<FsCopy>(
            &handle,
            json!({"sourcePath": dir, "destinationPath": p(&root.join("c"))})
        )
        .await,
        invalid("fs/copy requires recursive: true when sourcePath is a directory".to_owned())
    );
    assert_eq!(
        fail::<FsCopy>(&handle, json!({"sourcePath": dir, "destinationPath": p(&root.join("dir/sub/in")), "recursive": true})).await,
        invalid("fs/copy cannot copy a directory to itself or one of its descendants".to_owned())
    );
    // Tandem's own refusal: the reference would empty the file.
    let a = p(&root.join("dir/a.txt"));
    let (code, message) =
        fail::<FsCopy>(&handle, json!({"sourcePath": a, "destinationPath": a})).await;
    assert_eq!(code, error_codes::INVALID_REQUEST, "{message}");
    assert_eq!(text(&root.join("dir/a.txt")), "a");

    call::<FsWatch>(&handle, json!({"path": dir, "watchId": "w1"})).await;
    assert_eq!(
        fail::<FsWatch>(&handle, json!({"path": dir, "watchId": "w1"})).await,
        invalid("watchId already exists: w1".to_owned())
    );
    // An unknown watch id is accepted, as by the reference.
    assert_eq!(
        call::<FsUnwatch>(&handle, json!({"watchId": "nope"})).await,
        json!({})
    );

    // Permission denied, unless the tests run as root (who may read anything).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let locked = root.join("locked");
        std::fs::write(&locked, "secret").expect("write");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).expect("chmod");
        if std::fs::read(&locked).is_err() {
            assert_eq!(
                fail::<FsReadFile>(&handle, json!({"path": p(&locked)})).await,
                (
                    error_codes::INTERNAL_ERROR,
                    "Permission denied (os error 13)".to_owned()
                )
            );
        }
    }
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_returns_at_most_the_configured_bytes() {
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let handle = start(home.path(), &[("fs_read_max_bytes", 10.into())]).await;
    let file = root.path().join("f");
    std::fs::write(&file, b"0123456789").expect("write");
    assert_eq!(
        call::<FsReadFile>(&handle, json!({"path": p(&file)})).await,
        json!({"dataBase64": b64(b"0123456789")})
    );
    std::fs::write(&file, b"0123456789A").expect("write");
    let (code, message) = fail::<FsReadFile>(&handle, json!({"path": p(&file)})).await;
    assert_eq!(code, error_codes::INVALID_REQUEST);
    assert!(
        message.contains("11 bytes")
            && message.contains("fs_read_max_bytes")
            && message.contains("10 bytes"),
        "{message}"
    );
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_api_false_turns_every_method_off() {
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let handle = start(home.path(), &[("fs_api", false.into())]).await;
    let file = root.path().join("f");
    std::fs::write(&file, "x").expect("write");
    let path = p(&file);
    let off = |method: &str| {
        (
            error_codes::METHOD_NOT_FOUND,
            format!("{method} is disabled on this server (fs_api = false in its config.toml)"),
        )
    };
    assert_eq!(
        fail::<FsReadFile>(&handle, json!({"path": path})).await,
        off("fs/readFile")
    );
    assert_eq!(
        fail::<FsWriteFile>(&handle, json!({"path": path, "dataBase64": ""})).await,
        off("fs/writeFile")
    );
    assert_eq!(
        fail::<FsCreateDirectory>(&handle, json!({"path": path})).await,
        off("fs/createDirectory")
    );
    assert_eq!(
        fail::<FsGetMetadata>(&handle, json!({"path": path})).await,
        off("fs/getMetadata")
    );
    assert_eq!(
        fail::<FsReadDirectory>(&handle, json!({"path": path})).await,
        off("fs/readDirectory")
    );
    assert_eq!(
        fail::<FsRemove>(&handle, json!({"path": path})).await,
        off("fs/remove")
    );
    assert_eq!(
        fail::<FsCopy>(
            &handle,
            json!({"sourcePath": path, "destinationPath": path})
        )
        .await,
        off("fs/copy")
    );
    assert_eq!(
        fail::<FsWatch>(&handle, json!({"path": path, "watchId": "w"})).await,
        off("fs/watch")
    );
    assert_eq!(
        fail::<FsUnwatch>(&handle, json!({"watchId": "w"})).await,
        off("fs/unwatch")
    );
    assert_eq!(text(&file), "x", "nothing was written or removed");
    shutdown(handle).await;
}

// ---------------------------------------------------------------------------------------------
// Watches
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_reports_a_change_and_unwatch_stops_it() {
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let dir = root.path().join("dir");
    std::fs::create_dir(&dir).expect("mkdir");
    let mut handle = start(home.path(), &[]).await;

    let dotted = format!("{}/./dir/../dir", p(root.path()));
    let answer = call::<FsWatch>(&handle, json!({"path": dotted, "watchId": "w"})).await;
    assert_eq!(
        answer,
        json!({"path": p(&dir)}),
        "the path comes back normalized"
    );
    std::fs::write(dir.join("new.txt"), "n").expect("write");
    let (watch_id, paths) = next_change(&mut handle, PROMPT).await.expect("fs/changed");
    assert_eq!(watch_id, "w");
    assert_eq!(paths, [dir.join("new.txt")]);
    // Not recursive, as the reference: a grandchild is not reported; a sibling of the
    // watched directory is not either.
    std::fs::create_dir(dir.join("sub")).expect("mkdir");
    assert_eq!(
        next_change(&mut handle, PROMPT).await.expect("sub").1,
        [dir.join("sub")]
    );
    std::fs::write(dir.join("sub/deep"), "d").expect("write");
    std::fs::write(root.path().join("sibling"), "s").expect("write");
    assert_eq!(next_change(&mut handle, FS_WATCH_DEBOUNCE * 4).await, None);

    assert_eq!(
        call::<FsUnwatch>(&handle, json!({"watchId": "w"})).await,
        json!({})
    );
    std::fs::write(dir.join("after.txt"), "a").expect("write");
    if let Err(error) = expect_no_event(&mut handle, "fs/changed", FS_WATCH_DEBOUNCE * 4).await {
        panic!("a change after fs/unwatch was reported: {error:?}");
    }
    // The id is free again.
    call::<FsWatch>(&handle, json!({"path": p(&dir), "watchId": "w"})).await;
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_file_and_a_path_that_does_not_exist_yet() {
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let file = root.path().join("f");
    std::fs::write(&file, "1").expect("write");
    let later = root.path().join("later");
    let mut handle = start(home.path(), &[]).await;
    call::<FsWatch>(&handle, json!({"path": p(&file), "watchId": "file"})).await;
    call::<FsWatch>(&handle, json!({"path": p(&later), "watchId": "later"})).await;

    std::fs::write(&file, "2").expect("write");
    assert_eq!(
        next_change(&mut handle, PROMPT).await,
        Some(("file".to_owned(), vec![file.clone()]))
    );
    std::fs::create_dir(&later).expect("mkdir");
    assert_eq!(
        next_change(&mut handle, PROMPT).await,
        Some(("later".to_owned(), vec![later.clone()]))
    );
    // Once it exists as a directory, its children are reported too.
    std::fs::write(later.join("child"), "c").expect("write");
    assert_eq!(
        next_change(&mut handle, PROMPT).await,
        Some(("later".to_owned(), vec![later.join("child")]))
    );
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_under_directories_that_do_not_exist_yet_is_reported_once_created() {
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let deep = root.path().join("a/b/c");
    let mut handle = start(home.path(), &[]).await;
    call::<FsWatch>(&handle, json!({"path": p(&deep), "watchId": "deep"})).await;
    // The missing directories appear: nothing to report yet (they are not the path).
    std::fs::create_dir_all(root.path().join("a/b")).expect("mkdir");
    assert_eq!(next_change(&mut handle, FS_WATCH_DEBOUNCE * 4).await, None);
    std::fs::write(&deep, "1").expect("write");
    assert_eq!(
        next_change(&mut handle, PROMPT).await,
        Some(("deep".to_owned(), vec![deep.clone()]))
    );
    std::fs::write(&deep, "2").expect("write");
    assert_eq!(
        next_change(&mut handle, PROMPT).await,
        Some(("deep".to_owned(), vec![deep.clone()]))
    );
    shutdown(handle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_changes_becomes_a_bounded_number_of_notifications() {
    let home = tempfile::tempdir().expect("home");
    // In memory where there is such a file system: a burst written to disk may be slow enough
    // to spread over several debounce windows.
    let shm = Path::new("/dev/shm");
    let root = if shm.is_dir() {
        tempfile::tempdir_in(shm).expect("root")
    } else {
        tempfile::tempdir().expect("root")
    };
    let dir = root.path().join("dir");
    std::fs::create_dir(&dir).expect("mkdir");
    let mut handle = start(home.path(), &[]).await;
    call::<FsWatch>(&handle, json!({"path": p(&dir), "watchId": "burst"})).await;

    // A small burst: one notification naming every file once, sorted.
    for index in 0..20 {
        std::fs::write(dir.join(format!("small{index:02}")), "x").expect("write");
    }
    let (_, paths) = next_change(&mut handle, PROMPT).await.expect("fs/changed");
    let expected: Vec<PathBuf> = (0..20)
        .map(|index| dir.join(format!("small{index:02}")))
        .collect();
    assert_eq!(paths, expected);

    // A large burst: more paths than one notification carries.
    let count = FS_MAX_CHANGED_PATHS * 4;
    let started = Instant::now();
    for index in 0..count {
        std::fs::write(dir.join(format!("big{index:04}")), "x").expect("write");
    }
    let writing = started.elapsed();
    let mut notifications = 0;
    let mut overflowed = false;
    let mut listed = std::collections::BTreeSet::new();
    while let Some((watch_id, paths)) = next_change(&mut handle, FS_WATCH_DEBOUNCE * 4).await {
        notifications += 1;
        assert_eq!(watch_id, "burst");
        assert!(
            paths.len() <= FS_MAX_CHANGED_PATHS,
            "{} paths in one notification",
            paths.len()
        );
        if paths == [dir.clone()] {
            overflowed = true;
        } else {
            listed.extend(paths);
        }
    }
    // Nothing is lost: each file is listed, or a notification said "re-read the directory".
    assert!(
        overflowed || listed.len() == count,
        "{} of {count} files reported and no overflow",
        listed.len()
    );
    let elapsed = started.elapsed();
    // At most one notification per debounce window while the burst lasted, plus the last.
    let windows =
        usize::try_from(elapsed.as_millis() / FS_WATCH_DEBOUNCE.as_millis()).expect("small") + 1;
    assert!(
        notifications >= 1 && notifications <= windows,
        "{notifications} notifications for {count} changes in {elapsed:?} (writing took {writing:?})"
    );
    // Written within half a window, the burst fell into one batch of more than the bound
    // (slower, on a loaded machine, it may have spread over several that each fit).
    if writing < FS_WATCH_DEBOUNCE / 2 {
        assert!(
            overflowed,
            "a batch of {count} paths names the watched directory alone (writing took {writing:?})"
        );
    }
    shutdown(handle).await;
}

fn send_line(writer: &mut std::io::PipeWriter, message: &Value) {
    use std::io::Write as _;
    writeln!(writer, "{message}").expect("write");
    writer.flush().expect("flush");
}

/// A server behind the stdio transport, to close one connection and keep the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_ends_with_its_connection() {
    use tokio::io::{AsyncBufReadExt as _, BufReader};

    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let options = options(home.path(), &[]);
    let (server_tx, server_rx) = std::sync::mpsc::channel();
    let host = TransportHost::start(
        move |outgoing: OutgoingMessageSender| {
            let server = Arc::new(TandemServer::new(outgoing, options));
            server_tx.send(Arc::clone(&server)).expect("the test waits");
            server as Arc<dyn MessageProcessor>
        },
        TransportHostOptions::default(),
    );
    let server = server_rx.recv().expect("the factory ran");

    let (reader, mut writer) = std::io::pipe().expect("pipe");
    let (server_side, client_side) = tokio::io::duplex(1 << 20);
    let served = {
        let host = host.clone();
        tokio::spawn(async move {
            stdio::serve_io(&host, reader, server_side, stdio::StdioOptions::default()).await
        })
    };
    let mut lines = BufReader::new(client_side).lines();
    let mut send = |message: Value| send_line(&mut writer, &message);
    send(
        json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}}),
    );
    send(json!({"method": "initialized"}));
    send(
        json!({"id": 2, "method": "fs/watch", "params": {"path": p(root.path()), "watchId": "w"}}),
    );
    loop {
        let line = within(PROMPT, "answer", lines.next_line())
            .await
            .expect("read")
            .expect("open");
        let message: Value = serde_json::from_str(&line).expect("JSON");
        if message["id"] == json!(2) {
            assert_eq!(
                message["result"],
                json!({"path": p(root.path())}),
                "{message}"
            );
            break;
        }
    }
    assert_eq!(server.fs_watch_total(), 1);

    drop(writer);
    within(PROMPT, "the connection to end", served)
        .await
        .expect("join")
        .expect("served");
    eventually(PROMPT, "the watch to end with its connection", || {
        server.fs_watch_total() == 0
    })
    .await;
    within(PROMPT, "host shutdown", host.shutdown()).await;
}
