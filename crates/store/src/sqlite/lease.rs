//! The writer lease on SQLite (issue 20): the same rules as on PostgreSQL (docs/scaling.md),
//! for a home shared by several server processes on one machine. The lease row lives in the
//! thread database (schema version 4); expiry is on SQLite's clock, the machine's, which every
//! process sharing the file reads. Every write on a thread checks the epoch first, inside the
//! group-commit transaction (`BEGIN IMMEDIATE`, which already serializes the processes), and
//! a refused check rolls back that write's savepoint only.
//!
//! A lease whose owner is gone (`liveness`: its lock file in the home is free) is free: taking
//! the lease, or a write on the thread by a server that does not lease it, releases it on the
//! owner's behalf first, and opening the store releases every lease of the dead owners whose
//! lock files it finds, then removes those files.

use std::sync::Arc;
use std::time::Instant;

use rusqlite::{Connection, OptionalExtension, params};
use tandem_protocol::{Turn, TurnError};

use super::SqliteThreadStore;
use crate::codec::encode;
use crate::lease::{Fence, LeaseBook, LeaseRenewal, LeaseSettings};
use crate::liveness::{self, OWNERS_DIR};
use crate::{INTERRUPTED_BY_STOP, StoreError, ThreadRecord, ThreadStore};

/// Schema version 4: the lease table (see the PostgreSQL migration
/// `0002_writer_leases.sql`, whose columns these are; `expires_at` in unix milliseconds).
pub(super) const SCHEMA_V4: &str = "
CREATE TABLE thread_leases (
    thread_id            TEXT PRIMARY KEY NOT NULL,
    owner                TEXT NOT NULL,
    epoch                INTEGER NOT NULL,
    expires_at           INTEGER NOT NULL,
    handoff_requested_by TEXT
) STRICT;
";

/// SQLite's clock in unix milliseconds (fixed for the duration of one statement).
pub(super) const NOW_MS: &str = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

impl SqliteThreadStore {
    /// Opens the store in `tandem_home` keeping writer leases with `settings`, so that several
    /// server processes can share the home (see [`crate::ThreadStore::acquire_lease`]). The
    /// owner's lock file goes to the home's `lease-owners` directory, whatever
    /// `settings.owner_dir` says: the servers sharing the home look there.
    pub async fn open_with_leases(
        tandem_home: impl Into<std::path::PathBuf>,
        mut settings: LeaseSettings,
    ) -> Result<Self, StoreError> {
        let tandem_home = tandem_home.into();
        settings.owner_dir = Some(tandem_home.join(OWNERS_DIR));
        let mut store = Self::open(tandem_home).await?;
        let leases = Arc::new(LeaseBook::new(settings));
        store.leases = Some(Arc::clone(&leases));
        store.release_dead_owners(&leases).await;
        Ok(store)
    }

    /// Releases every live lease of the dead owners whose lock files are in the home (on
    /// open, then at most once a TTL while leases are renewed), then removes their files.
    async fn release_dead_owners(&self, leases: &LeaseBook) {
        let dead = leases.dead_owners_due();
        if dead.is_empty() {
            return;
        }
        let owners: Vec<String> = dead.iter().map(|dead| dead.owner.clone()).collect();
        let released = self
            .write(move |connection| {
                let mut released = 0;
                for owner in &owners {
                    released += release_for_gone(connection, owner, None)?.len();
                }
                Ok(released)
            })
            .await;
        liveness::after_release(dead, released);
    }

