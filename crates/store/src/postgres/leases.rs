//! The writer lease on PostgreSQL (issue 20, docs/scaling.md): taking it, renewing all of a
//! server's leases in one statement, giving it back, and releasing the leases of a server that
//! is gone (issue 27): taking the lease, or a write on the thread by a server that does not
//! lease it, releases such a lease on the owner's behalf first, and opening the store (then
//! renewing, at most once a TTL) releases every lease of the dead owners whose lock files are
//! in this server's `lease-owners` directory, then removes those files.

use std::time::Instant;

use deadpool_postgres::ClientWrapper;
use tandem_protocol::{Turn, TurnError};

use super::super::lease::LeaseRenewal;
use super::super::liveness;
use super::super::{INTERRUPTED_BY_STOP, StoreError, ThreadRecord, close_unfinished_item};
use super::{PostgresThreadStore, handoff};
use crate::codec::{decode, encode};

impl PostgresThreadStore {
    /// See [`crate::ThreadStore::acquire_lease`].
    pub(super) async fn acquire(&self, thread_id: &str) -> Result<(), StoreError> {
        let sent = Instant::now();
        let epoch = self
            .in_write(None, async |db| self.acquire_in(db, thread_id).await)
            .await?;
        match epoch {
            Acquired::Granted(epoch) => {
                self.leases
                    .granted(thread_id, epoch, self.leases.deadline_from(sent));
                Ok(())
            }
            Acquired::Held {
                owner,
                expires_at_ms,
            } => Err(StoreError::LeaseHeld {
                thread_id: thread_id.to_owned(),
                owner,
                expires_at_ms,
            }),
        }
    }

    /// See [`crate::ThreadStore::create_leased_thread`]: the thread's rows and its lease in
    /// one transaction (one commit).
    pub(super) async fn create_leased(
        &self,
        thread: &ThreadRecord,
        history: &[Turn],
    ) -> Result<(), StoreError> {
        let sent = Instant::now();
        let epoch = self
            .in_write(Some(&thread.id), async |db| {
                super::statements::insert_new_thread(db, thread, history).await?;
                // Refused (a live lease elsewhere on a thread that did not exist: an id chosen by
                // a client) rolls the thread back with it.
                match self.acquire_in(db, &thread.id).await? {
                    Acquired::Granted(epoch) => Ok(epoch),
                    Acquired::Held {
                        owner,
                        expires_at_ms,
                    } => Err(StoreError::LeaseHeld {
                        thread_id: thread.id.clone(),
                        owner,
                        expires_at_ms,
                    }),
                }
            })
            .await?;
        self.leases
            .granted(&thread.id, epoch, self.leases.deadline_from(sent));
        Ok(())
    }

