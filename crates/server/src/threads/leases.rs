//! The server's side of the writer lease (issue 20, docs/scaling.md): take the lease when a
//! thread loads, renew every lease while threads are loaded, give it up when a thread unloads
//! (idle, its last connection gone on a shared store, another server asking for it, shutdown),
//! and fence itself when a lease is lost: stop the thread's turn, kill its process groups,
//! answer its pending server requests (the turn's cancellation does), tell its clients
//! (`systemError`, then `thread/closed`) and never write to it again until it is resumed.
//!
//! The store enforces the lease on every write; this module makes the loss visible and
//! stops the work that would otherwise run on without being able to record anything.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tandem_protocol::{JSONRPCErrorError, ThreadStatus};

use crate::store::{LeaseRenewal, StoreError, ThreadStore};

use super::{LoadedThread, ThreadService, lock, store_error};

/// How long a fenced thread's turn gets to stop and record its end before the thread is
/// unloaded anyway.
const FENCED_TURN_GRACE: Duration = Duration::from_secs(10);

impl ThreadService {
    /// Takes the writer lease of the durable thread `thread_id` in `store` and makes sure the
    /// renewal loop (and the handoff listener) runs. A lease held by another server is asked
    /// for, and waited for up to `store.handoff_wait_ms` (the holder hands an idle thread over
    /// at once); still held after that (a turn runs there), it answers -32600 `thread <id>
    /// already has an active writer` with the owner, its expiry and `retryAfterMs` in `data`.
    pub(super) async fn acquire_lease(
        self: &Arc<Self>,
        store: &dyn ThreadStore,
        thread_id: &str,
    ) -> Result<(), JSONRPCErrorError> {
        if store.lease_settings().is_none() {
            return Ok(());
        }
        let wait = self.config().lease_handoff_wait;
        let deadline = Instant::now() + wait;
        loop {
            match store.acquire_lease(thread_id).await {
                Ok(()) => break,
                Err(error @ StoreError::LeaseHeld { .. }) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        let mut answer = store_error(error);
                        if let Some(data) = answer.data.as_mut() {
                            data["retryAfterMs"] = serde_json::json!(retry_after(wait));
                        }
                        return Err(answer);
                    }
                    // The holder was asked; its release (or the next try) ends the wait.
                    store
                        .lease_released(thread_id, left.min(HANDOFF_POLL))
                        .await;
                }
                Err(error) => return Err(store_error(error)),
            }
        }
        self.keep_leases_renewed(store);
        Ok(())
    }

    /// Makes sure the renewal loop (and the handoff listener) of `store`'s leases runs, once
    /// this server holds one.
    pub(super) fn keep_leases_renewed(self: &Arc<Self>, store: &dyn ThreadStore) {
        let Some(settings) = store.lease_settings() else {
            return;
        };
        let period = settings.renew_period();
        if !self.renewing.swap(true, Ordering::SeqCst) {
            let service = Arc::downgrade(self);
            tokio::spawn(async move { renew_loop(service, period).await });
            if let Some(requests) = store.take_handoff_requests() {
                let service = Arc::downgrade(self);
                tokio::spawn(async move { hand_over_when_asked(service, requests).await });
            }
        }
    }

    /// Gives the lease of a thread that was just unloaded back (nothing for ephemeral
    /// threads or stores without leases).
    pub(super) async fn release_lease(&self, thread: &LoadedThread) {
        if thread.ephemeral {
            return;
        }
        let Some(store) = self.durable.get() else {
            return;
        };
        // The last chance to write an end the store refused before: past this, the next owner's
        // recovery closes the turn as interrupted.
        if let Err(error) = self.settle_owed_end(thread, store.as_ref()).await {
            tracing::warn!(thread = %thread.id, %error,
                "the end of a turn is still not stored; the next owner closes it as interrupted");
        }
        if let Err(error) = store.release_lease(&thread.id).await {
            // The lease then runs out by itself after the TTL.
            tracing::warn!(thread = %thread.id, %error, "cannot release the writer lease");
        }
    }

    /// Gives back the lease of `thread`, just taken out of the loaded set by an archive or a
    /// delete: now if no turn runs on it; else the turn needs the lease to record its end,
    /// and [`ThreadService::release_if_unloaded`] gives it back after that.
    pub(super) async fn release_unless_running(&self, thread: &LoadedThread) {
        let running = thread.state().active.is_some();
        if !running {
            self.release_lease(thread).await;
        }
    }

    /// Gives back the lease of `thread` once its turn recorded its end, if the thread was
    /// unloaded meanwhile (archived or deleted) and not loaded again: otherwise this server
    /// would renew a lease it has no use for, and no other server could write the thread.
    pub(crate) async fn release_if_unloaded(&self, thread: &LoadedThread) {
        if self.loaded(&thread.id).is_none() {
            self.release_lease(thread).await;
        }
    }

    /// Releases every lease (shutdown, after every turn recorded its end).
    pub(crate) async fn release_all_leases(&self) {
        let threads: Vec<Arc<LoadedThread>> = lock(&self.loaded).values().cloned().collect();
        for thread in threads {
            self.release_lease(&thread).await;
        }
        if let Some(store) = self.durable.get() {
            store.retire_leases();
        }
    }

    /// Whether the durable store is shared with other servers over the network (PostgreSQL):
    /// then a thread whose last connection closed is handed back at once rather than after
    /// the idle-unload delay, so that another server can take it.
    pub(super) fn shared_store(&self) -> bool {
        self.config().store_url.is_some()
    }

    /// Acts on one renewal round.
    async fn after_renewal(self: &Arc<Self>, renewal: LeaseRenewal) {
        for thread_id in renewal.lost {
            self.lease_lost(&thread_id);
        }
        for thread_id in renewal.handoff_requested {
            self.hand_over(&thread_id);
        }
    }

    /// Fences this server off `thread_id`, whose lease is gone.
    fn lease_lost(self: &Arc<Self>, thread_id: &str) {
        let Some(thread) = self.loaded(thread_id) else {
            return;
        };
        tracing::error!(
            thread = %thread_id,
            "lost the writer lease (taken over, or not renewed in time); stopping the thread here"
        );
        let service = Arc::clone(self);
        tokio::spawn(async move {
            let active = thread.state().active.clone();
            if let Some(active) = active {
                active.cancel.cancel();
                active.processes.kill_all().await;
                // The turn records its end (the store refuses it: the turn fails with the
                // lease error) and sends turn/completed.
                let _ = tokio::time::timeout(FENCED_TURN_GRACE, active.ended.cancelled()).await;
            }
            thread
                .set_status(&service.outgoing, ThreadStatus::SystemError)
                .await;
            let id = thread.id.clone();
            let unload = Arc::clone(&service);
            service.sequenced(&id, async move {
                if unload.forget_loaded(&thread) {
                    unload.after_unload(&thread).await;
                }
            });
        });
    }

    /// Hands `thread_id` over to the server that asked for it, if no turn runs on it.
    fn hand_over(self: &Arc<Self>, thread_id: &str) {
        let Some(thread) = self.loaded(thread_id) else {
            return;
        };
        let service = Arc::clone(self);
        self.sequenced(thread_id, async move {
            if thread.state().active.is_some() {
                return;
            }
            if service.forget_loaded(&thread) {
                tracing::info!(thread = %thread.id, "handing the thread over to the server that asked for it");
                service.release_lease(&thread).await;
                service.after_unload(&thread).await;
            }
        });
    }

    /// Removes `thread` from the loaded set if it is still the loaded instance.
    pub(super) fn forget_loaded(&self, thread: &Arc<LoadedThread>) -> bool {
        let mut loaded = lock(&self.loaded);
        if loaded
            .get(&thread.id)
            .is_some_and(|current| Arc::ptr_eq(current, thread))
        {
            loaded.remove(&thread.id);
            true
        } else {
            false
        }
    }
}