    /// [`SqliteThreadStore::write`] for a write on `thread_id`: checks the writer lease first
    /// when this store keeps leases.
    pub(super) async fn write_thread<T, F>(
        &self,
        thread_id: String,
        operation: F,
    ) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let Some(leases) = self.leases.clone() else {
            return self.write(operation).await;
        };
        let fence = leases.fence(&thread_id)?;
        let checked = thread_id.clone();
        let book = Arc::clone(&leases);
        let result = self
            .write(move |connection| {
                check_fence(connection, &checked, &book, fence)?;
                operation(connection)
            })
            .await;
        if let Err(StoreError::Fenced(_)) = &result {
            leases.lost(&thread_id);
        }
        result
    }

    pub(super) async fn acquire(&self, thread_id: &str) -> Result<(), StoreError> {
        let Some(leases) = self.leases.clone() else {
            return Ok(());
        };
        let sent = Instant::now();
        let id = thread_id.to_owned();
        let book = Arc::clone(&leases);
        let acquired = self
            .write(move |connection| acquire_in(connection, &id, &book))
            .await?;
        match acquired {
            Ok(epoch) => {
                leases.granted(thread_id, epoch, leases.deadline_from(sent));
                Ok(())
            }
            Err((owner, expires_at_ms)) => Err(StoreError::LeaseHeld {
                thread_id: thread_id.to_owned(),
                owner,
                expires_at_ms,
            }),
        }
    }

    /// See [`crate::ThreadStore::create_leased_thread`]: the thread's rows and its lease in
    /// one write (one commit).
    pub(super) async fn create_leased(
        &self,
        thread: &ThreadRecord,
        history: &[Turn],
    ) -> Result<(), StoreError> {
        let Some(leases) = self.leases.clone() else {
            return self.create_thread(thread, history).await;
        };
        let sent = Instant::now();
        let thread = thread.clone();
        let history = history.to_vec();
        let id = thread.id.clone();
        let book = Arc::clone(&leases);
        let epoch = self
            .write(move |connection| {
                super::statements::insert_new_thread(connection, &thread, &history)?;
                // Refused (a live lease elsewhere on a thread that did not exist: an id
                // chosen by a client) rolls the thread back with it.
                acquire_in(connection, &thread.id, &book)?.map_err(|(owner, expires_at_ms)| {
                    StoreError::LeaseHeld {
                        thread_id: thread.id.clone(),
                        owner,
                        expires_at_ms,
                    }
                })
            })
            .await?;
        leases.granted(&id, epoch, leases.deadline_from(sent));
        Ok(())
    }

    pub(super) async fn release(&self, thread_id: &str) -> Result<(), StoreError> {
        let Some(leases) = self.leases.clone() else {
            return Ok(());
        };
        let Some(epoch) = leases.forget(thread_id) else {
            return Ok(());
        };
        let id = thread_id.to_owned();
        let owner = leases.settings.owner.clone();
        self.write(move |connection| {
            connection.execute(
                &format!(
                    "UPDATE thread_leases SET expires_at = {NOW_MS}, handoff_requested_by = NULL \
                     WHERE thread_id = ?1 AND owner = ?2 AND epoch = ?3"
                ),
                params![id, owner, epoch],
            )?;
            Ok(())
        })
        .await
    }

    pub(super) async fn renew(&self) -> Result<LeaseRenewal, StoreError> {
        let Some(leases) = self.leases.clone() else {
            return Ok(LeaseRenewal::default());
        };
        self.release_dead_owners(&leases).await;
        let asked = leases.live();
        if asked.is_empty() {
            return Ok(LeaseRenewal {
                lost: leases.after_failed_renewal(),
                handoff_requested: Vec::new(),
            });
        }
        let sent = Instant::now();
        let owner = leases.settings.owner.clone();
        let ttl = leases.settings.ttl_millis();
        let sent_asked = asked.clone();
        let rows = self
            .write(move |connection| {
                let mut statement = connection.prepare_cached(&format!(
                    "UPDATE thread_leases SET expires_at = {NOW_MS} + ?4 \
                     WHERE thread_id = ?1 AND owner = ?2 AND epoch = ?3 AND expires_at > {NOW_MS} \
                     RETURNING handoff_requested_by IS NOT NULL"
                ))?;
                let mut renewed = Vec::new();
                for (thread_id, epoch) in &sent_asked {
                    if let Some(requested) = statement
                        .query_row(params![thread_id, owner, epoch, ttl], |row| {
                            row.get::<_, bool>(0)
                        })
                        .optional()?
                    {
                        renewed.push((thread_id.clone(), requested));
                    }
                }
                Ok(renewed)
            })
            .await;
        let rows = match rows {
            Ok(rows) => rows,
            // The caller asks for the leases that ran out meanwhile (`lost_leases`).
            Err(error) => return Err(error),
        };
        let renewed: Vec<String> = rows.iter().map(|(id, _)| id.clone()).collect();
        Ok(LeaseRenewal {
            lost: leases.after_renewal(sent, &asked, &renewed),
            handoff_requested: rows
                .into_iter()
                .filter_map(|(id, requested)| requested.then_some(id))
                .collect(),
        })
    }

    pub(super) fn unreported_losses(&self) -> Vec<String> {
        self.leases
            .as_ref()
            .map(|leases| leases.after_failed_renewal())
            .unwrap_or_default()
    }

    pub(super) fn settings(&self) -> Option<&LeaseSettings> {
        self.leases.as_ref().map(|leases| &leases.settings)
    }
}

