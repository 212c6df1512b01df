//! The `thread/*` request handlers other than attachments (docs/protocol.md section 4).

use std::sync::Arc;

use tandem_host::{ConnectionRequestId, RequestContext};
use tandem_protocol::{
    ApprovalPolicy, CwdFilter, EmptyResponse, JSONRPCErrorError, SortDirection, ThreadDeleteParams,
    ThreadDeletedNotification, ThreadForkParams, ThreadForkResponse, ThreadListParams,
    ThreadListResponse, ThreadLoadedListParams, ThreadLoadedListResponse, ThreadNameSetParams,
    ThreadNameUpdatedNotification, ThreadOverrides, ThreadReadParams, ThreadReadResponse,
    ThreadResumeParams, ThreadResumeResponse, ThreadStartParams, ThreadStartResponse,
    ThreadStartedNotification, ThreadStatus, ThreadTurnsListParams, ThreadTurnsListResponse,
    TurnItemsView, TurnStatus,
};

use crate::SERVER_VERSION;
use crate::store::{self, ThreadListQuery, ThreadRecord, ThreadUpdate, TurnListQuery};

use super::idempotency::{self, Keyed};
use super::{LoadedThread, ThreadService, lock, not_found, now_secs, store_error};

/// What a `thread/start` or `thread/fork` key remembers: the thread it created. A retry
/// answers with that thread as it is now (and subscribes the caller), like the first answer.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyedThread {
    thread_id: String,
}

impl ThreadService {
    // -----------------------------------------------------------------------------------------
    // thread/*
    // -----------------------------------------------------------------------------------------

    pub(super) async fn start(
        self: &Arc<Self>,
        params: ThreadStartParams,
        context: &RequestContext,
    ) -> Result<ThreadStartResponse, JSONRPCErrorError> {
        let Some(key) = params.idempotency_key.clone() else {
            return self.create_thread(params, context, store::new_id()).await;
        };
        let store = self.store_for(params.ephemeral.unwrap_or(false)).await?;
        let fingerprint = idempotency::fingerprint("thread/start", &params)?;
        let scope = crate::store::SERVER_SCOPE;
        // Twice at most: a claim left by a crash before its thread was created is released
        // and claimed again.
        for _ in 0..2 {
            let thread_id = store::new_id();
            let planned = KeyedThread {
                thread_id: thread_id.clone(),
            };
            match idempotency::claim(
                &store,
                scope,
                &key,
                "thread/start",
                fingerprint.clone(),
                &planned,
            )
            .await?
            {
                Keyed::Claimed(claim) => {
                    let created = self.create_thread(params, context, thread_id).await;
                    return idempotency::release_on_error(Some(claim), created).await;
                }
                Keyed::Replay(result) => {
                    if let Some((thread, session, cursor)) = self.rejoin(&result, context).await? {
                        return Ok(ThreadStartResponse {
                            thread,
                            session,
                            cursor,
                        });
                    }
                    store
                        .release_idempotency_key(scope, &key)
                        .await
                        .map_err(store_error)?;
                }
            }
        }
        Err(JSONRPCErrorError::internal(format!(
            "idempotency key {key:?} could not be claimed; retry"
        )))
    }

    /// The answer to a retried `thread/start` or `thread/fork`: the thread the first request
    /// created (`planned` names it), with the caller subscribed as the first request
    /// subscribed its caller; `None` if that thread does not exist (the first request never
    /// created it, or it was deleted since).
    async fn rejoin(
        self: &Arc<Self>,
        planned: &serde_json::Value,
        context: &RequestContext,
    ) -> Result<
        Option<(
            tandem_protocol::Thread,
            tandem_protocol::SessionSettings,
            Option<tandem_protocol::EventCursor>,
        )>,
        JSONRPCErrorError,
    > {
        let planned: KeyedThread = serde_json::from_value(planned.clone()).map_err(|error| {
            JSONRPCErrorError::internal(format!("the remembered result does not decode: {error}"))
        })?;
        if self.loaded(&planned.thread_id).is_none()
            && self.find(&planned.thread_id).await?.is_none()
        {
            return Ok(None);
        }
        let params = ThreadResumeParams {
            thread_id: planned.thread_id,
            ..ThreadResumeParams::default()
        };
        let resumed = self.resume(params, context).await?;
        Ok(Some((resumed.thread, resumed.session, resumed.cursor)))
    }

