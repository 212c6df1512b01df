//! Idempotency keys (issue 17, docs/protocol.md "Idempotent requests"): what the store keeps
//! so that a client retrying `turn/start`, `turn/steer`, `thread/start` or `thread/fork` after
//! a lost reply gets the original answer instead of a second turn or thread.
//!
//! A key lives in a scope: the thread for `turn/*` (`clientUserMessageId`) and `thread/fork`
//! (the source thread), [`SERVER_SCOPE`] for `thread/start`. The window is bounded both ways:
//! a key older than [`KEY_MAX_AGE_SECS`] is forgotten, and a scope keeps at most
//! [`KEYS_PER_SCOPE`] keys (the oldest go first). Both stores prune on every claim, so the
//! table never grows past the keys of the last day plus one scope's worth.
//!
//! This file holds the value types and the in-memory table the memory store uses; the SQLite
//! store keeps the same rules in a table of its own.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

/// How long a key is remembered: 24 hours.
pub const KEY_MAX_AGE_SECS: i64 = 24 * 60 * 60;

/// How many keys one scope remembers at most: 1000.
pub const KEYS_PER_SCOPE: usize = 1000;

/// The scope of `thread/start` keys, which have no thread yet.
pub const SERVER_SCOPE: &str = "";

/// One remembered request: what it was (method and a fingerprint of its params) and what it
/// answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// A thread id, or [`SERVER_SCOPE`].
    pub scope: String,
    /// The client's key.
    pub key: String,
    /// The request's method (`turn/start`, ...).
    pub method: String,
    /// A digest of the request's params, to tell a retry from another request that reuses
    /// the key.
    pub fingerprint: String,
    /// The original response's result.
    pub result: Value,
    /// When the key was first claimed, unix seconds.
    pub created_at: i64,
}

/// The memory store's keys, by scope, oldest first.
#[derive(Debug, Default)]
pub(super) struct KeyTable {
    scopes: HashMap<String, VecDeque<IdempotencyRecord>>,
}

impl KeyTable {
    /// See [`super::ThreadStore::claim_idempotency_key`].
    pub(super) fn claim(&mut self, record: &IdempotencyRecord) -> Option<IdempotencyRecord> {
        let oldest_kept = record.created_at - KEY_MAX_AGE_SECS;
        self.scopes.retain(|_, keys| {
            keys.retain(|stored| stored.created_at >= oldest_kept);
            !keys.is_empty()
        });
        let keys = self.scopes.entry(record.scope.clone()).or_default();
        if let Some(stored) = keys.iter().find(|stored| stored.key == record.key) {
            return Some(stored.clone());
        }
        while keys.len() >= KEYS_PER_SCOPE {
            keys.pop_front();
        }
        keys.push_back(record.clone());
        None
    }

    /// See [`super::ThreadStore::idempotency_key`].
    pub(super) fn get(&self, scope: &str, key: &str, now: i64) -> Option<IdempotencyRecord> {
        self.scopes
            .get(scope)?
            .iter()
            .find(|stored| stored.key == key && stored.created_at >= now - KEY_MAX_AGE_SECS)
            .cloned()
    }

    /// See [`super::ThreadStore::release_idempotency_key`].
    pub(super) fn release(&mut self, scope: &str, key: &str) {
        if let Some(keys) = self.scopes.get_mut(scope) {
            keys.retain(|stored| stored.key != key);
        }
    }

    /// Forgets every key of `scope` (its thread was deleted).
    pub(super) fn drop_scope(&mut self, scope: &str) {
        self.scopes.remove(scope);
    }
}
