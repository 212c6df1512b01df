//! Idempotent mutations (docs/protocol.md, "Idempotent requests"): `turn/start` and
//! `turn/steer` keyed by `clientUserMessageId` within their thread, `thread/start` and
//! `thread/fork` by `idempotencyKey`. A request with a key claims it in the store before it
//! takes effect, with the answer it is about to give; a retry finds the claim and gets that
//! answer, and nothing runs twice. The same key with other params is a -32600 conflict.
//!
//! Claim first, act second: a crash between the two leaves a claim whose work never
//! happened. Each handler checks that the work a replayed answer names exists (the turn, the
//! thread) and otherwise releases the claim and runs the request afresh, so a retry after such
//! a crash neither starts twice nor answers with something that is not there.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tandem_protocol::JSONRPCErrorError;

use crate::store::{IdempotencyRecord, ThreadStore};

use super::{now_secs, store_error};

/// A key this request claimed: released if the request fails before it takes effect.
pub(super) struct Claim {
    store: Arc<dyn ThreadStore>,
    scope: String,
    key: String,
}

impl Claim {
    /// Forgets the claim, so that a retry runs the request again. A release that cannot be
    /// stored is logged: the key then answers with the failed request's planned result until
    /// it ages out, which the caller's error reply already told the client not to trust.
    pub(super) async fn release(self) {
        if let Err(error) = self
            .store
            .release_idempotency_key(&self.scope, &self.key)
            .await
        {
            tracing::warn!(scope = %self.scope, key = %self.key, %error,
                "cannot release an idempotency key after its request failed");
        }
    }
}

/// What claiming a key found.
pub(super) enum Keyed {
    /// The key is new (or had aged out): the request runs; release the claim if it fails.
    Claimed(Claim),
    /// A retry: answer with this result and do nothing else.
    Replay(Value),
}

/// The digest that tells a retry from another request reusing its key: the method and the
/// params exactly as decoded (a retry sends the same ones).
pub(super) fn fingerprint(
    method: &str,
    params: &impl Serialize,
) -> Result<String, JSONRPCErrorError> {
    let params = serde_json::to_vec(params).map_err(|error| {
        JSONRPCErrorError::internal(format!("cannot fingerprint {method} params: {error}"))
    })?;
    let mut digest = Sha256::new();
    digest.update(method.as_bytes());
    digest.update([0]);
    digest.update(&params);
    Ok(format!("{:x}", digest.finalize()))
}

/// Claims `key` in `scope` for a `method` request with `fingerprint` that will answer
/// `planned`. A stored claim of the same request is a replay; of another request (other
/// method or params), a -32600 conflict naming the key.
pub(super) async fn claim(
    store: &Arc<dyn ThreadStore>,
    scope: &str,
    key: &str,
    method: &str,
    fingerprint: String,
    planned: &impl Serialize,
) -> Result<Keyed, JSONRPCErrorError> {
    let result = serde_json::to_value(planned).map_err(|error| {
        JSONRPCErrorError::internal(format!("cannot record the {method} result: {error}"))
    })?;
    let record = IdempotencyRecord {
        scope: scope.to_owned(),
        key: key.to_owned(),
        method: method.to_owned(),
        fingerprint,
        result,
        created_at: now_secs(),
    };
    match store
        .claim_idempotency_key(&record)
        .await
        .map_err(store_error)?
    {
        None => Ok(Keyed::Claimed(Claim {
            store: Arc::clone(store),
            scope: record.scope,
            key: record.key,
        })),
        Some(stored)
            if stored.method == record.method && stored.fingerprint == record.fingerprint =>
        {
            Ok(Keyed::Replay(stored.result))
        }
        Some(stored) => Err(conflict(key, &stored.method)),
    }
}

/// The result remembered for `key` in `scope` if this `method` request with `fingerprint` is
/// a retry, without claiming anything (used where the request itself can no longer run, so
/// that its retry still gets the original answer); a key of another request is a conflict.
pub(super) async fn remembered(
    store: &Arc<dyn ThreadStore>,
    scope: &str,
    key: &str,
    method: &str,
    fingerprint: &str,
) -> Result<Option<Value>, JSONRPCErrorError> {
    match store
        .idempotency_key(scope, key, now_secs())
        .await
        .map_err(store_error)?
    {
        None => Ok(None),
        Some(stored) if stored.method == method && stored.fingerprint == fingerprint => {
            Ok(Some(stored.result))
        }
        Some(stored) => Err(conflict(key, &stored.method)),
    }
}

fn conflict(key: &str, method: &str) -> JSONRPCErrorError {
    JSONRPCErrorError::invalid_request(format!(
        "idempotency key {key:?} was already used by a different {method} request; send a \
         new key for a new request, or repeat the original request exactly to get its result"
    ))
}

/// Releases `claim` (if any) when `result` failed, and passes `result` on.
pub(super) async fn release_on_error<T>(
    claim: Option<Claim>,
    result: Result<T, JSONRPCErrorError>,
) -> Result<T, JSONRPCErrorError> {
    if result.is_err()
        && let Some(claim) = claim
    {
        claim.release().await;
    }
    result
}