    /// `thread/start` of a thread with id `thread_id`.
    async fn create_thread(
        self: &Arc<Self>,
        params: ThreadStartParams,
        context: &RequestContext,
        thread_id: String,
    ) -> Result<ThreadStartResponse, JSONRPCErrorError> {
        let dynamic_tools = params.dynamic_tools.unwrap_or_default();
        for tool in &dynamic_tools {
            validate_tool_name(&tool.name)?;
        }
        let now = now_secs();
        let ephemeral = params.ephemeral.unwrap_or(false);
        let mut record = ThreadRecord {
            id: thread_id,
            name: None,
            preview: Default::default(),
            ephemeral,
            created_at: now,
            updated_at: now,
            status: ThreadStatus::Idle,
            cwd: default_cwd()?,
            source: context.session.session_source.clone(),
            forked_from_id: None,
            model: None,
            model_provider: self.provider_name(),
            cli_version: SERVER_VERSION.to_owned(),
            approval_policy: ApprovalPolicy::OnRequest,
            dynamic_tools,
            config: Default::default(),
            archived_at: None,
        };
        overrides_update(&params.overrides, &record.config)?.apply(&mut record);
        let store = self.store_for(ephemeral).await?;
        // The thread and its lease in one commit: `thread/start` is durable once.
        store
            .create_leased_thread(&record, &[])
            .await
            .map_err(store_error)?;
        self.keep_leases_renewed(&*store);
        let thread = self.insert_loaded(record, Vec::new(), ThreadStatus::Idle);
        let attachment = self
            .attach_subscriber(&thread, context.id.connection_id, None)
            .await;
        let mut response = self.announce_started(&thread).await;
        response.cursor = attachment.map(|attachment| attachment.cursor);
        Ok(response)
    }

    /// Broadcasts `thread/started` and returns the start/fork response; the notification is
    /// sent from a task of its own after the caller's reply was queued (the reply is sent by
    /// the caller right after this returns, and the router keeps that order).
    pub(super) async fn announce_started(&self, thread: &Arc<LoadedThread>) -> ThreadStartResponse {
        let response = ThreadStartResponse {
            thread: thread.to_thread(true, self.default_model().as_deref()),
            session: thread.session(self.default_model().as_deref(), &self.config()),
            cursor: None,
        };
        let note = tandem_protocol::ServerNotification::ThreadStarted(ThreadStartedNotification {
            thread: thread.to_thread(false, self.default_model().as_deref()),
        });
        let outgoing = self.outgoing.clone();
        // Spawned so that the reply, queued by the caller right after this returns, is not
        // held behind a notification for every connection; best-effort ordering is enough
        // for `thread/started` (it is best effort itself).
        tokio::spawn(async move { outgoing.broadcast_notification(note).await });
        response
    }

