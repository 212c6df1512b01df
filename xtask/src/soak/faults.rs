//! The faults a phase injects, each with the checks that belong to it:
//!
//! - `kill -9` of a websocket server: everything it started is gone within
//!   [`servers::ORPHAN_BOUND`], it restarts on the same store, and the ledger reads back
//!   whole through it;
//! - `kill -9` of a stdio client's server child: the same orphan check, the client starts a
//!   new child by itself, the ledger reads back;
//! - a cut of every connection through a server's proxy (the watcher judges the resumes);
//! - a full disk: with the home's tmpfs filled, writes must fail and say so, naming the
//!   database, nothing acknowledged may be lost, and once the ballast is freed turns must work
//!   again without a restart;
//! - a PostgreSQL restart: turns work again once it is back, and the ledger reads back
//!   through every server.

use std::time::{Duration, Instant};

use tandem_client::{Client, ProcessHandle, TurnEvent};
use tandem_protocol::{
    ProcessSpawnParams, ThreadItem, ThreadStartParams, Turn, TurnStartParams, TurnStatus,
};

use super::SoakError;
use super::phase::{Phase, direct_client};
use super::procfs;
use super::record::{Scope, lock};
use super::schedule::{Fault, FaultKind};
use super::servers::{self, children_of, signal_kill, wait_orphans};

/// How long the disk stays full at most while the check waits for a write to fail.
const FULL_LIMIT: Duration = Duration::from_secs(30);
/// How long turns may take to work again after the disk is freed or the database is back.
const RECOVERY_LIMIT: Duration = Duration::from_secs(30);
/// How long a stdio client may take to start a new server child.
const RESPAWN_LIMIT: Duration = Duration::from_secs(60);
/// How long a kill's sentinel processes may take to start.
const SENTINEL_LIMIT: Duration = Duration::from_secs(10);
/// The text input of the turns that fill the disk's last pages.
const FILLER_BYTES: usize = 32 * 1024;
/// How long after the disk is freed a turn told `failed` may still read `inProgress`: the
/// server writes the end it owes again every 2 s at most (`OWED_RETRY_MAX_PAUSE` in
/// crates/server/src/threads/turn_requests.rs), and a read-back of many threads takes a while.
const OWED_END_LIMIT: Duration = Duration::from_secs(10);

/// A fault's outcome: `Ok` describes what happened, `Err` why it was not injected.
type Injected = Result<String, String>;

impl Phase {
    /// Injects `fault`; `Err` only when the phase cannot go on.
    pub(crate) async fn execute(&mut self, fault: &Fault) -> Result<Injected, SoakError> {
        match fault.kind {
            FaultKind::KillServer => self.kill_server(fault.target).await,
            FaultKind::KillStdio => Ok(self.kill_stdio(fault.target).await),
            FaultKind::Cut => Ok(self.cut(fault.target).await),
            FaultKind::DiskFull => Ok(self.disk_full().await),
            FaultKind::PostgresRestart => Ok(self.restart_postgres().await),
        }
    }

    async fn kill_server(&mut self, index: usize) -> Result<Injected, SoakError> {
        let mark = self.slots[index].server.mark().to_owned();
        let client = direct_client(self.slots[index].server.address(), "soak-sentinel").await;
        let sentinels = self.plant_sentinels(&client, &mark).await;
        let disturbances = self.shared.disturbances.clone();
        let window = disturbances.begin(Scope::Server(index), FaultKind::KillServer);
        let killed = Instant::now();
        let life = self.slots[index].life;
        self.mark_down(index);
        let children = self.slots[index].server.kill9().await;
        let orphans = self.orphans(&mark, &children).await;
        drop(sentinels);
        client.close().await;
        self.restart(index).await?;
        let back = killed.elapsed();
        disturbances.end(window);
        self.check_ledger(index, "after kill -9", false).await;
        Ok(Ok(format!(
            "{} life {life}: {orphans}; serving again after {} ms",
            self.slots[index].name,
            back.as_millis()
        )))
    }