    async fn acquire_in(
        &self,
        db: &ClientWrapper,
        thread_id: &str,
    ) -> Result<Acquired, StoreError> {
        let owner = &self.leases.settings.owner;
        let ttl = self.leases.settings.ttl_millis();
        // Granted when there is no row, the row's lease ran out or was released, or it is
        // this server's own; the epoch grows with every grant.
        let granted = db
            .prepare_cached(
                "INSERT INTO thread_leases (thread_id, owner, epoch, expires_at) \
                 VALUES ($1, $2, 1, now() + $3::bigint * interval '1 millisecond') \
                 ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, \
                 epoch = thread_leases.epoch + 1, expires_at = excluded.expires_at, \
                 handoff_requested_by = NULL \
                 WHERE thread_leases.expires_at <= now() OR thread_leases.owner = excluded.owner \
                 RETURNING epoch",
            )
            .await?;
        if let Some(row) = db.query_opt(&granted, &[&thread_id, owner, &ttl]).await? {
            close_unfinished_turns(db, thread_id).await?;
            return Ok(Acquired::Granted(row.get(0)));
        }
        // Held by a server that is gone (crashed on this machine): released on its behalf,
        // then granted at once.
        let holder: Option<String> = db
            .query_opt(
                "SELECT owner FROM thread_leases WHERE thread_id = $1 FOR UPDATE",
                &[&thread_id],
            )
            .await?
            .map(|row| row.get(0));
        if let Some(holder) = holder.filter(|holder| self.leases.owner_is_gone(holder))
            && !release_for_gone(db, &holder, Some(thread_id))
                .await?
                .is_empty()
            && let Some(row) = db.query_opt(&granted, &[&thread_id, owner, &ttl]).await?
        {
            tracing::info!(thread = thread_id, previous = %holder, "took over the lease of a server that is gone");
            return Ok(Acquired::Granted(row.get(0)));
        }
        // Held elsewhere: ask the holder to hand the thread over once no turn runs on it,
        // and tell it now (delivered when this transaction commits; `handoff`).
        let holder = db
            .query_one(
                "UPDATE thread_leases SET handoff_requested_by = $2 WHERE thread_id = $1 \
                 RETURNING owner, (extract(epoch FROM expires_at) * 1000)::bigint",
                &[&thread_id, owner],
            )
            .await?;
        if self.leases.settings.notify_handoffs {
            let holder_name: String = holder.get(0);
            db.execute(
                "SELECT pg_notify($1, $2)",
                &[
                    &handoff::HANDOFF_CHANNEL,
                    &format!("{holder_name}{}{thread_id}", handoff::PAYLOAD_SEPARATOR),
                ],
            )
            .await?;
        }
        Ok(Acquired::Held {
            owner: holder.get(0),
            expires_at_ms: holder.get(1),
        })
    }

    /// See [`crate::ThreadStore::release_lease`].
    pub(super) async fn release(&self, thread_id: &str) -> Result<(), StoreError> {
        let Some(epoch) = self.leases.forget(thread_id) else {
            return Ok(());
        };
        // Expires it now rather than deleting it: the epoch must never go back. The release is
        // announced once it is committed, for a server waiting for this thread (`handoff`).
        self.on_connection(async |db| {
            db.execute(
                "UPDATE thread_leases SET expires_at = now(), handoff_requested_by = NULL \
                 WHERE thread_id = $1 AND owner = $2 AND epoch = $3",
                &[&thread_id, &self.leases.settings.owner, &epoch],
            )
            .await?;
            db.execute(
                "SELECT pg_notify($1, $2)",
                &[&handoff::RELEASED_CHANNEL, &thread_id],
            )
            .await?;
            Ok(())
        })
        .await
    }

    /// See [`crate::ThreadStore::renew_leases`].
    pub(super) async fn renew(&self) -> Result<LeaseRenewal, StoreError> {
        self.release_dead_owners().await;
        let asked = self.leases.live();
        if asked.is_empty() {
            return Ok(LeaseRenewal {
                lost: self.leases.after_failed_renewal(),
                handoff_requested: Vec::new(),
            });
        }
        let sent = Instant::now();
        // On failure the caller asks for the leases that ran out meanwhile (`lost_leases`).
        let rows = self.renew_round(&asked).await?;
        let renewed: Vec<String> = rows.iter().map(|(id, _)| id.clone()).collect();
        let handoff_requested = rows
            .into_iter()
            .filter_map(|(id, requested)| requested.then_some(id))
            .collect();
        Ok(LeaseRenewal {
            lost: self.leases.after_renewal(sent, &asked, &renewed),
            handoff_requested,
        })
    }

    /// One statement renewing every lease in `asked`; repeated while the database cannot
    /// be reached (renewing twice only sets the same expiry again).
    async fn renew_round(
        &self,
        asked: &[(String, i64)],
    ) -> Result<Vec<(String, bool)>, StoreError> {
        let ids: Vec<&str> = asked.iter().map(|(id, _)| id.as_str()).collect();
        let epochs: Vec<i64> = asked.iter().map(|(_, epoch)| *epoch).collect();
        self.on_connection(async |client| {
        let statement = client
            .prepare_cached(
                "UPDATE thread_leases AS l SET expires_at = now() + $4::bigint * interval '1 millisecond' \
                 FROM unnest($2::text[], $3::bigint[]) AS h (thread_id, epoch) \
                 WHERE l.thread_id = h.thread_id AND l.epoch = h.epoch AND l.owner = $1 \
                 AND l.expires_at > now() \
                 RETURNING l.thread_id, l.handoff_requested_by IS NOT NULL",
            )
            .await?;
        let rows = client
            .query(
                &statement,
                &[
                    &self.leases.settings.owner,
                    &ids,
                    &epochs,
                    &self.leases.settings.ttl_millis(),
                ],
            )
            .await?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
        })
        .await
    }

