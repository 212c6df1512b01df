//! `tandem app-server --listen unix://` with the real binary (issue 32, points 1 and 4): the
//! default socket under the home (a private directory, mode 0600), `tandem run --connect
//! unix://PATH` through it, a second server on the same path refused with the owner's pid, a
//! stale socket replaced, a home too long for a socket address, and the socket removed at
//! shutdown.

mod common;

use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::path::Path;
use std::process::Stdio;

use common::server::{AppServer, Launch, fresh_home};
use common::{PROMPT, within};
use tokio::process::Command;

/// Starts `tandem app-server --listen LISTEN` and waits for its `listening on: unix://PATH`;
/// returns the server and the path.
async fn listen(launch: Launch, listen: &str) -> (AppServer, String) {
    let server = launch.args(["app-server", "--listen", listen]).spawn();
    let (_, line) = server
        .wait_for_stderr("the socket path", |line| {
            line.starts_with("listening on: unix://")
        })
        .await;
    let path = line
        .trim()
        .strip_prefix("listening on: unix://")
        .map(str::to_owned)
        .unwrap_or_default();
    (server, path)
}

/// `tandem run --connect unix://PATH TEXT` with the scripted agent: its answer on stdout.
async fn run_through(path: &str, home: &Path, text: &str) -> String {
    let output = within(
        PROMPT,
        "tandem run through the socket",
        Command::new(env!("CARGO_BIN_EXE_tandem"))
            .args(["run", "--quiet-notices", "--connect"])
            .arg(format!("unix://{path}"))
            .arg(text)
            .env("TANDEM_HOME", home)
            .env_remove("TANDEM_LOG")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run tandem");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "tandem run failed: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test]
async fn the_default_socket_is_private_serves_run_and_goes_at_shutdown() {
    let (server, path) = listen(Launch::new("unix-default"), "unix://").await;
    let expected = server
        .home
        .join("app-server-control")
        .join("app-server-control.sock");
    assert_eq!(Path::new(&path), expected);
    // Followed if the path is a link: on a deep checkout the default is too long for a socket
    // address and points at a short one.
    let socket = std::fs::metadata(&path).expect("the socket exists");
    assert!(socket.file_type().is_socket());
    assert_eq!(socket.mode() & 0o777, 0o600, "only the user may connect");
    let directory = std::fs::metadata(expected.parent().expect("a parent")).expect("its directory");
    assert_eq!(directory.mode() & 0o777, 0o700, "only the user may enter");

    let client_home = fresh_home("unix-default-client");
    let answer = run_through(&path, &client_home, "hello over a unix socket").await;
    assert!(answer.contains("hello over a unix socket"), "{answer}");

    server.terminate().await;
    assert!(
        std::fs::symlink_metadata(&path).is_err(),
        "the socket is removed at shutdown"
    );
}

#[tokio::test]
async fn a_second_server_is_refused_with_the_owners_pid() {
    let (first, path) = listen(Launch::new("unix-first"), "unix://").await;
    let second = Launch::new("unix-second")
        .home(first.home.clone())
        .args(["app-server", "--listen", "unix://"])
        .spawn();
    let exited = second.wait_exit(std::time::Instant::now(), PROMPT).await;
    assert_eq!(exited.status.code(), Some(1), "{}", exited.stderr);
    assert!(
        exited.stderr.contains(&format!("pid {}", first.pid)) && exited.stderr.contains(&path),
        "the refusal names the socket and its owner: {}",
        exited.stderr
    );
    // The first server still serves.
    let answer = run_through(&path, &fresh_home("unix-first-client"), "still here").await;
    assert!(answer.contains("still here"), "{answer}");
    first.terminate().await;
}

#[tokio::test]
async fn a_stale_socket_is_replaced() {
    let home = fresh_home("unix-stale");
    std::fs::create_dir_all(&home).expect("a home");
    let path = home.join("stale.sock");
    // What a server killed with -9 leaves: the file, and nothing listening behind it.
    drop(std::os::unix::net::UnixListener::bind(&path).expect("bind"));
    let listen_url = format!("unix://{}", path.display());
    let (server, printed) = listen(Launch::new("unix-stale").home(home.clone()), &listen_url).await;
    assert_eq!(Path::new(&printed), path);
    let answer = run_through(&printed, &fresh_home("unix-stale-client"), "fresh").await;
    assert!(answer.contains("fresh"), "{answer}");
    server.terminate().await;
}

#[tokio::test]
async fn a_home_too_long_for_a_socket_address_links_to_a_short_path() {
    let home = fresh_home("unix-long").join("h".repeat(90));
    std::fs::create_dir_all(&home).expect("a long home");
    let (server, path) = listen(Launch::new("unix-long").home(home.clone()), "unix://").await;
    assert!(path.len() > 107, "the default path is too long: {path}");
    let link = std::fs::symlink_metadata(&path).expect("the path exists");
    assert!(link.file_type().is_symlink(), "a link at the long path");
    let target = std::fs::read_link(&path).expect("a link");
    assert!(target.as_os_str().len() <= 107, "{}", target.display());
    let socket = std::fs::metadata(&target).expect("the short socket");
    assert!(socket.file_type().is_socket());
    assert_eq!(socket.mode() & 0o777, 0o600);
    // The short path's directory (under $XDG_RUNTIME_DIR or /tmp) is the user's alone too.
    let directory = std::fs::metadata(target.parent().expect("a parent")).expect("its directory");
    assert_eq!(directory.mode() & 0o777, 0o700, "only the user may enter");
    assert_eq!(directory.uid(), nix::unistd::getuid().as_raw());

    let answer = run_through(&path, &fresh_home("unix-long-client"), "long way round").await;
    assert!(answer.contains("long way round"), "{answer}");
    server.terminate().await;
    assert!(
        std::fs::symlink_metadata(&target).is_err(),
        "the socket is removed"
    );
    assert!(std::fs::symlink_metadata(&path).is_err(), "and its link");
}
