//! The `fs/*` API (docs/protocol.md section 4, "Files"), stable, so the scenario initializes
//! without `experimentalApi`: every method under the server's home, the reference's errors,
//! and a watch that reports a change made through `fs/writeFile` and stops at `fs/unwatch`.

use serde_json::json;

use super::*;
use crate::session::{Session, Transport, assert_json};

/// Every method, its errors, and a watch.
pub(crate) async fn fs_methods_errors_and_a_watch(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;

    expect_result(
        &mut s,
        "fs/createDirectory",
        json!({"path": "<home>/fs/sub"}),
        json!({}),
    )
    .await;
    expect_result(
        &mut s,
        "fs/writeFile",
        json!({"path": "<home>/fs/a.txt", "dataBase64": "aGVsbG8="}),
        json!({}),
    )
    .await;
    expect_result(
        &mut s,
        "fs/readFile",
        json!({"path": "<home>/fs/a.txt"}),
        json!({"dataBase64": "aGVsbG8="}),
    )
    .await;
    let metadata = s
        .call("fs/getMetadata", json!({"path": "<home>/fs/a.txt"}))
        .await;
    for (key, value) in [
        ("isFile", true),
        ("isDirectory", false),
        ("isSymlink", false),
    ] {
        if metadata[key] != value {
            s.fail(format!("fs/getMetadata {key}: {metadata}"));
        }
    }
    if !metadata["modifiedAtMs"].is_i64() || !metadata["createdAtMs"].is_i64() {
        s.fail(format!("fs/getMetadata times: {metadata}"));
    }
    expect_result(
        &mut s,
        "fs/copy",
        json!({"sourcePath": "<home>/fs/a.txt", "destinationPath": "<home>/fs/sub/b.txt"}),
        json!({}),
    )
    .await;
    expect_result(
        &mut s,
        "fs/readDirectory",
        json!({"path": "<home>/fs"}),
        json!({"entries": [
            {"fileName": "a.txt", "isDirectory": false, "isFile": true},
            {"fileName": "sub", "isDirectory": true, "isFile": false},
        ]}),
    )
    .await;
    expect_result(
        &mut s,
        "fs/copy",
        json!({"sourcePath": "<home>/fs/sub", "destinationPath": "<home>/fs/sub2", "recursive": true}),
        json!({}),
    )
    .await;
    expect_result(
        &mut s,
        "fs/remove",
        json!({"path": "<home>/fs/sub2"}),
        json!({}),
    )
    .await;

    let errors = [
        (
            "fs/readFile",
            json!({"path": "relative"}),
            -32600,
            "Invalid request: AbsolutePathBuf deserialized without a base path",
        ),
        (
            "fs/readFile",
            json!({"path": "<home>/fs/missing"}),
            -32603,
            "No such file or directory (os error 2)",
        ),
        (
            "fs/readFile",
            json!({"path": "<home>/fs/sub"}),
            -32600,
            "path `<home>/fs/sub` is not a file",
        ),
        (
            "fs/writeFile",
            json!({"path": "<home>/fs/x", "dataBase64": "!!"}),
            -32600,
            "fs/writeFile requires valid base64 dataBase64: Invalid symbol 33, offset 0.",
        ),
        (
            "fs/createDirectory",
            json!({"path": "<home>/fs/sub", "recursive": false}),
            -32603,
            "File exists (os error 17)",
        ),
        (
            "fs/remove",
            json!({"path": "<home>/fs/sub", "recursive": false}),
            -32603,
            "Directory not empty (os error 39)",
        ),
        (
            "fs/copy",
            json!({"sourcePath": "<home>/fs/sub", "destinationPath": "<home>/fs/c"}),
            -32600,
            "fs/copy requires recursive: true when sourcePath is a directory",
        ),
    ];
    for (method, params, code, message) in errors {
        expect_error(&mut s, method, params, code, message).await;
    }

    expect_result(
        &mut s,
        "fs/watch",
        json!({"path": "<home>/fs/sub", "watchId": "w"}),
        json!({"path": "<home>/fs/sub"}),
    )
    .await;
    expect_error(
        &mut s,
        "fs/watch",
        json!({"path": "<home>/fs", "watchId": "w"}),
        -32600,
        "watchId already exists: w",
    )
    .await;
    expect_result(
        &mut s,
        "fs/writeFile",
        json!({"path": "<home>/fs/sub/new.txt", "dataBase64": ""}),
        json!({}),
    )
    .await;
    let changed = s.expect("fs/changed").await;
    assert_json(
        &s,
        &changed["params"],
        &json!({"watchId": "w", "changedPaths": ["<home>/fs/sub/new.txt"]}),
    );
    expect_result(&mut s, "fs/unwatch", json!({"watchId": "w"}), json!({})).await;
    expect_result(&mut s, "fs/unwatch", json!({"watchId": "w"}), json!({})).await;
    s.close().await;
}
