//! The soak's workers: each is a tandem-client (a stdio child server, or a websocket through
//! a server's cutting proxy) running a seeded mix of operations on a small pool of threads of
//! its own, one at a time:
//!
//! - turns of the scripted agent: a quoted text, a `/sh` command whose approval is accepted
//!   (its output streams) or declined, an `/ask` answered, a `/sleep`, a planned `/fail`;
//!   half of them keyed (`clientUserMessageId`), and some of those sent again to check that
//!   the retry answers the same turn;
//! - a `process/spawn` whose output streams (quickly, or slowly enough to span a fault) and
//!   must arrive whole;
//! - `thread/start` and `thread/fork` with idempotency keys (some sent twice), `thread/archive`
//!   (which also rotates the pool, so that the loaded threads stay few),
//!   `thread/compact/start`.
//!
//! Everything acknowledged goes into the ledger. An operation that fails or ends otherwise
//! than planned is a violation unless a fault on its scope explains it
//! (`record::Disturbances::excuses`); a keyed request lost with its connection is retried
//! with the same key until it is answered.

use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rand::Rng as _;
use rand::rngs::StdRng;
use tandem_client::{
    Client, ClientError, Event, Overflow, SubscriptionFilter, SubscriptionOptions, TurnEvent,
};
use tandem_protocol::client_methods::{ThreadArchive, ThreadCompactStart, TurnStart};
use tandem_protocol::{
    ApprovalPolicy, CommandExecutionStatus, ProcessSpawnParams, ServerNotification,
    ThreadArchiveParams, ThreadCompactStartParams, ThreadForkParams, ThreadItem, ThreadStartParams,
    ThreadUnsubscribeParams, Turn, TurnStartParams, TurnStatus,
};
use tokio::sync::watch;

use super::ledger::Ledger;
use super::record::{Counters, Disturbances, Scope, Violations, lock};

/// The longest one operation may take before it counts as hung.
const OP_LIMIT: Duration = Duration::from_secs(90);
/// How long a keyed request lost with its connection is retried.
const RETRY_LIMIT: Duration = Duration::from_secs(60);
/// Threads a worker keeps loaded at most.
const POOL: usize = 3;
/// Turns after which a thread is archived and replaced.
const ROTATE_AFTER: u32 = 25;
/// The answer the workers give to `/ask`.
const ANSWER: &str = "soak answer";

/// What the workers of a phase share.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    /// Acknowledged work.
    pub(crate) ledger: Arc<Mutex<Ledger>>,
    /// Fault windows.
    pub(crate) disturbances: Arc<Disturbances>,
    /// Violations.
    pub(crate) violations: Arc<Violations>,
    /// Counters.
    pub(crate) counters: Arc<Counters>,
}

/// One worker.
#[derive(Debug)]
pub(crate) struct Worker {
    /// `ws0-1`, `stdio0`, ...
    pub(crate) name: String,
    /// What faults disturb it.
    pub(crate) scope: Scope,
    /// Its client.
    pub(crate) client: Client,
    /// The working directory of its threads and processes.
    pub(crate) cwd: String,
    /// Its own random stream, drawn from the seed.
    pub(crate) rng: StdRng,
    /// The phase's shared records.
    pub(crate) shared: Shared,
}

/// A turn the scripted agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TurnKind {
    Text,
    Approved,
    Declined,
    Ask,
    Sleep,
    Fail,
}

/// One operation of a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    NewThread,
    Turn(TurnKind),
    Process,
    Fork,
    Archive,
    Compact,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::NewThread => "thread/start",
            Op::Turn(TurnKind::Text) => "turn (text)",
            Op::Turn(TurnKind::Approved) => "turn (/sh, approved)",
            Op::Turn(TurnKind::Declined) => "turn (/sh, declined)",
            Op::Turn(TurnKind::Ask) => "turn (/ask)",
            Op::Turn(TurnKind::Sleep) => "turn (/sleep)",
            Op::Turn(TurnKind::Fail) => "turn (/fail)",
            Op::Process => "process/spawn",
            Op::Fork => "thread/fork",
            Op::Archive => "thread/archive",
            Op::Compact => "thread/compact/start",
        }
    }
}

/// A thread of a worker's pool.
#[derive(Debug, Clone)]
struct Pooled {
    id: String,
    turns: u32,
}

