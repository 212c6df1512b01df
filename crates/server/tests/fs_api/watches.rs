//! The watches of the `fs/*` API: a change and `fs/unwatch`, a file and paths that do not
//! exist yet, a burst bounded, and a watch that ends with its connection.

use super::*;

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