/// The lease check a write on `thread_id` starts with (see the PostgreSQL store's `FENCE`).
fn check_fence(
    connection: &Connection,
    thread_id: &str,
    leases: &LeaseBook,
    fence: Fence,
) -> Result<(), StoreError> {
    let owner = leases.settings.owner.as_str();
    match fence {
        Fence::Epoch(epoch) => {
            let held = connection
                .prepare_cached(&format!(
                    "SELECT 1 FROM thread_leases WHERE thread_id = ?1 AND owner = ?2 \
                     AND epoch = ?3 AND expires_at > {NOW_MS}"
                ))?
                .query_row(params![thread_id, owner, epoch], |_| Ok(()))
                .optional()?;
            held.ok_or_else(|| StoreError::Fenced(thread_id.to_owned()))
        }
        Fence::NotHeld => {
            let foreign = connection
                .prepare_cached(&format!(
                    "SELECT owner, expires_at FROM thread_leases WHERE thread_id = ?1 \
                     AND owner <> ?2 AND expires_at > {NOW_MS}"
                ))?
                .query_row(params![thread_id, owner], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
                })
                .optional()?;
            match foreign {
                None => Ok(()),
                Some((holder, _)) if leases.owner_is_gone(&holder) => {
                    release_for_gone(connection, &holder, Some(thread_id))?;
                    tracing::info!(thread = thread_id, previous = %holder, "released the lease of a server that is gone");
                    Ok(())
                }
                Some((owner, expires_at_ms)) => Err(StoreError::LeaseHeld {
                    thread_id: thread_id.to_owned(),
                    owner,
                    expires_at_ms,
                }),
            }
        }
    }
}

/// Grants the lease (returning its epoch) or, while another process holds a live one, asks
/// that process to hand the thread over and returns its owner and expiry.
fn acquire_in(
    connection: &Connection,
    thread_id: &str,
    leases: &LeaseBook,
) -> Result<Result<i64, (String, i64)>, StoreError> {
    let owner = leases.settings.owner.as_str();
    let ttl = leases.settings.ttl_millis();
    let holder: Option<(String, i64, bool)> = connection
        .query_row(
            &format!(
                "SELECT owner, expires_at, expires_at > {NOW_MS} FROM thread_leases \
                 WHERE thread_id = ?1"
            ),
            [thread_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    if let Some((holder, expires_at, true)) = &holder
        && holder != owner
        && !leases.owner_is_gone(holder)
    {
        connection.execute(
            "UPDATE thread_leases SET handoff_requested_by = ?2 WHERE thread_id = ?1",
            params![thread_id, owner],
        )?;
        return Ok(Err((holder.clone(), *expires_at)));
    }
    let epoch: i64 = connection.query_row(
        &format!(
            "INSERT INTO thread_leases (thread_id, owner, epoch, expires_at) \
             VALUES (?1, ?2, 1, {NOW_MS} + ?3) \
             ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, \
             epoch = thread_leases.epoch + 1, expires_at = excluded.expires_at, \
             handoff_requested_by = NULL \
             RETURNING epoch"
        ),
        params![thread_id, owner, ttl],
        |row| row.get(0),
    )?;
    close_unfinished_turns(connection, thread_id)?;
    Ok(Ok(epoch))
}

/// Releases, on behalf of `owner`, who is gone, its live leases (of `thread_id` only, or all
/// of them), raising each epoch so that nothing the owner may still send is accepted, and
/// closes the turns it left running. Returns the threads released.
fn release_for_gone(
    connection: &Connection,
    owner: &str,
    thread_id: Option<&str>,
) -> Result<Vec<String>, StoreError> {
    let released: Vec<String> = connection
        .prepare_cached(&format!(
            "UPDATE thread_leases SET epoch = epoch + 1, expires_at = {NOW_MS}, \
             handoff_requested_by = NULL \
             WHERE owner = ?1 AND (?2 IS NULL OR thread_id = ?2) AND expires_at > {NOW_MS} \
             RETURNING thread_id"
        ))?
        .query_map(params![owner, thread_id], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    for thread_id in &released {
        close_unfinished_turns(connection, thread_id)?;
    }
    Ok(released)
}

/// The turns of thread `?1` left running, through the partial index `turns_unfinished`:
/// read on every lease taken, so on every cold resume.
pub(crate) const UNFINISHED_TURNS_OF_THREAD: &str =
    "SELECT id FROM turns WHERE thread_id = ?1 AND status = 'inProgress'";

/// Closes the turns of `thread_id` its previous writer left `inProgress`.
fn close_unfinished_turns(connection: &Connection, thread_id: &str) -> Result<(), StoreError> {
    let unfinished: Vec<String> = connection
        .prepare_cached(UNFINISHED_TURNS_OF_THREAD)?
        .query_map([thread_id], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    if unfinished.is_empty() {
        return Ok(());
    }
    let reason = encode(
        &TurnError {
            message: INTERRUPTED_BY_STOP.to_owned(),
            additional_details: None,
        },
        "turn error",
    )?;
    for turn_id in &unfinished {
        super::interrupt_turn(connection, thread_id, turn_id, &reason)?;
    }
    tracing::warn!(
        thread = thread_id,
        turns = unfinished.len(),
        "closed turns left running by the thread's previous writer as interrupted"
    );
    Ok(())
}
