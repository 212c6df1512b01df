//! One soak phase: its store (SQLite on a tmpfs home, or a PostgreSQL database), its servers
//! (one websocket server on SQLite, two on PostgreSQL, each behind a cutting proxy), its
//! clients (websocket workers, stdio workers with server children of their own, a probe and
//! a cursor watcher per server), the seeded faults, and the checks at the end: the ledger
//! read back through every server, clean exits, nothing left running.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use tandem_client::{Client, ClientOptions, ReconnectPolicy, Transport, WebSocketTarget};
use tandem_protocol::ThreadLoadedListParams;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::SoakError;
use super::disk::Tmpfs;
use super::ledger::{Ledger, Selection};
use super::monitor::{Life, Monitor, Targets};
use super::postgres::Postgres;
use super::probe::{self, ProbeSample};
use super::proxy::Proxy;
use super::record::{Counters, Disturbances, Scope, Violations, lock};
use super::schedule::{self, Fault, FaultKind, Setup};
use super::servers::{self, ORPHAN_BOUND, ServerSpec, WsServer};
use super::watcher::Watcher;
use super::workload::{Shared, Worker};

/// Websocket workers per server.
const WS_WORKERS: usize = 2;
/// Stdio workers per phase.
const STDIO_WORKERS: usize = 2;
/// How long the workers may take to finish their operation once told to stop.
const STOP_LIMIT: Duration = Duration::from_secs(120);

/// Which store a phase runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Store {
    /// `TANDEM_HOME/threads.sqlite`, one websocket server.
    Sqlite,
    /// A database of the throwaway cluster, two websocket servers.
    Postgres,
}

impl Store {
    /// The phase's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Store::Sqlite => "sqlite",
            Store::Postgres => "postgres",
        }
    }
}

/// What a phase runs with.
#[derive(Debug, Clone)]
pub(crate) struct PhaseConfig {
    /// The store.
    pub(crate) store: Store,
    /// How long the workload runs.
    pub(crate) length: Duration,
    /// The seed of the schedule and of every worker.
    pub(crate) seed: u64,
    /// The `tandem` binary.
    pub(crate) binary: PathBuf,
    /// The run's directory (homes, logs).
    pub(crate) root: PathBuf,
    /// The run's marker prefix.
    pub(crate) run: String,
    /// The fault kinds to inject.
    pub(crate) faults: Vec<FaultKind>,
}

/// What a phase leaves for the report.
#[derive(Debug)]
pub(crate) struct PhaseReport {
    /// `sqlite` or `postgres`.
    pub(crate) name: &'static str,
    /// How long the workload ran.
    pub(crate) length: Duration,
    /// Its counters.
    pub(crate) counters: Arc<Counters>,
    /// Every server life the monitor sampled.
    pub(crate) lives: Vec<Life>,
    /// The probe samples of each server, with the windows in which it was down by design.
    pub(crate) probes: Vec<(Vec<ProbeSample>, Vec<DownWindow>)>,
    /// How long the orphans of each kill took to go.
    pub(crate) orphan_times: Vec<Duration>,
    /// Threads and turns in the ledger.
    pub(crate) ledger: (usize, usize),
    /// How many threads each websocket server had loaded at the end (what its memory holds
    /// by design: the workers' pools, the watcher's thread, threads not unloaded yet).
    pub(crate) loaded: Vec<(String, usize)>,
    /// Reconnects, replayed events, dropped duplicates and gaps the workers' clients counted.
    pub(crate) reconnects: (u64, u64, u64, u64),
    /// Violations.
    pub(crate) violations: Vec<String>,
    /// What the phase could not do, and other remarks.
    pub(crate) notes: Vec<String>,
}

/// When a server was down by design: from its kill to its new life listening.
pub(crate) type DownWindow = (Instant, Instant);

/// One websocket server of a phase and what fronts it.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) name: String,
    pub(crate) server: WsServer,
    pub(crate) life: u32,
    pub(crate) proxy: Proxy,
    pub(crate) at: watch::Sender<(u32, Option<SocketAddr>)>,
}

