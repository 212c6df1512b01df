//! The checks run around every kill: after it, that nothing the server started is still alive
//! ([`processes_dead`]) and that the database is intact ([`database_intact`]); after the
//! restart, that everything acknowledged is there and closed ([`after_restart`]).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};

use crate::client::Client;
use crate::ledger::{AcknowledgedTurn, Counts, Ledger, Scope, Violations};

/// How long a process the server started may outlive it (issue 13, point 5).
pub(crate) const SURVIVAL_LIMIT: Duration = Duration::from_secs(2);
/// How often /proc is polled while processes are still alive.
const POLL: Duration = Duration::from_millis(20);
/// How long the cleanup waits for the survivors it SIGKILLed itself.
const CLEANUP_LIMIT: Duration = Duration::from_secs(5);
/// `thread/list` page size.
const LIST_PAGE: u64 = 100;
/// `thread/read` requests kept in flight at once.
const READS_IN_FLIGHT: usize = 8;

/// Turn statuses that end a turn.
const TERMINAL_TURN: [&str; 3] = ["completed", "interrupted", "failed"];

/// Checks the acknowledged threads and turns against what the restarted server reads back:
/// every acknowledged thread is in `thread/list`; each thread `scope` selects is readable by
/// `thread/read`, each of its turns terminal, its acknowledged turns there with their input,
/// no tool call without an output, and no stored status that contradicts a `turn/completed`
/// the client read. With `final_statuses`, the statuses of the acknowledged turns are tallied.
pub(crate) async fn after_restart(
    client: &Client,
    ledger: &Arc<Mutex<Ledger>>,
    scope: Scope,
    violations: &Arc<Mutex<Violations>>,
    counts: &Arc<Mutex<Counts>>,
    final_statuses: bool,
) {
    let (all_threads, expected): (Vec<String>, Vec<ThreadToRead>) = {
        let ledger = ledger.lock().unwrap_or_else(PoisonError::into_inner);
        let selected = ledger
            .select(scope)
            .into_iter()
            .map(|thread| {
                let turns = ledger.turns_of(&thread);
                (thread, turns)
            })
            .collect();
        (ledger.threads().to_vec(), selected)
    };
    if matches!(scope, Scope::All) {
        counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .full_checks += 1;
    }
    let violation = |kind: &str, key: &str, detail: String| {
        violations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(kind, key, detail);
    };
    let listed = match list_threads(client).await {
        Ok(listed) => listed,
        Err(error) => {
            violation("thread/list failed", "", error);
            HashSet::new()
        }
    };
    for thread_id in &all_threads {
        if !listed.contains(thread_id) {
            violation(
                "acknowledged thread missing from thread/list",
                thread_id,
                format!("thread {thread_id}"),
            );
        }
    }
    let mut statuses = BTreeMap::<String, u64>::new();
    for batch in expected.chunks(READS_IN_FLIGHT) {
        let reads = batch.iter().map(|(thread_id, _)| {
            client.request(
                "thread/read",
                json!({"threadId": thread_id, "includeTurns": true}),
            )
        });
        let replies = futures::future::join_all(reads).await;
        for ((thread_id, acknowledged), reply) in batch.iter().zip(replies) {
            let mut tally = Tally::default();
            let stored_turns = match reply {
                Ok(result) => result["thread"]["turns"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
                Err(error) => {
                    violation(
                        "acknowledged thread unreadable",
                        thread_id,
                        format!("thread/read {thread_id}: {error}"),
                    );
                    Vec::new()
                }
            };
            tally.threads += 1;
            for turn in &stored_turns {
                check_stored_turn(thread_id, turn, &mut tally, &violation);
            }
            for (turn_id, acknowledged) in acknowledged {
                tally.turns += 1;
                let stored = stored_turns.iter().find(|turn| turn["id"] == **turn_id);
                let status = check_acknowledged_turn(turn_id, acknowledged, stored, &violation);
                if final_statuses {
                    *statuses.entry(status).or_default() += 1;
                }
            }
            let mut counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
            counts.thread_checks += tally.threads;
            counts.turn_checks += tally.turns;
            counts.call_checks += tally.calls;
        }
    }
    if final_statuses {
        counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .final_statuses = statuses;
    }
}

/// A thread to read back and the turns acknowledged on it, by id.
type ThreadToRead = (String, Vec<(String, AcknowledgedTurn)>);

#[derive(Default)]
struct Tally {
    threads: u64,
    turns: u64,
    calls: u64,
}

/// Every thread id `thread/list` returns, page by page.
async fn list_threads(client: &Client) -> Result<HashSet<String>, String> {
    let mut ids = HashSet::new();
    let mut cursor = Value::Null;
    loop {
        let result = client
            .request("thread/list", json!({"limit": LIST_PAGE, "cursor": cursor}))
            .await
            .map_err(|error| error.to_string())?;
        let page = result["data"].as_array().cloned().unwrap_or_default();
        ids.extend(
            page.iter()
                .filter_map(|thread| thread["id"].as_str().map(str::to_owned)),
        );
        cursor = result["nextCursor"].clone();
        if cursor.is_null() || page.is_empty() {
            return Ok(ids);
        }
    }
}

/// Any stored turn: terminal, and no tool call in it is left without an outcome.
fn check_stored_turn(
    thread_id: &str,
    turn: &Value,
    tally: &mut Tally,
    violation: &impl Fn(&str, &str, String),
) {
    let turn_id = turn["id"].as_str().unwrap_or_default();
    let status = turn["status"].as_str().unwrap_or_default();
    if !TERMINAL_TURN.contains(&status) {
        violation(
            "turn not in a terminal state after restart",
            turn_id,
            format!("turn {turn_id} of thread {thread_id} is {status:?}"),
        );
    }
    for item in turn["items"].as_array().into_iter().flatten() {
        let item_id = item["id"].as_str().unwrap_or_default();
        let item_status = item["status"].as_str().unwrap_or_default();
        let unfinished = match item["type"].as_str() {
            Some("commandExecution") => {
                item_status == "inProgress"
                    || (item_status == "completed" && item["exitCode"].is_null())
            }
            Some("dynamicToolCall") => {
                item_status == "inProgress"
                    || (item_status == "completed" && item["success"].is_null())
            }
            _ => continue,
        };
        tally.calls += 1;
        if unfinished {
            violation(
                "tool call without an output in history",
                item_id,
                format!(
                    "{} item {item_id} of turn {turn_id} (turn {status}): status {item_status:?}, \
                     exitCode {}",
                    item["type"], item["exitCode"]
                ),
            );
        }
    }
}

/// An acknowledged turn: stored, with its input, and not contradicting what the client was
/// told. Returns its stored status (`missing` when absent) for the final tally.
fn check_acknowledged_turn(
    turn_id: &str,
    acknowledged: &AcknowledgedTurn,
    stored: Option<&Value>,
    violation: &impl Fn(&str, &str, String),
) -> String {
    let told = acknowledged.told_status.as_deref().unwrap_or("nothing");
    let Some(turn) = stored else {
        violation(
            "acknowledged turn missing after restart",
            turn_id,
            format!(
                "turn {turn_id} of thread {}, acknowledged before kill {} (told: {told}; input {})",
                acknowledged.thread_id,
                acknowledged.kill,
                describe_input(&acknowledged.input)
            ),
        );
        return "missing".to_owned();
    };
    let status = turn["status"].as_str().unwrap_or_default().to_owned();
    let has_input = turn["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "userMessage")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .any(|content| content["text"] == acknowledged.input.as_str());
    if !has_input {
        violation(
            "acknowledged turn input missing after restart",
            turn_id,
            format!(
                "turn {turn_id} ({status}) has no userMessage with its input {}",
                describe_input(&acknowledged.input)
            ),
        );
    }
    if let Some(told) = &acknowledged.told_status
        && *told != status
    {
        violation(
            "stored turn contradicts turn/completed",
            turn_id,
            format!("turn {turn_id}: the client was told {told}, the store says {status}"),
        );
    }
    status
}

/// A scripted input in a few words: its first word and its token (`c<kill>l<lane>t<turn>`),
/// e.g. `/sh ... c3l1t4`.
fn describe_input(input: &str) -> String {
    let first = input.split_whitespace().next().unwrap_or_default();
    let token = input
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|word| is_token(word))
        .unwrap_or("?");
    format!("`{first} ... {token}`")
}

fn is_token(word: &str) -> bool {
    let mut rest = word;
    for tag in ['c', 'l', 't'] {
        let Some(after) = rest.strip_prefix(tag) else {
            return false;
        };
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return false;
        }
        rest = &after[digits..];
    }
    rest.is_empty()
}

