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
    ConfigValueWrite, FsCopy, FsCreateDirectory, FsGetMetadata, FsReadDirectory, FsReadFile,
    FsRemove, FsUnwatch, FsWatch, FsWriteFile,
};
use tandem_protocol::{
    ClientRequest, JSONRPCErrorError, JSONRPCRequest, RequestId, RequestMethod, ServerNotification,
    error_codes,
};
use tandem_server::{
    FS_MAX_CHANGED_PATHS, FS_WATCH_DEBOUNCE, ServerConfig, ServerOptions, TandemServer,
};
use tandem_test_support::{eventually, expect_no_event, initialize_params, within};

mod watches;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_write_of_fs_api_applies_to_the_next_request() {
    let home = tempfile::tempdir().expect("home");
    let root = tempfile::tempdir().expect("root");
    let handle = start(home.path(), &[]).await;
    let file = root.path().join("f");
    std::fs::write(&file, "x").expect("write");
    call::<FsReadFile>(&handle, json!({"path": p(&file)})).await;
    call::<ConfigValueWrite>(
        &handle,
        json!({"keyPath": "fs_api", "value": false, "mergeStrategy": "replace"}),
    )
    .await;
    let (code, message) = fail::<FsReadFile>(&handle, json!({"path": p(&file)})).await;
    assert_eq!(code, error_codes::METHOD_NOT_FOUND, "{message}");
    shutdown(handle).await;
}