/// A running phase: what the faults act on.
#[derive(Debug)]
pub(crate) struct Phase {
    pub(crate) spec: ServerSpec,
    pub(crate) slots: Vec<Slot>,
    pub(crate) stdio: Vec<(String, Client)>,
    pub(crate) tmpfs: Option<Arc<Tmpfs>>,
    pub(crate) postgres: Option<Arc<Postgres>>,
    pub(crate) targets: Targets,
    pub(crate) shared: Shared,
    pub(crate) orphan_times: Vec<Duration>,
    pub(crate) notes: Vec<String>,
    pub(crate) work: PathBuf,
    /// The ledger's change count at the previous read-back.
    last_check: u64,
    /// Draws the unchanged threads a read-back samples.
    check_rng: StdRng,
}

/// Unchanged threads a read-back after a restart reads besides the changed ones.
const CHECK_SAMPLE: usize = 40;

/// The options of every worker client: experimental API (for `process/spawn`), queues that
/// hold a turn's burst while the worker's task waits for its turn on a busy runtime, and a
/// reconnect that keeps trying through a restart of a server on a loaded machine.
fn worker_options(name: &str) -> ClientOptions {
    ClientOptions::new()
        .client_name(name)
        .experimental_api(true)
        .channel_capacity(1024)
        .request_timeout(Some(Duration::from_secs(30)))
        .reconnect(
            ReconnectPolicy::new()
                .first_backoff(Duration::from_millis(50))
                .max_backoff(Duration::from_millis(500))
                .max_attempts(400),
        )
}

/// A client straight to a server (not through its proxy), without reconnect: the soak's own
/// checks.
pub(crate) async fn direct_client(address: SocketAddr, name: &str) -> Client {
    let options = ClientOptions::new()
        .client_name(name)
        .experimental_api(true)
        .request_timeout(Some(Duration::from_secs(60)))
        .reconnect(ReconnectPolicy::disabled());
    let target = WebSocketTarget::new(format!("ws://{address}"));
    Client::start(Transport::WebSocket(target), options)
        .await
        .expect("a websocket client starts without connecting")
}

/// A seed of its own for each worker, drawn from the run's.
fn worker_seed(seed: u64, salt: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(salt.wrapping_mul(0xBF58_476D_1CE4_E5B9))
}

fn create(dir: &Path) -> Result<(), SoakError> {
    std::fs::create_dir_all(dir).map_err(|source| SoakError::Io {
        what: format!("create {}", dir.display()),
        source,
    })
}

/// Copies the SQLite store out of the home (a tmpfs, unmounted at the end) into `logs`, for a
/// failed run's inspection.
fn keep_store(home: &Path, logs: &Path) {
    for name in ["threads.sqlite", "threads.sqlite-wal", "threads.sqlite-shm"] {
        let _ = std::fs::copy(home.join(name), logs.join(name));
    }
}