    pub(super) async fn resume(
        self: &Arc<Self>,
        params: ThreadResumeParams,
        context: &RequestContext,
    ) -> Result<ThreadResumeResponse, JSONRPCErrorError> {
        // Every turn goes out only when neither `excludeTurns` nor `initialTurnsPage` says
        // otherwise (the reference's default); otherwise the turns stay in the store.
        let all_turns =
            !params.exclude_turns.unwrap_or(false) && params.initial_turns_page.is_none();
        let thread = match self.loaded(&params.thread_id) {
            Some(thread) => thread,
            None => {
                let (_, record) = self
                    .find(&params.thread_id)
                    .await?
                    .ok_or_else(|| not_found(&params.thread_id))?;
                if record.archived_at.is_some() {
                    return Err(JSONRPCErrorError::invalid_request(format!(
                        "thread {} is archived; call thread/unarchive first",
                        record.id
                    )));
                }
                let store = self.store_for(record.ephemeral).await?;
                self.acquire_lease(&*store, &record.id).await?;
                // Read again under the lease: the previous writer may have written since, and
                // taking the lease closed any turn it left running.
                let record = store
                    .get_thread(&record.id)
                    .await
                    .map_err(store_error)?
                    .ok_or_else(|| not_found(&params.thread_id))?;
                let status = match record.status {
                    ThreadStatus::SystemError => ThreadStatus::SystemError,
                    _ => ThreadStatus::Idle,
                };
                let thread = self.insert_loaded_without_history(record, status);
                // A compacted thread keeps sending its summary after a restart.
                let store = self.store_for(thread.ephemeral).await?;
                if let Err(error) = self.load_compaction(&thread, store.as_ref()).await {
                    lock(&self.loaded).remove(&thread.id);
                    self.release_lease(&thread).await;
                    return Err(error);
                }
                thread
            }
        };
        let store = self.store_for(thread.ephemeral).await?;
        let current = thread.state().record.config.clone();
        let update = overrides_update(&params.overrides, &current)?;
        if update != ThreadUpdate::default() {
            let record = store
                .update_thread(&thread.id, &update)
                .await
                .map_err(store_error)?;
            thread.state().record = record;
        }
        // Attached first: a replay goes out before this result, and on a gap the snapshot
        // below is taken after the attachment, so it holds at least every event up to the
        // returned cursor (docs/protocol.md, "Cursors and replay").
        let attachment = self
            .attach_subscriber(&thread, context.id.connection_id, params.cursor)
            .await;
        let gap = attachment.as_ref().and_then(|attachment| attachment.gap);
        // A gap carries the whole thread to rebuild from, whatever `excludeTurns` said.
        let all_turns = all_turns || gap == Some(true);
        if all_turns {
            self.ensure_history(&thread, &*store).await?;
        }
        let initial_turns_page = match params.initial_turns_page {
            Some(page) => Some(self.initial_turns_page(&*store, &thread.id, page).await?),
            None => None,
        };
        let (turns_backwards_cursor, items_backwards_cursor) =
            self.backwards_cursors(&*store, &thread.id).await?;
        Ok(ThreadResumeResponse {
            thread: thread.to_thread(all_turns, self.default_model().as_deref()),
            session: thread.session(self.default_model().as_deref(), &self.config()),
            initial_turns_page,
            turns_backwards_cursor,
            items_backwards_cursor,
            cursor: attachment
                .as_ref()
                .map(|attachment| attachment.cursor.clone()),
            gap,
            replayed: attachment
                .filter(|attachment| attachment.gap == Some(false))
                .map(|attachment| attachment.replayed),
        })
    }