    /// Starts, through `client`, a process group that would outlive its server if nothing
    /// killed it: a `sleep` in the group and one that left it with `setsid` (found by the
    /// watchdog through the marker it inherits). Waits until both run, so that every kill
    /// has something to kill; a violation if they do not start.
    async fn plant_sentinels(&self, client: &Client, mark: &str) -> Option<ProcessHandle> {
        let handle = format!("sentinel-{}", self.orphan_times.len());
        let cwd = self.work.display().to_string();
        let script = "setsid sleep 1000 & sleep 1000 & wait";
        let mut params = ProcessSpawnParams::new(&handle, ["sh", "-c", script], cwd).streaming();
        params.timeout_ms = Some(None);
        self.shared.counters.request();
        let process = match client.spawn_process(params).await {
            Ok(process) => process,
            Err(error) => {
                self.shared.violations.add(format!(
                    "the kill's sentinel processes did not start: {error}"
                ));
                return None;
            }
        };
        let began = Instant::now();
        while began.elapsed() < SENTINEL_LIMIT {
            let sleeping = procfs::marked(mark)
                .iter()
                .filter(|marked| marked.life == mark && marked.stat.comm == "sleep")
                .count();
            if sleeping >= 2 {
                return Some(process);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.shared.violations.add(format!(
            "the kill's sentinel processes ({handle}) were not running {SENTINEL_LIMIT:?} after \
             process/spawn answered"
        ));
        Some(process)
    }

    /// Waits for what a killed server started to die; describes the outcome.
    async fn orphans(&mut self, mark: &str, children: &[procfs::Stat]) -> String {
        match wait_orphans(mark, children).await {
            Ok(took) => {
                self.orphan_times.push(took);
                format!(
                    "{} child process(es) gone {} ms after",
                    children.len(),
                    took.as_millis()
                )
            }
            Err(survivors) => {
                let listed: Vec<String> = survivors
                    .iter()
                    .map(|(pid, what)| format!("pid {pid} `{what}`"))
                    .collect();
                self.shared.violations.add(format!(
                    "{} process(es) outlived their killed server by more than {:?}: {}",
                    survivors.len(),
                    servers::ORPHAN_BOUND,
                    listed.join("; ")
                ));
                format!("{} survivor(s)", survivors.len())
            }
        }
    }

    async fn kill_stdio(&mut self, index: usize) -> Injected {
        let (owner, client) = self.stdio[index].clone();
        let Some(pid) = client.child_pid() else {
            return Err(format!("{owner} has no server child running"));
        };
        let mark = format!("{}{pid}", self.spec.owner_mark(&owner));
        let sentinels = self.plant_sentinels(&client, &mark).await;
        let disturbances = self.shared.disturbances.clone();
        let window = disturbances.begin(Scope::Stdio(index), FaultKind::KillStdio);
        let children = children_of(pid);
        signal_kill(pid);
        let orphans = self.orphans(&mark, &children).await;
        drop(sentinels);
        let killed = Instant::now();
        let respawned = loop {
            match client.child_pid() {
                Some(new) if new != pid => break Some(new),
                _ if killed.elapsed() > RESPAWN_LIMIT => break None,
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        disturbances.end(window);
        let Some(new) = respawned else {
            self.shared.violations.add(format!(
                "{owner}: its client did not start a new server within {RESPAWN_LIMIT:?} of the kill"
            ));
            return Ok(format!("{owner} (pid {pid}): {orphans}; not respawned"));
        };
        self.check_ledger(0, &format!("after kill -9 of {owner}'s server"), false)
            .await;
        Ok(format!(
            "{owner} (pid {pid}): {orphans}; new server pid {new} after {} ms",
            killed.elapsed().as_millis()
        ))
    }

    async fn cut(&mut self, index: usize) -> Injected {
        let disturbances = self.shared.disturbances.clone();
        let window = disturbances.begin(Scope::Server(index), FaultKind::Cut);
        let proxy = &self.slots[index].proxy;
        let before = proxy.cut_connections();
        proxy.cut();
        // The connection tasks count their cut as they end.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let cut = proxy.cut_connections() - before;
        disturbances.end(window);
        Ok(format!(
            "{cut} connection(s) to {} cut",
            self.slots[index].name
        ))
    }

    async fn disk_full(&mut self) -> Injected {
        let Some(tmpfs) = self.tmpfs.clone() else {
            return Err("the home is not on a tmpfs".into());
        };
        let client = direct_client(self.slots[0].server.address(), "soak-disk").await;
        // The check's thread is created while there is room: a new thread is a write too.
        let thread = match self.check_thread(&client).await {
            Ok(thread) => thread,
            Err(error) => {
                client.close().await;
                return Err(format!("the check's thread did not start: {error}"));
            }
        };
        let disturbances = self.shared.disturbances.clone();
        let window = disturbances.begin(Scope::All, FaultKind::DiskFull);
        let filling = tmpfs.clone();
        let filled = tokio::task::spawn_blocking(move || filling.fill())
            .await
            .expect("the fill does not panic");
        let outcome = match filled {
            Ok(bytes) => {
                let failure = self.fill_until_refused(&client, &thread).await;
                let freed = tokio::task::spawn_blocking(move || tmpfs.free())
                    .await
                    .expect("freeing does not panic");
                match freed {
                    Ok(()) => {
                        let recovered = self.turns_work(&client, Some(&thread)).await;
                        Ok(format!(
                            "{} MiB of ballast; {failure}; {recovered}",
                            bytes / (1024 * 1024)
                        ))
                    }
                    Err(error) => Err(format!("the ballast could not be removed: {error}")),
                }
            }
            Err(error) => Err(format!("the tmpfs could not be filled: {error}")),
        };
        disturbances.end(window);
        client.close().await;
        self.settled_after_the_disk(outcome.is_ok()).await;
        outcome
    }

    /// After the disk was freed, the ends the store refused while it was full are written by
    /// the server that owes them (docs/reliability.md, "Turns and the store"): a turn told
    /// `failed` that still reads `inProgress` [`OWED_END_LIMIT`] later is a violation.
    async fn settled_after_the_disk(&mut self, freed: bool) {
        let began = Instant::now();
        let mut pending = self
            .check_ledger(0, "after the disk was freed", false)
            .await;
        while freed && pending > 0 && began.elapsed() < OWED_END_LIMIT {
            tokio::time::sleep(Duration::from_millis(500)).await;
            pending = self
                .check_ledger(0, "after the disk was freed", false)
                .await;
        }
        if freed && pending > 0 {
            self.shared.violations.add(format!(
                "{pending} turn(s) told failed still read inProgress {OWED_END_LIMIT:?} after \
                 the disk was freed: the server did not write the ends it owes"
            ));
        }
    }

    /// A thread for a fault's own turns, in the ledger like any other.
    async fn check_thread(&self, client: &Client) -> Result<String, String> {
        self.shared.counters.request();
        let cwd = self.work.display().to_string();
        let started = client
            .start_thread(ThreadStartParams::new().cwd(cwd))
            .await
            .map_err(|e| e.to_string())?;
        lock(&self.shared.ledger).thread(&started.thread.id);
        Ok(started.thread.id)
    }

    /// Runs one turn on `thread` and records it; `Err` if `turn/start` was refused.
    async fn check_turn(
        &self,
        client: &Client,
        thread: &str,
        input: String,
    ) -> Result<Turn, String> {
        self.shared.counters.request();
        let mut handle = client
            .start_turn(TurnStartParams::text(thread, input.as_str()))
            .await
            .map_err(|e| e.to_string())?;
        let id = handle.id().to_owned();
        lock(&self.shared.ledger).turn_started(thread, &id, Some(input), None);
        let read = async {
            loop {
                match handle.next_event().await {
                    // Only `item/completed` says an item is stored: the items of a turn that
                    // failed because the store refused a write include the refused one.
                    Some(Ok(TurnEvent::ItemCompleted(item))) => {
                        lock(&self.shared.ledger).item_completed(thread, &id, &item);
                    }
                    Some(Ok(TurnEvent::Completed(turn))) => return Ok(turn),
                    Some(Ok(_)) => {}
                    Some(Err(error)) => return Err(error.to_string()),
                    None => return Err(format!("turn {id}: its events ended before its end")),
                }
            }
        };
        let turn = tokio::time::timeout(RECOVERY_LIMIT, read)
            .await
            .map_err(|_| format!("turn {id} did not complete within {RECOVERY_LIMIT:?}"))??;
        lock(&self.shared.ledger).turn_completed(thread, &turn);
        Ok(turn)
    }

    /// With the disk full, writes turns until one is refused or fails; describes the failure,
    /// and reports a violation if none came or it does not say what to do.
    async fn fill_until_refused(&self, client: &Client, thread: &str) -> String {
        let began = Instant::now();
        let filler = "x".repeat(FILLER_BYTES);
        let mut stored = 0;
        let failure = loop {
            if began.elapsed() > FULL_LIMIT {
                break None;
            }
            let input = format!("disk {stored} {filler}");
            match self.check_turn(client, thread, input).await {
                Err(refused) => break Some(refused),
                Ok(turn) if turn.status == TurnStatus::Failed => {
                    break Some(turn.error.map(|e| e.message).unwrap_or_default());
                }
                Ok(_) => stored += 1,
            }
        };
        let Some(message) = failure else {
            self.shared.violations.add(format!(
                "the disk was full for {FULL_LIMIT:?} and no write failed ({stored} turns of \
                 {FILLER_BYTES} bytes were answered as stored)"
            ));
            return format!("{stored} turns stored, none refused");
        };
        if !message.contains("threads.sqlite") {
            self.shared.violations.add(format!(
                "a write refused on a full disk does not name the database: {message}"
            ));
        }
        let short: String = message.chars().take(120).collect();
        format!("{stored} turns stored, then refused: {short}")
    }

    /// Turns complete again (on `thread`, or a new thread) within [`RECOVERY_LIMIT`];
    /// describes how long it took, and reports a violation if they do not.
    async fn turns_work(&self, client: &Client, thread: Option<&str>) -> String {
        let began = Instant::now();
        let mut last = String::new();
        let mut thread = thread.map(str::to_owned);
        while began.elapsed() < RECOVERY_LIMIT {
            let id = match &thread {
                Some(id) => id.clone(),
                None => match self.check_thread(client).await {
                    Ok(id) => {
                        thread = Some(id.clone());
                        id
                    }
                    Err(error) => {
                        last = error;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                },
            };
            match self.check_turn(client, &id, "working again?".into()).await {
                Ok(turn) if turn.status == TurnStatus::Completed && agent_spoke(&turn) => {
                    return format!("turns work again after {} ms", began.elapsed().as_millis());
                }
                Ok(turn) => last = format!("the turn ended {:?}: {:?}", turn.status, turn.error),
                Err(error) => last = error,
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        self.shared.violations.add(format!(
            "turns did not work again within {RECOVERY_LIMIT:?} after the fault ended: {last}"
        ));
        "turns did not work again".into()
    }

    async fn restart_postgres(&mut self) -> Injected {
        let Some(postgres) = self.postgres.clone() else {
            return Err("the store is not PostgreSQL".into());
        };
        let disturbances = self.shared.disturbances.clone();
        let window = disturbances.begin(Scope::All, FaultKind::PostgresRestart);
        let restarted = tokio::task::spawn_blocking(move || postgres.restart())
            .await
            .expect("the restart does not panic");
        let outcome = match restarted {
            Ok(down) => {
                let mut recovered = Vec::new();
                for index in 0..self.slots.len() {
                    let client = direct_client(self.slots[index].server.address(), "soak-pg").await;
                    let works = self.turns_work(&client, None).await;
                    client.close().await;
                    recovered.push(format!("{}: {works}", self.slots[index].name));
                }
                Ok(format!(
                    "down for {} ms; {}",
                    down.as_millis(),
                    recovered.join(", ")
                ))
            }
            Err(reason) => Err(reason),
        };
        disturbances.end(window);
        for index in 0..self.slots.len() {
            self.check_ledger(index, "after the database restart", false)
                .await;
        }
        outcome
    }
}

/// Whether the turn holds an agent message (the scripted agent answers every text).
fn agent_spoke(turn: &Turn) -> bool {
    turn.items
        .iter()
        .any(|item| matches!(item, ThreadItem::AgentMessage { .. }))
}