/// How often a server waiting for a handoff looks at the lease row again when no release
/// notification came (one may be lost).
const HANDOFF_POLL: Duration = Duration::from_millis(100);

/// The `retryAfterMs` of a refusal: the wait a retry would get again, at least a second.
fn retry_after(wait: Duration) -> u64 {
    u64::try_from(wait.max(Duration::from_secs(1)).as_millis()).unwrap_or(u64::MAX)
}

/// Hands each thread another server asks for over as the request arrives (when no turn runs
/// on it), rather than at the next renewal.
async fn hand_over_when_asked(
    service: std::sync::Weak<ThreadService>,
    mut requests: tokio::sync::mpsc::Receiver<String>,
) {
    while let Some(thread_id) = requests.recv().await {
        let Some(service) = service.upgrade() else {
            return;
        };
        if service.is_stopping() {
            return;
        }
        service.hand_over(&thread_id);
    }
}

/// Renews the leases every `period` while the service lives; a round that fails or takes
/// longer than a period fences the threads whose lease ran out locally.
async fn renew_loop(service: std::sync::Weak<ThreadService>, period: Duration) {
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let Some(service) = service.upgrade() else {
            return;
        };
        if service.is_stopping() {
            return;
        }
        let Some(store) = service.durable.get().cloned() else {
            continue;
        };
        match tokio::time::timeout(period, store.renew_leases()).await {
            Ok(Ok(renewal)) => service.after_renewal(renewal).await,
            Ok(Err(error)) => {
                tracing::warn!(%error, "cannot renew the writer leases");
                service.fence_expired(store.as_ref());
            }
            Err(_) => {
                tracing::warn!("renewing the writer leases timed out");
                service.fence_expired(store.as_ref());
            }
        }
    }
}

impl ThreadService {
    /// Fences the threads whose lease ran out on this server's clock while the database
    /// could not be reached.
    fn fence_expired(self: &Arc<Self>, store: &dyn ThreadStore) {
        for thread_id in store.lost_leases() {
            self.lease_lost(&thread_id);
        }
    }
}

/// The -32600 answer for a thread leased elsewhere: the reference's text, with the owner and
/// expiry in `data`.
pub(super) fn lease_held_error(error: &StoreError) -> Option<JSONRPCErrorError> {
    let StoreError::LeaseHeld {
        thread_id,
        owner,
        expires_at_ms,
    } = error
    else {
        return None;
    };
    let mut answer = JSONRPCErrorError::invalid_request(error.to_string());
    answer.data = Some(serde_json::json!({
        "threadId": thread_id,
        "owner": owner,
        "expiresAtMs": expires_at_ms,
    }));
    Some(answer)
}
