//! [`PostgresThreadStore`]: threads in PostgreSQL, shared by any number of app-servers
//! (issue 20, docs/scaling.md).
//!
//! Choices, and why:
//! - tokio-postgres behind a deadpool pool. Statements are prepared once per connection
//!   (`prepare_cached`); a connection the database terminated is found closed when it comes
//!   back from the pool and replaced. A transaction whose connection is lost before its
//!   `COMMIT` (the database rolled it back) is run again from the start on fresh connections
//!   while the database cannot be reached, for up to a third of the lease TTL (at most
//!   10 s), so `pg_terminate_backend` or a restart of the database shorter than that costs
//!   no turn. A commit whose answer is lost is settled by asking the database what became of
//!   the transaction (`transaction`): committed is a success, rolled back is run again.
//! - Schema migrations are the numbered SQL files in `crates/store/migrations/postgres`,
//!   applied in order inside one transaction and recorded in `tandem_schema_migrations`;
//!   servers starting together serialize on a transaction-scoped advisory lock (only the
//!   migration does: the writer lease does not use advisory locks, which vanish with their
//!   connection and carry no fencing token).
//! - The writer lease is a row per thread (`thread_leases`): owner, an epoch that only grows,
//!   expiry on the database's clock (`now()`). Every write transaction on a thread starts with
//!   a compare-and-set on that row (owner, epoch, not expired); no row updated means the lease
//!   is gone and the transaction rolls back. The update also takes the row lock, so a takeover
//!   (which bumps the epoch under the same lock) and a write are strictly ordered: a write
//!   either commits before the takeover or is refused after it.
//! - Connections carry `idle_in_transaction_session_timeout` = the lease TTL, so a server that
//!   is paused (SIGSTOP, a long GC, a VM migration) in the middle of a transaction cannot hold
//!   the lease row's lock past the TTL and block the server taking over.
//! - A turn left `inProgress` by a writer that died is closed as interrupted when the next
//!   server takes the lease (not when a store opens, as SQLite does: another server may be
//!   running that turn right now).
//! - Values are stored as in SQLite (JSON text of the protocol types, wire spellings), so the
//!   decoding code is shared.
//!
//! Files: this one holds the connection, the pool, migrations and the lease check every
//! write starts with; `transaction` the transactions, their retries and lost
//! commit answers; `leases` taking, renewing and releasing leases;
//! `statements` the queries of each store operation, `store_impl` the [`ThreadStore`]
//! implementation, `checkpoints` the file checkpoints.

mod checkpoints;
#[cfg(test)]
mod commit_tests;
mod handoff;
mod idempotency;
mod leases;
#[cfg(test)]
mod plan_tests;
mod statements;
mod store_impl;
mod transaction;

use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use deadpool_postgres::{
    ClientWrapper, Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, TimeoutType,
};
use tokio_postgres::config::{Host, SslMode};

use super::StoreError;
use super::lease::{Fence, LeaseBook, LeaseSettings};
use transaction::{Reconnect, Tx};

/// The migrations, in order: (version, file text). A database records the versions it has.
const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        include_str!("../../migrations/postgres/0001_threads.sql"),
    ),
    (
        2,
        include_str!("../../migrations/postgres/0002_writer_leases.sql"),
    ),
    (
        3,
        include_str!("../../migrations/postgres/0003_idempotency_keys.sql"),
    ),
    (
        4,
        include_str!("../../migrations/postgres/0004_file_checkpoints.sql"),
    ),
    (
        5,
        include_str!("../../migrations/postgres/0005_item_times.sql"),
    ),
];

/// The running turns of each thread, in a partial index: taking a thread's lease closes the
/// turns its previous writer left `inProgress` (`leases::close_unfinished_turns`), and without
/// it that read walked every turn of the thread, so every cold resume cost its history
/// (issue 31: 24 ms at 100 000 turns).
pub(super) const UNFINISHED_TURNS_INDEX: &str =
    "CREATE INDEX turns_unfinished ON turns (thread_id, id) WHERE status = 'inProgress'";

/// Serializes migrations of servers that start together (a transaction-scoped lock, released
/// at commit). The number is arbitrary and only has to be Tandem's own.
const MIGRATION_LOCK: i64 = 0x7461_6e64_656d;

/// Most connections one server keeps open.
const POOL_SIZE: usize = 16;