fn abbreviate(text: &str) -> String {
    const KEEP: usize = 60;
    match text.char_indices().nth(KEEP) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

/// A live process of this run: not a zombie, and `marker` (`NAME=value`) in its environment.
fn alive_with_marker(pid: i32, marker: &[u8]) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the parenthesized command name, which may itself hold spaces.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    if matches!(state, Some('Z' | 'X') | None) {
        return false;
    }
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|environ| {
            environ
                .split(|byte| *byte == 0)
                .any(|entry| entry == marker)
        })
        .unwrap_or(false)
}

/// Every live process carrying `marker`: what the server started, recorded or not
/// (descendants of the commands, the server's own helpers).
fn marked_processes(marker: &[u8]) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| alive_with_marker(*pid, marker))
        .collect()
}

/// The pids the cycle's commands wrote to `pid_dir` (a file the kill interrupted before its
/// write is skipped; the marker scan still sees that process).
fn recorded_pids(pid_dir: &Path) -> Vec<(i32, String)> {
    let Ok(entries) = std::fs::read_dir(pid_dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid = std::fs::read_to_string(entry.path())
                .ok()?
                .trim()
                .parse()
                .ok()?;
            Some((pid, entry.file_name().to_string_lossy().into_owned()))
        })
        .collect()
}

/// What a recorded process is, from the extension of the file its pid was written to.
fn kind(name: Option<&str>) -> &'static str {
    match name
        .and_then(|name| name.rsplit_once('.'))
        .map(|(_, extension)| extension)
    {
        None => "unrecorded",
        Some("sh") => "turn command",
        Some("bg") => "turn command's group member",
        Some("setsid") => "turn command's setsid child",
        Some("proc") => "process/spawn streaming",
        Some("idle") => "process/spawn sleeping",
        Some(_) => "other",
    }
}

