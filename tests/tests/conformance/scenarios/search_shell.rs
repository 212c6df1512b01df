//! `fuzzyFileSearch` and `thread/shellCommand` (docs/protocol.md section 4), stable, so the
//! scenario initializes without `experimentalApi`: a search over a tree written with
//! `fs/writeFile` (results whole, scores included, `.gitignore` respected), and the user's
//! command as a `userShell` item in a turn of its own, with its refusals.

use serde_json::{Value, json};

use super::*;
use crate::session::{Session, Transport, assert_json};

/// A search, then a shell command's turn.
pub(crate) async fn fuzzy_search_and_a_shell_command(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;

    for directory in ["src", "build"] {
        expect_result(
            &mut s,
            "fs/createDirectory",
            json!({"path": format!("<home>/tree/{directory}")}),
            json!({}),
        )
        .await;
    }
    for (path, data) in [
        ("src/main.rs", ""),
        ("src/lib.rs", ""),
        ("main", ""),
        ("build/main.o", ""),
        // "build/"
        (".gitignore", "YnVpbGQvCg=="),
    ] {
        expect_result(
            &mut s,
            "fs/writeFile",
            json!({"path": format!("<home>/tree/{path}"), "dataBase64": data}),
            json!({}),
        )
        .await;
    }
    let hit = |path: &str, file_name: &str, score: u32, indices: Value| {
        json!({"root": "<home>/tree", "path": path, "match_type": "file",
               "file_name": file_name, "score": score, "indices": indices})
    };
    expect_result(
        &mut s,
        "fuzzyFileSearch",
        json!({"query": "main", "roots": ["<home>/tree"], "cancellationToken": "t"}),
        json!({"files": [
            hit("main", "main", 196_717, json!([0, 1, 2, 3])),
            hit("src/main.rs", "main.rs", 65_645, json!([4, 5, 6, 7])),
        ]}),
    )
    .await;
    expect_result(
        &mut s,
        "fuzzyFileSearch",
        json!({"query": "", "roots": ["<home>/tree"]}),
        json!({"files": []}),
    )
    .await;

    start_thread(&mut s, THREAD, "never").await;
    expect_result(
        &mut s,
        "thread/shellCommand",
        json!({"threadId": THREAD, "command": "echo hi"}),
        json!({}),
    )
    .await;
    let turn_id = "<id:2>";
    expect_sequence(&mut s, &[status_note(active(&[]))]).await;
    expect_sequence(
        &mut s,
        &[note(
            "turn/started",
            json!({"threadId": THREAD, "turn": turn(turn_id, "inProgress", vec![])}),
        )],
    )
    .await;
    let started = s.expect("item/started").await;
    // The shell (`$SHELL`) and the pid are the machine's: taken from what was sent.
    let shown = started["params"]["item"]["command"].clone();
    if !shown.as_str().is_some_and(|c| c.ends_with(" -c 'echo hi'")) {
        s.fail(format!("the command as the user's shell runs it: {shown}"));
    }
    let item = |status: &str, pid: Value, exit: Value, output: Value, duration: Value| {
        json!({
            "type": "commandExecution", "id": "<id:3>", "command": shown, "cwd": "<home>",
            "status": status, "commandActions": [{"type": "unknown", "command": "echo hi"}],
            "processId": pid, "exitCode": exit, "aggregatedOutput": output,
            "durationMs": duration, "source": "userShell",
        })
    };
    let null = Value::Null;
    assert_json(
        &s,
        &started,
        &item_note(
            "item/started",
            turn_id,
            item("inProgress", null.clone(), null.clone(), null.clone(), null),
        ),
    );
    let delta = s.expect("item/commandExecution/outputDelta").await;
    assert_json(
        &s,
        &delta,
        &note(
            "item/commandExecution/outputDelta",
            json!({"threadId": THREAD, "turnId": turn_id, "itemId": "<id:3>", "delta": "hi\n"}),
        ),
    );
    let completed = s.expect("item/completed").await;
    let pid = completed["params"]["item"]["processId"].clone();
    let done = item("completed", pid, json!(0), json!("hi\n"), json!("<time>"));
    assert_json(
        &s,
        &completed,
        &item_note("item/completed", turn_id, done.clone()),
    );
    expect_sequence(
        &mut s,
        &[
            status_note(json!({"type": "idle"})),
            note(
                "turn/completed",
                json!({"threadId": THREAD, "turn": turn(turn_id, "completed", vec![done])}),
            ),
        ],
    )
    .await;

    expect_error(
        &mut s,
        "thread/shellCommand",
        json!({"threadId": THREAD, "command": ""}),
        -32600,
        "command must not be empty",
    )
    .await;
    expect_error(
        &mut s,
        "thread/shellCommand",
        json!({"threadId": THREAD, "command": "true", "timeoutMs": -1}),
        -32602,
        "thread/shellCommand timeoutMs must be non-negative, got -1",
    )
    .await;
    expect_error(
        &mut s,
        "thread/shellCommand",
        json!({"threadId": "missing", "command": "true"}),
        -32600,
        "thread not found: missing",
    )
    .await;
    s.close().await;
}