/// Draws the next operation for a pool.
fn pick(rng: &mut StdRng, pool: &[Pooled]) -> Op {
    if pool.is_empty() {
        return Op::NewThread;
    }
    if pool.iter().any(|thread| thread.turns >= ROTATE_AFTER) {
        return Op::Archive;
    }
    let roll = rng.random_range(0..100);
    match roll {
        0..25 => Op::Turn(TurnKind::Text),
        25..45 => Op::Turn(TurnKind::Approved),
        45..50 => Op::Turn(TurnKind::Declined),
        50..58 => Op::Turn(TurnKind::Ask),
        58..65 => Op::Turn(TurnKind::Sleep),
        65..70 => Op::Turn(TurnKind::Fail),
        70..80 => Op::Process,
        80..85 if pool.iter().any(|t| t.turns > 0) => Op::Fork,
        85..89 if pool.len() > 1 => Op::Archive,
        89..94 if pool.iter().any(|t| t.turns > 1) => Op::Compact,
        94..100 if pool.len() < POOL => Op::NewThread,
        _ => Op::Turn(TurnKind::Text),
    }
}

/// The result of one operation: `Err` says what went otherwise than planned.
type Outcome = Result<(), String>;

impl Worker {
    /// Runs operations until `stop`, then returns.
    pub(crate) async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut pool: Vec<Pooled> = Vec::new();
        let mut serial = 0u64;
        while !*stop.borrow() {
            let op = pick(&mut self.rng, &pool);
            serial += 1;
            let began = Instant::now();
            let outcome = tokio::time::timeout(OP_LIMIT, self.perform(op, &mut pool, serial))
                .await
                .unwrap_or_else(|_| Err(format!("did not finish within {OP_LIMIT:?}")));
            match outcome {
                Ok(()) => Counters::bump(&self.shared.counters.operations, op.name()),
                Err(what) => self.judge(op, began, what),
            }
            let pause = Duration::from_millis(self.rng.random_range(50..=400));
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.changed() => {}
            }
        }
    }

    fn judge(&self, op: Op, began: Instant, what: String) {
        let shared = &self.shared;
        if shared
            .disturbances
            .excuses(self.scope, began, Instant::now())
        {
            shared.counters.excused.fetch_add(1, Ordering::Relaxed);
        } else {
            shared.violations.add(format!(
                "{}: {} went wrong with no fault to explain it: {what}",
                self.name,
                op.name()
            ));
        }
    }

    async fn perform(&mut self, op: Op, pool: &mut Vec<Pooled>, serial: u64) -> Outcome {
        match op {
            Op::NewThread => self.new_thread(pool, serial).await,
            Op::Turn(kind) => self.turn(kind, pool, serial).await,
            Op::Process => self.process(serial).await,
            Op::Fork => self.fork(pool, serial).await,
            Op::Archive => self.archive(pool).await,
            Op::Compact => self.compact(pool).await,
        }
    }

    /// Sends a keyed request until it is answered: a loss with the connection may have
    /// reached the server, and the key makes sending it again safe.
    async fn keyed<T, F, Fut>(&self, mut send: F) -> Result<T, String>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let began = Instant::now();
        loop {
            self.shared.counters.request();
            match send().await {
                Ok(value) => return Ok(value),
                Err(error) if error.is_retry_safe() && began.elapsed() < RETRY_LIMIT => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => return Err(error.to_string()),
            }
        }
    }

    fn coin(&mut self, probability: f64) -> bool {
        self.rng.random_bool(probability)
    }

    async fn new_thread(&mut self, pool: &mut Vec<Pooled>, serial: u64) -> Outcome {
        let mut params = ThreadStartParams::new()
            .approval_policy(ApprovalPolicy::OnRequest)
            .cwd(&self.cwd);
        params.idempotency_key = Some(format!("{}-thread-{serial}", self.name));
        let client = self.client.clone();
        let started = self.keyed(|| client.start_thread(params.clone())).await?;
        let id = started.thread.id;
        lock(&self.shared.ledger).thread(&id);
        if self.coin(0.3) {
            let again = self.keyed(|| client.start_thread(params.clone())).await?;
            self.same("thread/start", &id, &again.thread.id);
        }
        pool.push(Pooled { id, turns: 0 });
        Ok(())
    }

    /// A repeated keyed request must answer what the first did; a different answer is a
    /// violation no fault explains (the key is stored with the thread).
    fn same(&self, method: &str, first: &str, again: &str) {
        if first == again {
            self.shared.counters.retries.fetch_add(1, Ordering::Relaxed);
        } else {
            self.shared.violations.add(format!(
                "{}: a repeated keyed {method} answered {again}, the first answered {first}",
                self.name
            ));
        }
    }

    async fn turn(&mut self, kind: TurnKind, pool: &mut [Pooled], serial: u64) -> Outcome {
        let index = self.rng.random_range(0..pool.len());
        let thread = pool[index].id.clone();
        let marker = format!("{}-{serial}", self.name);
        let input = match kind {
            TurnKind::Text => format!("hello {marker}"),
            TurnKind::Approved | TurnKind::Declined => {
                format!("/sh echo {marker}; seq 1 40")
            }
            TurnKind::Ask => format!("/ask what about {marker}?"),
            TurnKind::Sleep => format!("/sleep 250\nslept {marker}"),
            TurnKind::Fail => format!("/fail planned {marker}"),
        };
        let mut params = TurnStartParams::text(&thread, input.as_str());
        let keyed = self.coin(0.5);
        if keyed {
            params = params.client_user_message_id(format!("{marker}-key"));
        }
        let client = self.client.clone();
        let mut handle = if keyed {
            self.keyed(|| client.start_turn(params.clone())).await?
        } else {
            self.shared.counters.request();
            client
                .start_turn(params.clone())
                .await
                .map_err(|e| e.to_string())?
        };
        let turn_id = handle.id().to_owned();
        self.shared.counters.turns.fetch_add(1, Ordering::Relaxed);
        lock(&self.shared.ledger).turn_started(
            &thread,
            &turn_id,
            Some(input.clone()),
            params.client_user_message_id.clone(),
        );
        pool[index].turns += 1;
        if keyed && self.coin(0.3) {
            let again = self
                .keyed(|| client.call::<TurnStart>(params.clone()))
                .await?;
            self.same("turn/start", &turn_id, &again.turn.id);
        }
        let done = loop {
            let Some(event) = handle.next_event().await else {
                return Err(format!(
                    "turn {turn_id}: its events ended before turn/completed"
                ));
            };
            match event.map_err(|e| format!("turn {turn_id}: {e}"))? {
                TurnEvent::Approval(request) => {
                    let answered = if kind == TurnKind::Declined {
                        request.decline().await
                    } else {
                        request.accept().await
                    };
                    answered.map_err(|e| format!("turn {turn_id}: answering the approval: {e}"))?;
                }
                TurnEvent::Question(request) => {
                    request
                        .answer_all(ANSWER)
                        .await
                        .map_err(|e| format!("turn {turn_id}: answering the question: {e}"))?;
                }
                TurnEvent::ItemCompleted(item) => {
                    lock(&self.shared.ledger).item_completed(&thread, &turn_id, &item);
                }
                TurnEvent::Completed(turn) => break turn,
                _ => {}
            }
        };
        self.completed(&thread, &done);
        expect_turn(kind, &marker, &done).map_err(|what| format!("turn {turn_id}: {what}"))
    }

    fn completed(&self, thread: &str, turn: &Turn) {
        lock(&self.shared.ledger).turn_completed(thread, turn);
        Counters::bump(
            &self.shared.counters.completed,
            format!("{:?}", turn.status).to_lowercase(),
        );
    }

    async fn process(&mut self, serial: u64) -> Outcome {
        let handle = format!("{}-p{serial}", self.name);
        let (lines, pause) = if self.coin(0.3) {
            (20, " sleep 0.05;")
        } else {
            (self.rng.random_range(50..=400), "")
        };
        let script =
            format!("i=0; while [ $i -lt {lines} ]; do echo {handle}-$i;{pause} i=$((i+1)); done");
        let expected: String = (0..lines).map(|i| format!("{handle}-{i}\n")).collect();
        let params = ProcessSpawnParams::new(&handle, ["sh", "-c", &script], &self.cwd).streaming();
        self.shared.counters.request();
        // Lossless: a burst of output waits for this reader (through the server's
        // backpressure) rather than overflowing the handle's queue while the task waits for
        // its turn on a busy runtime.
        let process = self
            .client
            .spawn_process_with(params, None, Overflow::Lossless)
            .await
            .map_err(|e| e.to_string())?;
        let output = process
            .collect_output()
            .await
            .map_err(|e| format!("process {handle}: {e}"))?;
        if output.exited.exit_code != 0 || output.stdout != expected.as_bytes() {
            return Err(format!(
                "process {handle}: exit {} with {} of {} bytes",
                output.exited.exit_code,
                output.stdout.len(),
                expected.len()
            ));
        }
        self.shared
            .counters
            .processes
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    async fn fork(&mut self, pool: &mut Vec<Pooled>, serial: u64) -> Outcome {
        let sources: Vec<usize> = (0..pool.len()).filter(|i| pool[*i].turns > 0).collect();
        let source = pool[sources[self.rng.random_range(0..sources.len())]].clone();
        let mut params = ThreadForkParams::new(&source.id);
        params.idempotency_key = Some(format!("{}-fork-{serial}", self.name));
        let client = self.client.clone();
        let fork = self.keyed(|| client.fork_thread(params.clone())).await?;
        let id = fork.thread.id.clone();
        {
            // The copied history is acknowledged too: it must stay in the store.
            let mut ledger = lock(&self.shared.ledger);
            ledger.thread(&id);
            for turn in &fork.thread.turns {
                ledger.turn_started(&id, &turn.id, None, None);
                for item in &turn.items {
                    ledger.item_completed(&id, &turn.id, item);
                }
                ledger.turn_completed(&id, turn);
            }
        }
        if self.coin(0.3) {
            let again = self.keyed(|| client.fork_thread(params.clone())).await?;
            self.same("thread/fork", &id, &again.thread.id);
        }
        if pool.len() >= POOL {
            self.archive(pool).await?;
        }
        pool.push(Pooled {
            id,
            turns: source.turns,
        });
        Ok(())
    }

    /// Archives the pool's oldest thread (the one with the most turns), which unloads it.
    async fn archive(&mut self, pool: &mut Vec<Pooled>) -> Outcome {
        let index = (0..pool.len())
            .max_by_key(|i| pool[*i].turns)
            .expect("the pool is not empty");
        let thread = pool.remove(index).id;
        // Not followed any more, so a reconnect does not resume an archived thread.
        self.shared.counters.request();
        let _ = self
            .client
            .unsubscribe_thread(ThreadUnsubscribeParams {
                thread_id: thread.clone(),
            })
            .await;
        self.shared.counters.request();
        self.client
            .call::<ThreadArchive>(ThreadArchiveParams {
                thread_id: thread.clone(),
            })
            .await
            .map(|_| ())
            .map_err(|e| format!("thread {thread}: {e}"))
    }

    async fn compact(&mut self, pool: &mut [Pooled]) -> Outcome {
        let candidates: Vec<usize> = (0..pool.len()).filter(|i| pool[*i].turns > 1).collect();
        let index = candidates[self.rng.random_range(0..candidates.len())];
        let thread = pool[index].id.clone();
        let mut events = self.client.subscribe(
            SubscriptionOptions::new(SubscriptionFilter::thread(&thread)).capacity(4096),
        );
        self.shared.counters.request();
        self.client
            .call::<ThreadCompactStart>(ThreadCompactStartParams {
                thread_id: thread.clone(),
            })
            .await
            .map_err(|e| format!("thread {thread}: {e}"))?;
        pool[index].turns += 1;
        let mut turn_id = None;
        let done = loop {
            let event = events
                .next()
                .await
                .ok_or("the thread's events ended before the compaction completed")?
                .map_err(|e| e.to_string())?;
            let Event::Notification(note) = event else {
                if let Event::Gap { .. } = event {
                    return Err(format!("thread {thread}: a gap during the compaction"));
                }
                continue;
            };
            match note {
                ServerNotification::TurnStarted(started) if turn_id.is_none() => {
                    lock(&self.shared.ledger).turn_started(&thread, &started.turn.id, None, None);
                    turn_id = Some(started.turn.id);
                }
                ServerNotification::ItemCompleted(done)
                    if Some(&done.turn_id) == turn_id.as_ref() =>
                {
                    lock(&self.shared.ledger).item_completed(&thread, &done.turn_id, &done.item);
                }
                ServerNotification::TurnCompleted(done)
                    if Some(&done.turn.id) == turn_id.as_ref() =>
                {
                    break done.turn;
                }
                _ => {}
            }
        };
        self.completed(&thread, &done);
        let compacted = done
            .items
            .iter()
            .any(|item| matches!(item, ThreadItem::ContextCompaction { .. }));
        if done.status != TurnStatus::Completed || !compacted {
            return Err(format!(
                "thread {thread}: the compaction turn ended {:?} (compacted: {compacted})",
                done.status
            ));
        }
        Ok(())
    }
}