/// A survivor for the report: its pid, the file it wrote, its state, parent, group and
/// session (which tell how it escaped), what it waits in, and its command line.
fn describe(pid: i32, name: Option<&str>) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
        .unwrap_or_default();
    let recorded = name.map_or_else(|| "unrecorded".to_owned(), |name| format!("wrote {name}"));
    // After the parenthesized name: state, ppid, pgrp, session.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().take(4).collect())
        .unwrap_or_default();
    let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
    format!(
        "pid {pid} ({recorded}; state {} ppid {} pgid {} sid {} wchan {wchan}): {}",
        fields.first().unwrap_or(&"?"),
        fields.get(1).unwrap_or(&"?"),
        fields.get(2).unwrap_or(&"?"),
        fields.get(3).unwrap_or(&"?"),
        abbreviate(cmdline.trim())
    )
}

/// Waits until nothing the killed server started is alive, at most [`SURVIVAL_LIMIT`] after
/// `killed_at`; what is still alive then is a violation, and is killed here so the next cycle
/// starts clean.
pub(crate) async fn processes_dead(
    marker: &str,
    pid_dir: &Path,
    killed_at: Instant,
    cycle: u64,
    violations: &Arc<Mutex<Violations>>,
    counts: &Arc<Mutex<Counts>>,
) {
    let marker = marker.as_bytes();
    let deadline = killed_at + SURVIVAL_LIMIT;
    let mut alive = loop {
        let recorded = recorded_pids(pid_dir);
        let mut alive: BTreeMap<i32, Option<String>> = recorded
            .iter()
            .filter(|(pid, _)| alive_with_marker(*pid, marker))
            .map(|(pid, name)| (*pid, Some(name.clone())))
            .collect();
        for pid in marked_processes(marker) {
            alive.entry(pid).or_insert(None);
        }
        if alive.is_empty() || Instant::now() >= deadline {
            let mut counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
            for (_, name) in &recorded {
                *counts
                    .processes_checked
                    .entry(kind(Some(name)))
                    .or_default() += 1;
            }
            break alive;
        }
        tokio::time::sleep(POLL).await;
    };
    if alive.is_empty() {
        return;
    }
    {
        let mut violations = violations.lock().unwrap_or_else(PoisonError::into_inner);
        for (pid, name) in &alive {
            violations.add(
                "process alive 2 s after the server was killed",
                &format!("{cycle}/{pid}"),
                format!("kill {cycle}: {}", describe(*pid, name.as_deref())),
            );
        }
        let mut counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
        for name in alive.values() {
            *counts
                .processes_survived
                .entry(kind(name.as_deref()))
                .or_default() += 1;
        }
    }
    let cleanup_deadline = Instant::now() + CLEANUP_LIMIT;
    while !alive.is_empty() && Instant::now() < cleanup_deadline {
        for pid in alive.keys() {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        tokio::time::sleep(POLL).await;
        alive.retain(|pid, _| alive_with_marker(*pid, marker));
    }
    assert!(
        alive.is_empty(),
        "the test could not kill what the server left running: {alive:?}"
    );
}

/// `PRAGMA integrity_check` is `ok` and `PRAGMA foreign_key_check` finds nothing, on a
/// read-only connection while no server runs.
pub(crate) fn database_intact(
    home: &Path,
    when: &str,
    violations: &Arc<Mutex<Violations>>,
    counts: &Arc<Mutex<Counts>>,
) {
    let path = home.join("threads.sqlite");
    if !path.exists() {
        // Nothing was stored yet: the server was killed before it opened its store. The
        // restart's checks then find every acknowledged thread missing, if there was one.
        return;
    }
    let result = (|| -> rusqlite::Result<(Vec<String>, usize)> {
        let connection = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let integrity = connection
            .prepare("PRAGMA integrity_check")?
            .query_map([], |row| row.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let dangling = connection
            .prepare("PRAGMA foreign_key_check")?
            .query_map([], |_| Ok(()))?
            .count();
        Ok((integrity, dangling))
    })();
    counts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .integrity_checks += 1;
    let mut violations = violations.lock().unwrap_or_else(PoisonError::into_inner);
    match result {
        Ok((integrity, _)) if integrity != ["ok"] => violations.add(
            "PRAGMA integrity_check not ok",
            when,
            format!("{when}: {}", integrity.join("; ")),
        ),
        Ok((_, dangling)) if dangling > 0 => violations.add(
            "PRAGMA foreign_key_check found dangling rows",
            when,
            format!("{when}: {dangling} rows"),
        ),
        Ok(_) => {}
        Err(error) => violations.add(
            "database unreadable",
            when,
            format!("{when}: {}: {error}", path.display()),
        ),
    }
}

/// The checks themselves, on states the server under test should never produce, so that a
/// passing run means the checks looked and found nothing, not that they cannot fail.
#[cfg(test)]
mod self_checks {
    use std::io::{Seek as _, SeekFrom, Write as _};

    use super::*;

    fn collect() -> (Arc<Mutex<Violations>>, Arc<Mutex<Counts>>) {
        (
            Arc::new(Mutex::new(Violations::default())),
            Arc::new(Mutex::new(Counts::default())),
        )
    }

    fn kinds(violations: &Mutex<Violations>) -> String {
        violations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .to_string()
    }

    #[test]
    fn an_open_turn_and_calls_without_an_outcome_are_violations() {
        let violations = Mutex::new(Violations::default());
        let record = |kind: &str, key: &str, detail: String| {
            violations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add(kind, key, detail);
        };
        let turn = json!({
            "id": "t1",
            "status": "inProgress",
            "items": [
                {"type": "userMessage", "id": "u", "content": []},
                {"type": "commandExecution", "id": "c1", "status": "inProgress", "exitCode": null},
                {"type": "commandExecution", "id": "c2", "status": "completed", "exitCode": null},
                {"type": "commandExecution", "id": "c3", "status": "failed", "exitCode": null},
                {"type": "dynamicToolCall", "id": "d1", "status": "completed", "success": null},
                {"type": "dynamicToolCall", "id": "d2", "status": "completed", "success": true},
            ],
        });
        let mut tally = Tally::default();
        check_stored_turn("h", &turn, &mut tally, &record);
        let report = kinds(&violations);
        assert!(
            report.contains("turn not in a terminal state after restart: 1"),
            "{report}"
        );
        // c1, c2 and d1 have no outcome; c3 (closed as failed) and d2 do.
        assert!(
            report.contains("tool call without an output in history: 3"),
            "{report}"
        );
        assert_eq!(tally.calls, 5);
    }

    #[test]
    fn a_lost_turn_a_lost_input_and_a_contradicted_status_are_violations() {
        let violations = Mutex::new(Violations::default());
        let record = |kind: &str, key: &str, detail: String| {
            violations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add(kind, key, detail);
        };
        let acknowledged = AcknowledgedTurn {
            thread_id: "h".into(),
            input: "/sh echo c0l0t0".into(),
            kill: 0,
            told_status: Some("completed".into()),
        };
        let stored = |status: &str, text: &str| {
            json!({"id": "t", "status": status, "items": [
                {"type": "userMessage", "id": "u", "content": [{"type": "text", "text": text}]},
            ]})
        };
        let good = stored("completed", "/sh echo c0l0t0");
        assert_eq!(
            check_acknowledged_turn("t", &acknowledged, Some(&good), &record),
            "completed"
        );
        assert!(kinds(&violations).is_empty(), "{}", kinds(&violations));

        let contradicted = stored("interrupted", "/sh echo c0l0t0");
        check_acknowledged_turn("t", &acknowledged, Some(&contradicted), &record);
        let without_input = stored("completed", "something else");
        check_acknowledged_turn("t", &acknowledged, Some(&without_input), &record);
        assert_eq!(
            check_acknowledged_turn("t", &acknowledged, None, &record),
            "missing"
        );
        let report = kinds(&violations);
        assert!(
            report.contains("stored turn contradicts turn/completed: 1"),
            "{report}"
        );
        assert!(
            report.contains("acknowledged turn input missing after restart: 1"),
            "{report}"
        );
        assert!(
            report.contains("acknowledged turn missing after restart: 1"),
            "{report}"
        );
        assert!(report.contains("`/sh ... c0l0t0`"), "{report}");
    }

    #[test]
    fn a_damaged_database_fails_and_a_sound_one_passes() {
        let home = tempfile::tempdir().expect("temporary home");
        let path = home.path().join("threads.sqlite");
        {
            let connection = Connection::open(&path).expect("create a database");
            connection
                .execute_batch(
                    "CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
                     CREATE INDEX t_body ON t (body);
                     WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
                     INSERT INTO t SELECT i, printf('row %08d', i) FROM n;",
                )
                .expect("fill the database");
        }
        let (violations, counts) = collect();
        database_intact(home.path(), "sound", &violations, &counts);
        assert!(kinds(&violations).is_empty(), "{}", kinds(&violations));

        // Scribble over the middle of the file: pages of the table and its index.
        let length = std::fs::metadata(&path).expect("database size").len();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open the database file");
        file.seek(SeekFrom::Start(length / 2)).expect("seek");
        file.write_all(&[0xA5; 8192]).expect("damage the database");
        drop(file);
        database_intact(home.path(), "damaged", &violations, &counts);
        let report = kinds(&violations);
        assert!(
            report.contains("PRAGMA integrity_check not ok")
                || report.contains("database unreadable"),
            "{report}"
        );
        assert_eq!(
            counts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .integrity_checks,
            2
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_process_left_alive_is_reported_then_killed() {
        let pid_dir = tempfile::tempdir().expect("temporary pid directory");
        let value = format!("self-check-{}", std::process::id());
        let mut child = tokio::process::Command::new("sleep")
            .arg("30")
            .env("TANDEM_FAULT_SELF_CHECK", &value)
            .kill_on_drop(true)
            .spawn()
            .expect("start sleep");
        let pid = child.id().expect("a running child has a pid");
        std::fs::write(pid_dir.path().join("x.bg"), format!("{pid}\n")).expect("write its pid");
        let marker = format!("TANDEM_FAULT_SELF_CHECK={value}");
        // Until it has exec'd, the child shows this test's environment, without the marker.
        let exec_deadline = Instant::now() + Duration::from_secs(5);
        while !alive_with_marker(pid as i32, marker.as_bytes()) {
            assert!(
                Instant::now() < exec_deadline,
                "sleep never showed its marker"
            );
            tokio::time::sleep(POLL).await;
        }
        let (violations, counts) = collect();
        // Killed "long ago": the deadline has passed, so the first look decides.
        let killed_at = Instant::now()
            .checked_sub(SURVIVAL_LIMIT)
            .expect("the monotonic clock is past 2 s");
        processes_dead(&marker, pid_dir.path(), killed_at, 0, &violations, &counts).await;
        let report = kinds(&violations);
        assert!(
            report.contains("process alive 2 s after the server was killed: 1"),
            "{report}"
        );
        assert!(
            report.contains(&format!("pid {pid} (wrote x.bg; state ")),
            "{report}"
        );
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .expect("the leftover is killed")
            .expect("wait for sleep");
        assert!(!status.success());
        let counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
        assert_eq!(
            counts.processes_survived.get("turn command's group member"),
            Some(&1)
        );
    }
}