/// How long opening a connection or waiting for a free one may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest an operation goes on trying while the database cannot be reached (see
/// [`Reconnect`]); a third of the lease TTL when that is shorter.
const MAX_RECONNECT_WINDOW: Duration = Duration::from_secs(10);

/// The compare-and-set every write transaction on a leased thread starts with.
const FENCE: &str = "UPDATE thread_leases SET epoch = epoch \
     WHERE thread_id = $1 AND owner = $2 AND epoch = $3 AND expires_at > now()";

/// What a write on a thread this server does not lease checks: that no other live server
/// holds a live lease. The row lock keeps a takeover from landing before this transaction
/// ends; `FOR UPDATE` rather than `FOR SHARE` because a lease of a server that is gone is
/// released in the same transaction, and two shared locks both upgrading would deadlock.
const FOREIGN_LEASE: &str = "SELECT owner, (extract(epoch FROM expires_at) * 1000)::bigint \
     FROM thread_leases WHERE thread_id = $1 AND owner <> $2 AND expires_at > now() FOR UPDATE";

/// A [`super::ThreadStore`] in a PostgreSQL database.
#[derive(Clone)]
pub struct PostgresThreadStore {
    pool: Pool,
    leases: Arc<LeaseBook>,
    /// Idempotency-key claims of one scope take turns here before they take a connection
    /// (see `idempotency`).
    key_scopes: Arc<idempotency::ScopeTurns>,
    /// The connection outside the pool that hears handoff requests and releases (`handoff`).
    handoffs: Arc<handoff::Handoffs>,
}

impl std::fmt::Debug for PostgresThreadStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresThreadStore")
            .field("owner", &self.leases.settings.owner)
            .finish_non_exhaustive()
    }
}