    pub(super) async fn read(
        &self,
        params: ThreadReadParams,
    ) -> Result<ThreadReadResponse, JSONRPCErrorError> {
        let include_turns = params.include_turns.unwrap_or(false);
        if let Some(thread) = self.loaded(&params.thread_id) {
            if include_turns {
                let store = self.store_for(thread.ephemeral).await?;
                self.ensure_history(&thread, &*store).await?;
            }
            return Ok(ThreadReadResponse {
                thread: thread.to_thread(include_turns, self.default_model().as_deref()),
            });
        }
        let (store, record) = self
            .find(&params.thread_id)
            .await?
            .ok_or_else(|| not_found(&params.thread_id))?;
        let turns = if include_turns {
            store
                .get_thread_with_turns(&record.id)
                .await
                .map_err(store_error)?
                .map(|(_, turns)| turns)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        Ok(ThreadReadResponse {
            thread: self.unloaded_thread(&record, turns),
        })
    }

    pub(super) async fn list(
        &self,
        params: ThreadListParams,
    ) -> Result<ThreadListResponse, JSONRPCErrorError> {
        // Tandem has no thread hierarchy: those filters match nothing.
        if params.parent_thread_id.is_some() || params.ancestor_thread_id.is_some() {
            return Ok(ThreadListResponse {
                data: Vec::new(),
                next_cursor: None,
                backwards_cursor: None,
            });
        }
        let query = ThreadListQuery {
            cursor: params.cursor,
            limit: params
                .limit
                .map_or(store::DEFAULT_PAGE_LIMIT, |limit| limit as usize),
            direction: params.sort_direction.unwrap_or(SortDirection::Desc),
            source_kinds: params.source_kinds.unwrap_or_default(),
            cwds: match params.cwd {
                None => Vec::new(),
                Some(CwdFilter::One(cwd)) => vec![cwd],
                Some(CwdFilter::Many(cwds)) => cwds,
            },
            search_term: params.search_term,
            archived: params.archived.unwrap_or(false),
        };
        let page = self
            .durable()
            .await?
            .list_threads(&query)
            .await
            .map_err(store_error)?;
        let data = page
            .data
            .into_iter()
            .map(|record| match self.loaded(&record.id) {
                Some(thread) => thread.to_thread(false, self.default_model().as_deref()),
                None => self.unloaded_thread(&record, Vec::new()),
            })
            .collect();
        Ok(ThreadListResponse {
            data,
            next_cursor: page.next_cursor,
            backwards_cursor: None,
        })
    }

    pub(super) fn loaded_list(
        &self,
        params: ThreadLoadedListParams,
    ) -> Result<ThreadLoadedListResponse, JSONRPCErrorError> {
        if let Some(cursor) = &params.cursor
            && uuid::Uuid::parse_str(cursor).is_err()
        {
            return Err(JSONRPCErrorError::invalid_request(format!(
                "invalid cursor: {cursor}"
            )));
        }
        let limit = params
            .limit
            .map_or(store::DEFAULT_PAGE_LIMIT, |limit| limit as usize)
            .max(1);
        let loaded = lock(&self.loaded);
        let mut ids = loaded
            .keys()
            .filter(|id| params.cursor.as_ref().is_none_or(|cursor| *id > cursor))
            .cloned();
        let data: Vec<String> = ids.by_ref().take(limit).collect();
        let next_cursor = if ids.next().is_some() {
            data.last().cloned()
        } else {
            None
        };
        Ok(ThreadLoadedListResponse { data, next_cursor })
    }

    pub(super) async fn turns_list(
        &self,
        params: ThreadTurnsListParams,
    ) -> Result<ThreadTurnsListResponse, JSONRPCErrorError> {
        let (store, _) = self
            .find(&params.thread_id)
            .await?
            .ok_or_else(|| not_found(&params.thread_id))?;
        let query = TurnListQuery {
            cursor: params.cursor,
            limit: store::history_page_limit(params.limit),
            direction: params.sort_direction.unwrap_or(SortDirection::Desc),
            items_view: params.items_view.unwrap_or(TurnItemsView::Summary),
        };
        let page = store
            .list_turns(&params.thread_id, &query)
            .await
            .map_err(store_error)?;
        Ok(ThreadTurnsListResponse {
            data: page.data,
            next_cursor: page.next_cursor,
            backwards_cursor: page.backwards_cursor,
        })
    }

    pub(super) async fn name_set(&self, params: ThreadNameSetParams, id: ConnectionRequestId) {
        let name = params.name.trim().to_owned();
        let caller = id.connection_id;
        let result = async {
            if name.is_empty() {
                return Err(JSONRPCErrorError::invalid_request(
                    "thread name must not be empty",
                ));
            }
            let (store, _) = self
                .find(&params.thread_id)
                .await?
                .ok_or_else(|| not_found(&params.thread_id))?;
            let update = ThreadUpdate {
                name: Some(Some(name.clone())),
                updated_at: Some(now_secs()),
                ..ThreadUpdate::default()
            };
            store
                .update_thread(&params.thread_id, &update)
                .await
                .map_err(store_error)
        }
        .await;
        let record = match result {
            Ok(record) => record,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        let thread = self.loaded(&params.thread_id);
        if let Some(thread) = &thread {
            thread.state().record = record;
        }
        self.outgoing.send_response(id, EmptyResponse {}).await;
        let note =
            tandem_protocol::ServerNotification::ThreadNameUpdated(ThreadNameUpdatedNotification {
                thread_id: params.thread_id.clone(),
                thread_name: Some(name),
            });
        match thread {
            Some(thread) => thread.notify(&self.outgoing, note, Some(caller)).await,
            None => self.outgoing.send_notification(caller, note).await,
        }
    }

    pub(super) async fn fork(
        self: &Arc<Self>,
        params: ThreadForkParams,
        context: &RequestContext,
    ) -> Result<ThreadForkResponse, JSONRPCErrorError> {
        let Some(key) = params.idempotency_key.clone() else {
            return self.fork_thread(params, context, store::new_id()).await;
        };
        // Keys live with the source thread, in its store.
        let (store, _) = self
            .find(&params.thread_id)
            .await?
            .ok_or_else(|| not_found(&params.thread_id))?;
        let fingerprint = idempotency::fingerprint("thread/fork", &params)?;
        let exclude_turns = params.exclude_turns.unwrap_or(false);
        let scope = params.thread_id.clone();
        for _ in 0..2 {
            let thread_id = store::new_id();
            let planned = KeyedThread {
                thread_id: thread_id.clone(),
            };
            match idempotency::claim(
                &store,
                &scope,
                &key,
                "thread/fork",
                fingerprint.clone(),
                &planned,
            )
            .await?
            {
                Keyed::Claimed(claim) => {
                    let forked = self.fork_thread(params, context, thread_id).await;
                    return idempotency::release_on_error(Some(claim), forked).await;
                }
                Keyed::Replay(result) => {
                    if let Some((mut thread, session, cursor)) =
                        self.rejoin(&result, context).await?
                    {
                        if exclude_turns {
                            thread.turns.clear();
                        }
                        return Ok(ThreadForkResponse {
                            thread,
                            session,
                            cursor,
                        });
                    }
                    store
                        .release_idempotency_key(&scope, &key)
                        .await
                        .map_err(store_error)?;
                }
            }
        }
        Err(JSONRPCErrorError::internal(format!(
            "idempotency key {key:?} could not be claimed; retry"
        )))
    }

    /// `thread/fork` into a new thread with id `thread_id`.
    async fn fork_thread(
        self: &Arc<Self>,
        params: ThreadForkParams,
        context: &RequestContext,
        thread_id: String,
    ) -> Result<ThreadForkResponse, JSONRPCErrorError> {
        let (source_store, source) = self
            .find(&params.thread_id)
            .await?
            .ok_or_else(|| not_found(&params.thread_id))?;
        if let (Some(last), Some(thread)) = (&params.last_turn_id, self.loaded(&source.id))
            && thread
                .state()
                .active
                .as_ref()
                .is_some_and(|active| &active.id == last)
        {
            return Err(JSONRPCErrorError::invalid_request(format!(
                "turn {last} of thread {} is still running",
                source.id
            )));
        }
        let (_, history) = source_store
            .get_thread_with_turns(&source.id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| not_found(&source.id))?;
        let mut history =
            store::history_through(&source.id, history, params.last_turn_id.as_deref())
                .map_err(store_error)?;
        // A running turn is stored as it happens; the fork takes only turns that ended.
        history.retain(|turn| turn.status != TurnStatus::InProgress);
        let ephemeral = params.ephemeral.unwrap_or(source.ephemeral);
        let mut record = source.forked(thread_id, now_secs());
        record.ephemeral = ephemeral;
        record.source = context.session.session_source.clone();
        overrides_update(&params.overrides, &record.config)?.apply(&mut record);
        // The fork starts from a clean slate: the source's failure is not the fork's.
        record.status = ThreadStatus::Idle;
        let target = self.store_for(ephemeral).await?;
        target
            .create_leased_thread(&record, &history)
            .await
            .map_err(store_error)?;
        self.keep_leases_renewed(&*target);
        // The fork keeps the source's summary when it copied the compaction turn.
        let compaction = source_store
            .latest_compaction(&source.id)
            .await
            .map_err(store_error)?
            .filter(|compaction| history.iter().any(|turn| turn.id == compaction.turn_id));
        if let Some(compaction) = &compaction {
            target
                .put_compaction(&record.id, &compaction.turn_id, &compaction.summary)
                .await
                .map_err(store_error)?;
        }
        let thread = self.insert_loaded(record, history, ThreadStatus::Idle);
        thread.state().compaction = compaction;
        let attachment = self
            .attach_subscriber(&thread, context.id.connection_id, None)
            .await;
        let mut response = self.announce_started(&thread).await;
        if params.exclude_turns.unwrap_or(false) {
            response.thread.turns.clear();
        }
        Ok(ThreadForkResponse {
            thread: response.thread,
            session: response.session,
            cursor: attachment.map(|attachment| attachment.cursor),
        })
    }

    pub(super) async fn delete(&self, params: ThreadDeleteParams, id: ConnectionRequestId) {
        let thread_id = params.thread_id;
        let found = match self.find(&thread_id).await {
            Ok(found) => found,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        let loaded = lock(&self.loaded).remove(&thread_id);
        let Some((store, _)) = found else {
            return self.outgoing.send_error(id, not_found(&thread_id)).await;
        };
        if let Some(thread) = &loaded {
            if let Some(active) = &thread.state().active {
                active.cancel.cancel();
            }
            self.after_unload(thread).await;
        }
        let deleted = store.delete_thread(&thread_id).await;
        if let Some(thread) = &loaded {
            self.release_unless_running(thread).await;
        }
        if let Err(error) = deleted {
            return self.outgoing.send_error(id, store_error(error)).await;
        }
        self.outgoing.send_response(id, EmptyResponse {}).await;
        let note = tandem_protocol::ServerNotification::ThreadDeleted(ThreadDeletedNotification {
            thread_id,
        });
        self.outgoing.broadcast_notification(note).await;
    }
}

/// The longest tool name model APIs accept.
const MAX_TOOL_NAME_LEN: usize = 64;

/// Refuses (-32602) a dynamic tool name that model APIs would reject: they take 1 to 64
/// characters of `A-Z`, `a-z`, `0-9`, `_` and `-`, and a thread whose tool they refuse could
/// never run a turn.
fn validate_tool_name(name: &str) -> Result<(), JSONRPCErrorError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || name.len() > MAX_TOOL_NAME_LEN || !name.chars().all(allowed) {
        return Err(JSONRPCErrorError::invalid_params(format!(
            "invalid dynamic tool name {name:?}: use 1 to {MAX_TOOL_NAME_LEN} characters of \
             A-Z, a-z, 0-9, _ and -"
        )));
    }
    Ok(())
}

/// The server's working directory, the default `cwd` of a thread.
fn default_cwd() -> Result<String, JSONRPCErrorError> {
    std::env::current_dir()
        .map(|dir| dir.display().to_string())
        .map_err(|error| {
            JSONRPCErrorError::internal(format!(
                "cannot determine the server's working directory: {error}; pass cwd"
            ))
        })
}

/// The record changes that `thread/start`, `resume` and `fork` overrides ask for, for a thread
/// whose config overrides are `current_config`.
fn overrides_update(
    overrides: &ThreadOverrides,
    current_config: &serde_json::Map<String, serde_json::Value>,
) -> Result<ThreadUpdate, JSONRPCErrorError> {
    let cwd = match &overrides.cwd {
        Some(Some(cwd)) => {
            let path = std::path::Path::new(cwd);
            if !path.is_absolute() {
                return Err(JSONRPCErrorError::invalid_params(format!(
                    "cwd must be an absolute path, got {cwd}"
                )));
            }
            Some(cwd.clone())
        }
        Some(None) => Some(default_cwd()?),
        None => None,
    };
    Ok(ThreadUpdate {
        name: overrides.name.as_ref().map(|name| {
            name.as_ref()
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty())
        }),
        cwd,
        model: overrides.model.clone(),
        approval_policy: overrides
            .approval_policy
            .map(|policy| policy.unwrap_or(ApprovalPolicy::OnRequest)),
        config: config_update(overrides, current_config)?,
        ..ThreadUpdate::default()
    })
}

/// The thread's new config overrides, if `overrides` change them: its `config`, its `sandbox`
/// (kept among them, see [`crate::config::sandbox::THREAD_POLICY_KEY`]), or both.
fn config_update(
    overrides: &ThreadOverrides,
    current_config: &serde_json::Map<String, serde_json::Value>,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, JSONRPCErrorError> {
    let mut config = overrides
        .config
        .clone()
        .map(|config| config.unwrap_or_default());
    if let Some(config) = &config {
        // Checked now, so that a thread never holds sandbox keys it cannot honour.
        crate::config::sandbox::policy_from_keys(|key| config.get(key)).map_err(
            |(key, reason)| JSONRPCErrorError::invalid_params(format!("config.{key}: {reason}")),
        )?;
    }
    if let Some(mode) = overrides.sandbox {
        let mut map = config.take().unwrap_or_else(|| current_config.clone());
        crate::config::sandbox::set_thread_policy(
            &mut map,
            mode.map(tandem_protocol::SandboxMode::policy).as_ref(),
        );
        config = Some(map);
    }
    Ok(config)
}
