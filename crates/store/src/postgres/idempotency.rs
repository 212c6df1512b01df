//! Idempotency keys on PostgreSQL (issue 17, [`super::super::idempotency`]): the SQLite
//! store's rules in one write transaction each. Several servers may claim the same key at
//! once, so a claim inserts with `ON CONFLICT DO NOTHING` and reads the winner's record back
//! instead of checking first: exactly one claim stores its record.
//!
//! Claims in one scope are serialized by a transaction-scoped advisory lock on the scope: a
//! plain lock on rows that may not exist yet, released at commit (not a lease: nothing
//! outlives the transaction). Within one server they take turns first, before taking a
//! pooled connection ([`ScopeTurns`]): otherwise many claims on one scope would each hold a
//! connection while waiting for the advisory lock, use up the pool, and fail every other
//! request of the server (the lease renewal among them) with a busy pool.
//!
//! Keys are not fenced by the writer lease: they are not thread data, and a claim on a thread
//! this server does not own is answered by the lease check of the write that follows it.

use tokio_postgres::Row;

use super::super::{IdempotencyRecord, KEY_MAX_AGE_SECS, KEYS_PER_SCOPE, StoreError};
use super::PostgresThreadStore;
use crate::codec::{decode, encode};

const RECORD_COLUMNS: &str = "method, fingerprint, result, created_at";

/// How many claim queues a server keeps: scopes share them by hash, so memory stays fixed
/// however many scopes there are; two scopes in one queue only take turns needlessly.
const SCOPE_QUEUES: usize = 64;

/// Per-scope turns of this server's key claims, so that a scope's claims wait here rather
/// than on pooled connections.
pub(super) struct ScopeTurns {
    queues: Vec<tokio::sync::Mutex<()>>,
}

impl Default for ScopeTurns {
    fn default() -> Self {
        Self {
            queues: (0..SCOPE_QUEUES)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
        }
    }
}

impl ScopeTurns {
    fn queue(&self, scope: &str) -> &tokio::sync::Mutex<()> {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(scope);
        &self.queues[(hash % SCOPE_QUEUES as u64) as usize]
    }
}

/// `row` (the [`RECORD_COLUMNS`]) as the record of `key` in `scope`.
fn record_from_row(row: &Row, scope: &str, key: &str) -> Result<IdempotencyRecord, StoreError> {
    let result: String = row.get(2);
    Ok(IdempotencyRecord {
        scope: scope.to_owned(),
        key: key.to_owned(),
        method: row.get(0),
        fingerprint: row.get(1),
        result: decode(&result, || {
            format!("the result remembered for key {key} in {scope}")
        })?,
        created_at: row.get(3),
    })
}

impl PostgresThreadStore {
    /// See [`super::super::ThreadStore::claim_idempotency_key`].
    pub(super) async fn claim_key(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let result_text = encode(&record.result, "idempotency result")?;
        // Each claim before it holds a connection for a few statements only, so the wait is
        // bounded by the pool's.
        let _turn = self.key_scopes.queue(&record.scope).lock().await;
        self.in_write(None, async |db| {
            // Claims of one scope take turns (until commit): two at once would each count the
            // scope's keys before the other's insert and keep one too many.
            db.execute(
                "SELECT pg_advisory_xact_lock(hashtext('tandem idempotency scope ' || $1))",
                &[&record.scope],
            )
            .await?;
            db.execute(
                "DELETE FROM idempotency_keys WHERE created_at < $1",
                &[&(record.created_at - KEY_MAX_AGE_SECS)],
            )
            .await?;
            let inserted = db
                .execute(
                    "INSERT INTO idempotency_keys \
                     (scope, key, method, fingerprint, result, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (scope, key) DO NOTHING",
                    &[
                        &record.scope,
                        &record.key,
                        &record.method,
                        &record.fingerprint,
                        &result_text,
                        &record.created_at,
                    ],
                )
                .await?;
            if inserted == 0 {
                let row = db
                    .query_one(
                        &format!(
                            "SELECT {RECORD_COLUMNS} FROM idempotency_keys \
                             WHERE scope = $1 AND key = $2"
                        ),
                        &[&record.scope, &record.key],
                    )
                    .await?;
                return Ok(Some(record_from_row(&row, &record.scope, &record.key)?));
            }
            // The scope keeps its newest keys, this one included.
            db.execute(
                "DELETE FROM idempotency_keys WHERE scope = $1 AND key IN \
                 (SELECT key FROM idempotency_keys WHERE scope = $1 \
                  ORDER BY created_at DESC, key DESC OFFSET $2)",
                &[&record.scope, &(KEYS_PER_SCOPE as i64)],
            )
            .await?;
            Ok(None)
        })
        .await
    }

    /// See [`super::super::ThreadStore::idempotency_key`].
    pub(super) async fn read_key(
        &self,
        scope: &str,
        key: &str,
        now: i64,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.in_read(async |db| {
            db.query_opt(
                &format!(
                    "SELECT {RECORD_COLUMNS} FROM idempotency_keys \
                         WHERE scope = $1 AND key = $2 AND created_at >= $3"
                ),
                &[&scope, &key, &(now - KEY_MAX_AGE_SECS)],
            )
            .await?
            .map(|row| record_from_row(&row, scope, key))
            .transpose()
        })
        .await
    }

    /// See [`super::super::ThreadStore::release_idempotency_key`].
    pub(super) async fn release_key(&self, scope: &str, key: &str) -> Result<(), StoreError> {
        self.in_write(None, async |db| {
            db.execute(
                "DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2",
                &[&scope, &key],
            )
            .await?;
            Ok(())
        })
        .await
    }
}