impl PostgresThreadStore {
    /// Connects to the database at `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`,
    /// `host=/socket/dir` for a unix socket; TLS through rustls with `sslmode=require`, or
    /// when the server offers it under the default `prefer`) and applies the migrations this
    /// build knows.
    pub async fn connect(url: &str, settings: LeaseSettings) -> Result<Self, StoreError> {
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|error| StoreError::PostgresUrl(error.to_string()))?;
        if config.get_dbname().is_none() && config.get_user().is_none() {
            return Err(StoreError::PostgresUrl(
                "it names neither a database nor a user".to_owned(),
            ));
        }
        // Lets an operator (and the failover tests) find this server's backends.
        config.application_name(format!("tandem/{}", std::process::id()));
        // No parallel plans: every read of the store is a page through an index, and a
        // parallel plan (which PostgreSQL picks for the generic plan of an items page once
        // the thread has some 100 000 turns) starts a worker per execution: 12-19 ms instead
        // of 0.2 ms (issue 31).
        let options = format!(
            "{} -c idle_in_transaction_session_timeout={} -c max_parallel_workers_per_gather=0",
            config.get_options().unwrap_or_default(),
            settings.ttl_millis().max(1)
        );
        config.options(options.trim());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let only_sockets = config
            .get_hosts()
            .iter()
            .all(|host| matches!(host, Host::Unix(_)));
        let owner = settings.owner.clone();
        let (manager, handoffs) = if only_sockets || config.get_ssl_mode() == SslMode::Disable {
            let handoffs = Arc::new(handoff::Handoffs::start(
                config.clone(),
                tokio_postgres::NoTls,
                owner,
            ));
            let manager = Manager::from_config(config, tokio_postgres::NoTls, manager_config);
            (manager, handoffs)
        } else {
            let tls = tls_connector()?;
            let handoffs = Arc::new(handoff::Handoffs::start(config.clone(), tls.clone(), owner));
            (Manager::from_config(config, tls, manager_config), handoffs)
        };
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .create_timeout(Some(CONNECT_TIMEOUT))
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|error| StoreError::PostgresPool(error.to_string()))?;
        let store = Self {
            pool,
            leases: Arc::new(LeaseBook::new(settings)),
            key_scopes: Arc::default(),
            handoffs,
        };
        store.migrate().await?;
        store.release_dead_owners().await;
        tracing::debug!(owner = %store.leases.settings.owner, "PostgreSQL thread store opened");
        Ok(store)
    }

    /// A pooled connection. The wait for one is bounded: a request that finds every
    /// connection busy for [`CONNECT_TIMEOUT`] fails with [`StoreError::PostgresPoolBusy`]
    /// rather than waiting on (a statement stuck in the database must not hold every request
    /// of this server hostage, the lease renewal included).
    async fn client(&self) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(|error| match error {
            PoolError::Timeout(TimeoutType::Wait) => StoreError::PostgresPoolBusy {
                connections: self.pool.status().max_size,
                waited_ms: u64::try_from(CONNECT_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
            },
            other => StoreError::PostgresPool(other.to_string()),
        })
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        transaction
            .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        transaction
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS tandem_schema_migrations (\
                 version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
            )
            .await?;
        let found: i64 = transaction
            .query_one(
                "SELECT COALESCE(MAX(version), 0) FROM tandem_schema_migrations",
                &[],
            )
            .await?
            .get(0);
        let supported = MIGRATIONS.last().map_or(0, |(version, _)| *version);
        if found > supported {
            return Err(StoreError::UnsupportedPostgresSchema { found, supported });
        }
        for (version, sql) in MIGRATIONS.iter().filter(|(version, _)| *version > found) {
            transaction.batch_execute(sql).await?;
            transaction
                .execute(
                    "INSERT INTO tandem_schema_migrations (version) VALUES ($1)",
                    &[version],
                )
                .await?;
            tracing::info!(version, "migrated the PostgreSQL thread store");
        }
        // Outside the numbered migrations, as SQLite's is, so that a server of an earlier
        // version still opens the database. Looked up first: `CREATE INDEX IF NOT EXISTS`
        // locks the table against writes even when the index exists.
        let indexed: bool = transaction
            .query_one("SELECT to_regclass('turns_unfinished') IS NOT NULL", &[])
            .await?
            .get(0);
        if !indexed {
            transaction.batch_execute(UNFINISHED_TURNS_INDEX).await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    /// Opens a read transaction: one snapshot for every statement in it.
    pub(super) async fn read(&self) -> Result<Tx, StoreError> {
        let client = self.client().await?;
        client
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await?;
        Ok(Tx::read(client))
    }

    /// How long an operation goes on trying while the database cannot be reached: a third of
    /// the lease TTL (one renewal period), at most [`MAX_RECONNECT_WINDOW`].
    fn reconnect_window(&self) -> Duration {
        self.leases
            .settings
            .renew_period()
            .min(MAX_RECONNECT_WINDOW)
    }

    /// Runs `body` in a write transaction ([`Self::write`]: on `thread_id`, the lease is
    /// checked first), committed when `body` succeeds and rolled back when it fails. A
    /// transaction that loses its connection before the commit is run again from the start
    /// (see [`Reconnect`]), and so is one whose commit answer was lost and which the database
    /// then says it rolled back (`transaction`: one that committed is not run again).
    pub(super) async fn in_write<T>(
        &self,
        thread_id: Option<&str>,
        body: impl AsyncFnOnce(&ClientWrapper) -> Result<T, StoreError> + Clone,
    ) -> Result<T, StoreError> {
        let mut reconnect = Reconnect::new(self.reconnect_window());
        loop {
            let tx = self.write_once(thread_id, &mut reconnect).await?;
            let Some(tx) = tx else { continue };
            // A copy per try: the body only borrows what it captured.
            let result = body.clone()(tx.db()).await;
            match reconnect.pause_for(&result) {
                Some(pause) => {
                    drop(tx);
                    tokio::time::sleep(pause).await;
                }
                None => {
                    let finished = tx.finish(result).await;
                    // A lost connection here is a commit the database rolled back: nothing
                    // was written.
                    match reconnect.pause_for(&finished) {
                        Some(pause) => tokio::time::sleep(pause).await,
                        None => return finished,
                    }
                }
            }
        }
    }

    /// Runs `body` in a read transaction ([`Self::read`]: one snapshot), again on a fresh
    /// connection while the database cannot be reached (see [`Reconnect`]).
    pub(super) async fn in_read<T>(
        &self,
        body: impl AsyncFnOnce(&ClientWrapper) -> Result<T, StoreError> + Clone,
    ) -> Result<T, StoreError> {
        let mut reconnect = Reconnect::new(self.reconnect_window());
        loop {
            let result = match self.read().await {
                Ok(tx) => {
                    let result = body.clone()(tx.db()).await;
                    tx.finish(result).await
                }
                Err(error) => Err(error),
            };
            match reconnect.pause_for(&result) {
                Some(pause) => tokio::time::sleep(pause).await,
                None => return result,
            }
        }
    }

    /// Runs `body` on a pooled connection outside a transaction, again on a fresh one while
    /// the database cannot be reached (see [`Reconnect`]). Only for a body that may run twice:
    /// reads, and single statements that may be repeated (a lost answer leaves it unknown
    /// whether the statement took effect).
    pub(super) async fn on_connection<T>(
        &self,
        body: impl AsyncFnOnce(&ClientWrapper) -> Result<T, StoreError> + Clone,
    ) -> Result<T, StoreError> {
        let mut reconnect = Reconnect::new(self.reconnect_window());
        loop {
            let result = match self.client().await {
                Ok(client) => body.clone()(&client).await,
                Err(error) => Err(error),
            };
            match reconnect.pause_for(&result) {
                Some(pause) => tokio::time::sleep(pause).await,
                None => return result,
            }
        }
    }

    /// Opens a write transaction and, for a write on `thread_id`, checks the writer lease
    /// first (see the module doc); while the database cannot be reached, tries again on fresh
    /// connections (see [`Reconnect`]).
    pub(super) async fn write(&self, thread_id: Option<&str>) -> Result<Tx, StoreError> {
        let mut reconnect = Reconnect::new(self.reconnect_window());
        loop {
            if let Some(tx) = self.write_once(thread_id, &mut reconnect).await? {
                return Ok(tx);
            }
        }
    }

    /// One try of [`Self::write`]: `None` after the pause when it is worth another.
    async fn write_once(
        &self,
        thread_id: Option<&str>,
        reconnect: &mut Reconnect,
    ) -> Result<Option<Tx>, StoreError> {
        let result = self.try_write(thread_id).await;
        match reconnect.pause_for(&result) {
            Some(pause) => {
                tokio::time::sleep(pause).await;
                Ok(None)
            }
            None => result.map(Some),
        }
    }

    async fn try_write(&self, thread_id: Option<&str>) -> Result<Tx, StoreError> {
        let fence = match thread_id {
            Some(thread_id) => Some((thread_id, self.leases.fence(thread_id)?)),
            None => None,
        };
        let client = self.client().await?;
        let tx = Tx::begin_write(client, &self.pool, self.reconnect_window()).await?;
        let owner = &self.leases.settings.owner;
        let checked = match fence {
            None => Ok(()),
            Some((thread_id, Fence::Epoch(epoch))) => {
                let statement = tx.db().prepare_cached(FENCE).await?;
                if tx
                    .db()
                    .execute(&statement, &[&thread_id, owner, &epoch])
                    .await?
                    == 0
                {
                    self.leases.lost(thread_id);
                    Err(StoreError::Fenced(thread_id.to_owned()))
                } else {
                    Ok(())
                }
            }
            Some((thread_id, Fence::NotHeld)) => {
                let statement = tx.db().prepare_cached(FOREIGN_LEASE).await?;
                match tx.db().query_opt(&statement, &[&thread_id, owner]).await? {
                    None => Ok(()),
                    Some(row) if self.leases.owner_is_gone(row.get(0)) => {
                        let holder: String = row.get(0);
                        leases::release_for_gone(tx.db(), &holder, Some(thread_id)).await?;
                        tracing::info!(thread = thread_id, previous = %holder, "released the lease of a server that is gone");
                        Ok(())
                    }
                    Some(row) => Err(StoreError::LeaseHeld {
                        thread_id: thread_id.to_owned(),
                        owner: row.get(0),
                        expires_at_ms: row.get(1),
                    }),
                }
            }
        };
        match checked {
            Ok(()) => Ok(tx),
            Err(error) => tx.finish(Err(error)).await,
        }
    }

    /// Times `count` empty write transactions, then `count` holding only the lease check of
    /// a leased thread: what the fence adds to every write (`cargo bench --bench stores`).
    #[doc(hidden)]
    pub async fn fence_statement_cost(
        &self,
        count: usize,
    ) -> Result<(Duration, Duration), StoreError> {
        let thread_id = super::new_id();
        self.acquire(&thread_id).await?;
        let began = Instant::now();
        for _ in 0..count {
            let tx = self.write(None).await?;
            tx.finish(Ok(())).await?;
        }
        let empty = began.elapsed();
        let began = Instant::now();
        for _ in 0..count {
            let tx = self.write(Some(&thread_id)).await?;
            tx.finish(Ok(())).await?;
        }
        let fenced = began.elapsed();
        self.release(&thread_id).await?;
        Ok((empty, fenced))
    }
}

/// rustls with the system's root certificates and the aws-lc-rs provider reqwest uses too.
fn tls_connector() -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for error in &found.errors {
        tracing::warn!(%error, "cannot load a system root certificate");
    }
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        tracing::warn!("no system root certificates: TLS connections to PostgreSQL will fail");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|error| StoreError::PostgresUrl(format!("TLS setup failed: {error}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ThreadStore;

    /// With every pooled connection held, requests (the lease renewal among them) fail within
    /// the bounded wait with an error that says what to do, and the store serves again once
    /// the connections come back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_busy_pool_fails_requests_after_the_bounded_wait_instead_of_hanging() {
        let Some(cluster) = tandem_test_support::postgres::PostgresCluster::shared() else {
            return;
        };
        let url = cluster.create_database();
        let store = PostgresThreadStore::connect(
            &url,
            LeaseSettings::for_this_process(Duration::from_secs(60)),
        )
        .await
        .expect("connect");
        let thread_id = crate::new_id();
        store.acquire(&thread_id).await.expect("lease");
        let mut held = Vec::new();
        for _ in 0..POOL_SIZE {
            held.push(store.read().await.expect("a free connection"));
        }
        let bound = CONNECT_TIMEOUT * 3;
        let (read, renewal) = tokio::time::timeout(
            bound,
            futures::future::join(store.get_thread(&thread_id), store.renew()),
        )
        .await
        .expect("the waits for a connection are bounded");
        for error in [
            read.expect_err("no connection"),
            renewal.expect_err("no connection"),
        ] {
            assert!(
                matches!(
                    error,
                    StoreError::PostgresPoolBusy {
                        connections: POOL_SIZE,
                        ..
                    }
                ),
                "{error}"
            );
            assert!(error.to_string().contains("pg_stat_activity"), "{error}");
            assert!(
                !error.is_lost_connection(),
                "a busy pool is not retried at once"
            );
        }
        for tx in held {
            tx.finish(Ok(())).await.expect("finish");
        }
        let renewal = tokio::time::timeout(bound, store.renew())
            .await
            .expect("bounded")
            .expect("the pool serves again");
        assert!(renewal.lost.is_empty(), "{renewal:?}");
        assert_eq!(
            tokio::time::timeout(bound, store.get_thread(&thread_id))
                .await
                .expect("bounded")
                .expect("read"),
            None
        );
    }

    /// Claims queued behind a scope's advisory lock (held here by another session, as by a
    /// claim of another server) wait without holding pooled connections: the server's other
    /// requests still get one. Before the claims took turns in the server first, every
    /// connection waited on the lock and the read failed with a busy pool.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn claims_waiting_for_their_scope_leave_the_pool_to_other_requests() {
        let Some(cluster) = tandem_test_support::postgres::PostgresCluster::shared() else {
            return;
        };
        let url = cluster.create_database();
        let store = PostgresThreadStore::connect(
            &url,
            LeaseSettings::for_this_process(Duration::from_secs(60)),
        )
        .await
        .expect("connect");
        let (other, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("another session");
        tokio::spawn(connection);
        other
            .execute(
                "SELECT pg_advisory_lock(hashtext('tandem idempotency scope ' || $1))",
                &[&"busy-scope"],
            )
            .await
            .expect("hold the scope's lock");
        let claims: Vec<_> = (0..POOL_SIZE * 2)
            .map(|n| {
                let store = store.clone();
                tokio::spawn(async move {
                    let record = crate::IdempotencyRecord {
                        scope: "busy-scope".to_owned(),
                        key: format!("k{n}"),
                        method: "turn/start".to_owned(),
                        fingerprint: format!("fp-{n}"),
                        result: serde_json::json!({"n": n}),
                        created_at: 1_000 + n as i64,
                    };
                    store.claim_key(&record).await
                })
            })
            .collect();
        // Every claim had the time to take a connection if it was going to.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let read = tokio::time::timeout(CONNECT_TIMEOUT * 3, store.get_thread("none"))
            .await
            .expect("bounded");
        assert!(matches!(read, Ok(None)), "{read:?}");
        other
            .execute(
                "SELECT pg_advisory_unlock(hashtext('tandem idempotency scope ' || $1))",
                &[&"busy-scope"],
            )
            .await
            .expect("release the scope's lock");
        for claim in claims {
            let claimed = tokio::time::timeout(CONNECT_TIMEOUT * 3, claim)
                .await
                .expect("bounded")
                .expect("task");
            assert_eq!(claimed.expect("claimed"), None);
        }
    }
}