/// Whether a completed turn is what its kind plans: its status, and the item that shows the
/// agent did what was asked.
fn expect_turn(kind: TurnKind, marker: &str, turn: &Turn) -> Outcome {
    let planned = if kind == TurnKind::Fail {
        TurnStatus::Failed
    } else {
        TurnStatus::Completed
    };
    if turn.status != planned {
        return Err(format!(
            "ended {:?} ({:?}), planned {planned:?}",
            turn.status, turn.error
        ));
    }
    let agent_said = |needle: &str| {
        turn.items.iter().any(
            |item| matches!(item, ThreadItem::AgentMessage { text, .. } if text.contains(needle)),
        )
    };
    let command = turn.items.iter().find_map(|item| match item {
        ThreadItem::CommandExecution {
            status,
            exit_code,
            aggregated_output,
            ..
        } => Some((*status, *exit_code, aggregated_output.clone())),
        _ => None,
    });
    let fine = match kind {
        TurnKind::Text | TurnKind::Sleep => agent_said(marker),
        TurnKind::Ask => agent_said(ANSWER),
        TurnKind::Approved => matches!(
            &command,
            Some((CommandExecutionStatus::Completed, Some(0), Some(output)))
                if output.contains(marker) && output.contains("\n40\n")
        ),
        TurnKind::Declined => matches!(command, Some((CommandExecutionStatus::Declined, ..))),
        TurnKind::Fail => true,
    };
    if fine {
        Ok(())
    } else {
        Err(format!(
            "its items are not what {kind:?} plans: {:?}",
            turn.items
        ))
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng as _;

    use super::*;

    #[test]
    fn an_empty_pool_starts_a_thread_and_a_long_thread_is_rotated() {
        let mut rng = StdRng::seed_from_u64(1);
        assert_eq!(pick(&mut rng, &[]), Op::NewThread);
        let long = [Pooled {
            id: "t".into(),
            turns: ROTATE_AFTER,
        }];
        assert_eq!(pick(&mut rng, &long), Op::Archive);
    }

    #[test]
    fn the_mix_holds_every_operation_and_respects_the_pool() {
        let mut rng = StdRng::seed_from_u64(7);
        let pool = [
            Pooled {
                id: "a".into(),
                turns: 3,
            },
            Pooled {
                id: "b".into(),
                turns: 0,
            },
        ];
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..5000 {
            seen.insert(pick(&mut rng, &pool).name());
        }
        assert_eq!(seen.len(), 11, "{seen:?}");
        // A full pool starts no thread; a single fresh thread is neither forked, archived
        // nor compacted.
        let full: Vec<Pooled> = (0..POOL)
            .map(|i| Pooled {
                id: i.to_string(),
                turns: 1,
            })
            .collect();
        let fresh = [Pooled {
            id: "f".into(),
            turns: 0,
        }];
        for _ in 0..5000 {
            assert_ne!(pick(&mut rng, &full), Op::NewThread);
            assert!(!matches!(
                pick(&mut rng, &fresh),
                Op::Fork | Op::Archive | Op::Compact
            ));
        }
    }

    fn turn(status: TurnStatus, items: Vec<ThreadItem>) -> Turn {
        super::super::ledger::tests::turn("t", status, items)
    }

    fn command(status: CommandExecutionStatus, output: &str) -> ThreadItem {
        ThreadItem::CommandExecution {
            id: "c".into(),
            command: "sh".into(),
            cwd: "/".into(),
            status,
            command_actions: Vec::new(),
            process_id: None,
            exit_code: Some(0),
            aggregated_output: Some(output.into()),
            duration_ms: None,
            source: tandem_protocol::CommandExecutionSource::Agent,
        }
    }

    #[test]
    fn a_turn_is_judged_by_its_plan() {
        let said = ThreadItem::AgentMessage {
            id: "m".into(),
            text: "You said: \"hello w-1\"".into(),
        };
        let ran = command(CommandExecutionStatus::Completed, "w-1\n1\n2\n39\n40\n");
        let cut_short = command(CommandExecutionStatus::Completed, "w-1\n1\n2\n");
        let declined = command(CommandExecutionStatus::Declined, "");
        use TurnStatus::{Completed, Failed, Interrupted};
        let cases = [
            (TurnKind::Text, "w-1", Completed, vec![said.clone()], true),
            (TurnKind::Text, "w-2", Completed, vec![said.clone()], false),
            (TurnKind::Text, "w-1", Interrupted, vec![said], false),
            (TurnKind::Fail, "w-1", Failed, vec![], true),
            (TurnKind::Fail, "w-1", Completed, vec![], false),
            (TurnKind::Approved, "w-1", Completed, vec![ran], true),
            (TurnKind::Approved, "w-1", Completed, vec![cut_short], false),
            (
                TurnKind::Declined,
                "w-1",
                Completed,
                vec![declined.clone()],
                true,
            ),
            (TurnKind::Approved, "w-1", Completed, vec![declined], false),
        ];
        for (kind, marker, status, items, fine) in cases {
            let judged = expect_turn(kind, marker, &turn(status, items));
            assert_eq!(
                judged.is_ok(),
                fine,
                "{kind:?} {marker} {status:?}: {judged:?}"
            );
        }
    }
}