/// Runs one phase to its end and reports.
pub(crate) async fn run(config: PhaseConfig) -> Result<PhaseReport, SoakError> {
    let name = config.store.name();
    let dir = config.root.join(name);
    let home = dir.join("home");
    let logs = dir.join("logs");
    let work = dir.join("work");
    create(&logs)?;
    create(&work)?;
    let mut notes = Vec::new();
    let (tmpfs, postgres) = match config.store {
        Store::Sqlite => match Tmpfs::mount(&home) {
            Ok(tmpfs) => (Some(Arc::new(tmpfs)), None),
            Err(reason) => {
                notes.push(format!(
                    "the home is not on a tmpfs ({reason}): the disk-full fault is skipped"
                ));
                create(&home)?;
                (None, None)
            }
        },
        Store::Postgres => {
            create(&home)?;
            let postgres = tokio::task::spawn_blocking(Postgres::start)
                .await
                .expect("the cluster start does not panic")
                .map_err(|reason| SoakError::Postgres { reason })?;
            (None, Some(Arc::new(postgres)))
        }
    };
    let spec = ServerSpec {
        binary: config.binary.clone(),
        home,
        store_url: postgres.as_ref().map(|pg| pg.url().to_owned()),
        logs: logs.clone(),
        run: format!("{}/{name}", config.run),
    };
    let shared = Shared {
        ledger: Arc::new(Mutex::new(Ledger::default())),
        disturbances: Arc::new(Disturbances::default()),
        violations: Arc::new(Violations::default()),
        counters: Arc::new(Counters::default()),
    };
    let servers = match config.store {
        Store::Sqlite => 1,
        Store::Postgres => 2,
    };
    let targets = Targets::default();
    let mut slots = Vec::new();
    for index in 0..servers {
        let server_name = format!("ws{index}");
        let server = WsServer::start(&spec, &server_name, 1).await?;
        let proxy = Proxy::start(server.address())
            .await
            .map_err(|source| SoakError::Io {
                what: "start the proxy".into(),
                source,
            })?;
        targets.set_server(&server_name, Some(server.pid()));
        let (at, _) = watch::channel((1, Some(server.address())));
        slots.push(Slot {
            name: server_name,
            server,
            life: 1,
            proxy,
            at,
        });
    }
    let monitor = Monitor::start(targets.clone());
    let (stop, stopped) = watch::channel(false);
    let cwd = work.display().to_string();

    let mut probes = Vec::new();
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    for slot in &slots {
        probes.push(tokio::spawn(probe::run(
            slot.at.subscribe(),
            shared.counters.clone(),
            stopped.clone(),
        )));
        let watcher = Watcher {
            name: slot.name.clone(),
            proxy: slot.proxy.address(),
            server: slot.at.subscribe(),
            violations: shared.violations.clone(),
            counters: shared.counters.clone(),
        };
        tasks.push(tokio::spawn(watcher.run(stopped.clone())));
    }
    let mut clients = Vec::new();
    for (index, slot) in slots.iter().enumerate() {
        for n in 0..WS_WORKERS {
            let worker_name = format!("{}-{n}", slot.name);
            let target = WebSocketTarget::new(format!("ws://{}", slot.proxy.address()));
            let client = Client::start(Transport::WebSocket(target), worker_options(&worker_name))
                .await
                .expect("a websocket client starts without connecting");
            clients.push(client.clone());
            let worker = Worker {
                rng: StdRng::seed_from_u64(worker_seed(config.seed, (index * 16 + n) as u64)),
                name: worker_name,
                scope: Scope::Server(index),
                client,
                cwd: cwd.clone(),
                shared: shared.clone(),
            };
            tasks.push(tokio::spawn(worker.run(stopped.clone())));
        }
    }
    let mut stdio = Vec::new();
    for index in 0..STDIO_WORKERS {
        let owner = format!("stdio{index}");
        let command = spec.stdio_command(&owner);
        let client = Client::start(Transport::Child(command), worker_options(&owner))
            .await
            .expect("a child client starts without spawning");
        client.connect().await.map_err(|error| SoakError::Server {
            name: owner.clone(),
            reason: format!("the stdio server did not start: {error}"),
        })?;
        targets.add_stdio(&owner, client.clone());
        clients.push(client.clone());
        stdio.push((owner.clone(), client.clone()));
        let worker = Worker {
            rng: StdRng::seed_from_u64(worker_seed(config.seed, 1000 + index as u64)),
            name: owner,
            scope: Scope::Stdio(index),
            client,
            cwd: cwd.clone(),
            shared: shared.clone(),
        };
        tasks.push(tokio::spawn(worker.run(stopped.clone())));
    }

    let mut phase = Phase {
        spec,
        slots,
        stdio,
        tmpfs,
        postgres,
        targets,
        shared: shared.clone(),
        orphan_times: Vec::new(),
        notes,
        work,
        last_check: 0,
        check_rng: StdRng::seed_from_u64(worker_seed(config.seed, 2000)),
    };
    let setup = Setup {
        servers,
        stdio_clients: STDIO_WORKERS,
        tmpfs: phase.tmpfs.is_some(),
        postgres: phase.postgres.is_some(),
    };
    let mut rng = StdRng::seed_from_u64(worker_seed(config.seed, config.store as u64 + 7));
    let faults = schedule::schedule(&mut rng, config.length, &setup, &config.faults);
    println!(
        "soak: phase {name}: {} s, {} server(s), {} stdio client(s), {} faults scheduled",
        config.length.as_secs(),
        servers,
        STDIO_WORKERS,
        faults.len()
    );
    let began = Instant::now();
    for fault in &faults {
        phase.wait_until(began + fault.at).await?;
        if began.elapsed() > config.length {
            Counters::bump(
                &shared.counters.skipped,
                format!("{}: the phase ended first", fault.kind.name()),
            );
            continue;
        }
        phase.inject(fault, began).await?;
    }
    phase.wait_until(began + config.length).await?;

    let _ = stop.send(true);
    for task in tasks {
        if tokio::time::timeout(STOP_LIMIT, task).await.is_err() {
            shared
                .violations
                .add(format!("a worker did not stop within {STOP_LIMIT:?}"));
        }
    }
    let mut probe_samples = Vec::new();
    for (index, task) in probes.into_iter().enumerate() {
        let samples = task.await.unwrap_or_default();
        let down = shared.disturbances.down(index, Instant::now());
        probe_samples.push((samples, down));
    }
    let mut reconnects = (0, 0, 0, 0);
    for client in &clients {
        let stats = client.reconnect_stats();
        reconnects.0 += stats.reconnects;
        reconnects.1 += stats.replayed_events;
        reconnects.2 += stats.duplicates_dropped;
        reconnects.3 += stats.gaps;
    }
    let mut loaded = Vec::new();
    for index in 0..phase.slots.len() {
        phase.check_ledger(index, "at the end", true).await;
        loaded.push((
            phase.slots[index].name.clone(),
            phase.loaded_threads(index).await,
        ));
    }
    for client in &clients {
        client.close().await;
    }
    drop(clients);
    phase.stdio.clear();
    phase.shut_down().await;
    if !shared.violations.all().is_empty() {
        keep_store(&phase.spec.home, &logs);
    }
    let lives = monitor.finish().await;
    let _ = std::fs::write(logs.join("monitor.csv"), super::monitor::csv(&lives));
    let ledger = lock(&shared.ledger).size();
    Ok(PhaseReport {
        name,
        length: config.length,
        counters: shared.counters.clone(),
        lives,
        probes: probe_samples,
        orphan_times: phase.orphan_times.clone(),
        ledger,
        loaded,
        reconnects,
        violations: shared.violations.all(),
        notes: phase.notes.clone(),
    })
}