    /// Releases every live lease of the dead owners whose lock files are in this server's
    /// directory (on connect, then at most once a TTL while leases are renewed), then removes
    /// their files.
    pub(super) async fn release_dead_owners(&self) {
        let dead = self.leases.dead_owners_due();
        if dead.is_empty() {
            return;
        }
        let released = self
            .in_write(None, async |db| {
                let mut released = 0;
                for dead in &dead {
                    released += release_for_gone(db, &dead.owner, None).await?.len();
                }
                Ok(released)
            })
            .await;
        liveness::after_release(dead, released);
    }
}

/// What an acquiring transaction found.
enum Acquired {
    Granted(i64),
    Held { owner: String, expires_at_ms: i64 },
}

/// The turns of thread `$1` left running, through the partial index
/// [`super::UNFINISHED_TURNS_INDEX`]: read on every lease taken, so on every cold resume.
pub(super) const UNFINISHED_TURNS_OF_THREAD: &str =
    "SELECT id FROM turns WHERE thread_id = $1 AND status = 'inProgress'";

/// Closes the turns of `thread_id` a previous writer left `inProgress` (it died or lost its
/// lease mid-turn): nobody else can be running them once this server holds the lease.
async fn close_unfinished_turns(db: &ClientWrapper, thread_id: &str) -> Result<(), StoreError> {
    let unfinished: Vec<String> = db
        .query(UNFINISHED_TURNS_OF_THREAD, &[&thread_id])
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
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
        db.execute(
            "UPDATE turns SET status = 'interrupted', error = $3 \
             WHERE thread_id = $1 AND id = $2",
            &[&thread_id, turn_id, &reason],
        )
        .await?;
        let items = db
            .query(
                "SELECT idx, item FROM items WHERE thread_id = $1 AND turn_id = $2",
                &[&thread_id, turn_id],
            )
            .await?;
        for row in items {
            let index: i64 = row.get(0);
            let text: String = row.get(1);
            let mut item: tandem_protocol::ThreadItem = decode(&text, || {
                format!("item {index} of turn {turn_id} in thread {thread_id}")
            })?;
            if close_unfinished_item(&mut item) {
                db.execute(
                    "UPDATE items SET item = $4 \
                     WHERE thread_id = $1 AND turn_id = $2 AND idx = $3",
                    &[&thread_id, turn_id, &index, &encode(&item, "item")?],
                )
                .await?;
            }
        }
    }
    tracing::warn!(
        thread = thread_id,
        turns = unfinished.len(),
        "closed turns left running by the thread's previous writer as interrupted"
    );
    Ok(())
}

/// Releases, on behalf of `owner`, who is gone, its live leases (of `thread_id` only, or all
/// of them), raising each epoch so that nothing the owner may still send is accepted, and
/// closes the turns it left running. Returns the threads released.
pub(super) async fn release_for_gone(
    db: &ClientWrapper,
    owner: &str,
    thread_id: Option<&str>,
) -> Result<Vec<String>, StoreError> {
    let released: Vec<String> = db
        .query(
            "UPDATE thread_leases SET epoch = epoch + 1, expires_at = now(), \
             handoff_requested_by = NULL \
             WHERE owner = $1 AND ($2::text IS NULL OR thread_id = $2) AND expires_at > now() \
             RETURNING thread_id",
            &[&owner, &thread_id],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    for thread_id in &released {
        close_unfinished_turns(db, thread_id).await?;
    }
    Ok(released)
}