impl Phase {
    /// Waits until `deadline`, restarting (and reporting) any server that exits by itself
    /// meanwhile.
    async fn wait_until(&mut self, deadline: Instant) -> Result<(), SoakError> {
        loop {
            for index in 0..self.slots.len() {
                if let Some(status) = self.slots[index].server.exited() {
                    self.shared.violations.add(format!(
                        "{} (life {}) exited by itself ({status}); see its log",
                        self.slots[index].name, self.slots[index].life
                    ));
                    let window = self
                        .shared
                        .disturbances
                        .begin(Scope::Server(index), FaultKind::KillServer);
                    self.mark_down(index);
                    self.restart(index).await?;
                    self.shared.disturbances.end(window);
                    self.check_ledger(index, "after an unplanned restart", false)
                        .await;
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            tokio::time::sleep((deadline - now).min(Duration::from_millis(500))).await;
        }
    }

    /// Marks server `index` down: a new life begins, and until it listens the proxy refuses
    /// connections and the probe and the monitor leave it alone.
    pub(crate) fn mark_down(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        slot.life += 1;
        slot.at.send_replace((slot.life, None));
        slot.proxy.retarget(None);
        self.targets.set_server(&slot.name, None);
    }

    /// Starts the new life of server `index` (after [`Self::mark_down`]) on the same store and
    /// points the proxy, the probe and the monitor at it. A server that does not come back
    /// ends the phase: nothing after it could be judged.
    pub(crate) async fn restart(&mut self, index: usize) -> Result<(), SoakError> {
        let slot = &mut self.slots[index];
        slot.server = WsServer::start(&self.spec, &slot.name, slot.life).await?;
        slot.proxy.retarget(Some(slot.server.address()));
        slot.at
            .send_replace((slot.life, Some(slot.server.address())));
        self.targets.set_server(&slot.name, Some(slot.server.pid()));
        Ok(())
    }

    /// Reads acknowledged threads back through server `index` (`all`, or those changed since
    /// the previous read-back and a sample of the others) and reports what is missing or
    /// differs; returns how many turns told `failed` the store still holds `inProgress`.
    pub(crate) async fn check_ledger(&mut self, index: usize, when: &str, all: bool) -> usize {
        let ledger = lock(&self.shared.ledger).clone();
        let selection = if all {
            Selection::All
        } else {
            Selection::Recent {
                since: self.last_check,
                sample: CHECK_SAMPLE,
                rng: &mut self.check_rng,
            }
        };
        let address = self.slots[index].server.address();
        let client = direct_client(address, "soak-ledger").await;
        let outcome = ledger
            .check(&client, &self.shared.counters, selection)
            .await;
        client.close().await;
        self.last_check = ledger.changes();
        self.shared
            .counters
            .pending_failed
            .fetch_max(outcome.pending as u64, std::sync::atomic::Ordering::Relaxed);
        for problem in outcome.problems {
            self.shared.violations.add(format!(
                "ledger read through {} {when}: {problem}",
                self.slots[index].name
            ));
        }
        outcome.pending
    }

    /// How many threads server `index` has loaded (`thread/loaded/list`); 0 if it cannot say.
    async fn loaded_threads(&self, index: usize) -> usize {
        let client = direct_client(self.slots[index].server.address(), "soak-loaded").await;
        self.shared.counters.request();
        let params = ThreadLoadedListParams::new().limit(1000);
        let count = client
            .list_loaded_threads(params)
            .await
            .map_or(0, |loaded| loaded.data.len());
        client.close().await;
        count
    }

    /// Stops every websocket server (SIGTERM: each must exit 0 within its budget), then
    /// checks that nothing any server of the phase started is still running.
    async fn shut_down(&mut self) {
        for slot in &mut self.slots {
            match slot.server.terminate().await {
                Ok(status) if status.success() => {}
                Ok(status) => self.shared.violations.add(format!(
                    "{} exited {status} on SIGTERM; a clean shutdown exits 0",
                    slot.name
                )),
                Err(error) => self
                    .shared
                    .violations
                    .add(format!("{}: {error}", slot.name)),
            }
        }
        let prefix = self.spec.owner_mark("");
        let prefix = prefix.trim_end_matches('/');
        let deadline = Instant::now() + ORPHAN_BOUND;
        loop {
            let left = servers::leftovers(prefix);
            if left.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                for (pid, what) in servers::reap(left) {
                    self.shared.violations.add(format!(
                        "still running {ORPHAN_BOUND:?} after every server of the phase ended \
                         (killed now): pid {pid} {what}"
                    ));
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Injects one fault (`faults.rs`) and reports it.
    async fn inject(&mut self, fault: &Fault, began: Instant) -> Result<(), SoakError> {
        let at = began.elapsed().as_secs_f64();
        let outcome = self.execute(fault).await?;
        match outcome {
            Ok(what) => {
                Counters::bump(&self.shared.counters.faults, fault.kind);
                println!("soak: {at:7.1} s  {:<22} {what}", fault.kind.name());
            }
            Err(reason) => {
                Counters::bump(
                    &self.shared.counters.skipped,
                    format!("{}: {reason}", fault.kind.name()),
                );
                println!(
                    "soak: {at:7.1} s  {:<22} skipped: {reason}",
                    fault.kind.name()
                );
            }
        }
        Ok(())
    }
}
