//! [`TurnHandle`]: one turn as a typed event stream with its controls (steer, interrupt), its
//! final [`Turn`] and its text. The router records the text and the completion on the
//! handle's shared state as events pass, so both are right even when the handle's queue
//! skipped deltas or overflowed.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tandem_protocol::EmptyResponse;
use tandem_protocol::{
    ErrorNotification, ServerNotification, SharedText, ThreadItem, ThreadStatus, Turn,
    TurnInterruptParams, TurnStatus, TurnSteerParams, TurnSteerResponse, UserInput,
};
use tokio::sync::Notify;

use crate::error::ClientError;
use crate::server_request::{
    ApprovalRequest, FileChangeApprovalRequest, OtherServerRequest, ServerRequestEvent,
    ServerRequestHandler, ToolCallRequest, UserInputRequest, dispatch,
};
use crate::subscription::{Event, Item, Subscription, SubscriptionError};

/// One event of a turn, in the order the server sent them.
#[derive(Debug)]
pub enum TurnEvent {
    /// `turn/started`.
    Started(Turn),
    /// A piece of the agent's text (`item/agentMessage/delta`).
    AgentText {
        /// The `agentMessage` item.
        item_id: String,
        /// Text to append (in-process, the server's own text, shared).
        delta: SharedText,
    },
    /// A piece of a command's output (`item/commandExecution/outputDelta`).
    CommandOutput {
        /// The `commandExecution` item.
        item_id: String,
        /// Output to append.
        delta: SharedText,
    },
    /// `item/started`.
    ItemStarted(ThreadItem),
    /// `item/completed`: the item in its final state.
    ItemCompleted(ThreadItem),
    /// The agent asks to run a command: accept or decline it.
    Approval(ApprovalRequest),
    /// The agent asks to write file changes (those of the `fileChange` item the request
    /// names, reported by [`TurnEvent::ItemStarted`] before): accept or decline them.
    FileChangeApproval(FileChangeApprovalRequest),
    /// The agent asks the user questions: answer them.
    Question(UserInputRequest),
    /// The agent calls a dynamic tool the client registered: reply.
    ToolCall(ToolCallRequest),
    /// A server request this crate does not type.
    OtherRequest(OtherServerRequest),
    /// `serverRequest/resolved`: a request of this turn was answered or cancelled.
    RequestResolved(tandem_protocol::RequestId),
    /// `thread/status/changed` of the turn's thread.
    Status(ThreadStatus),
    /// An `error` notification of this turn.
    Error(ErrorNotification),
    /// Best-effort events were skipped; [`TurnHandle::text`] and the completed turn are still
    /// complete.
    Lagged {
        /// How many.
        skipped: u64,
    },
    /// The client reconnected and the server could not replay what this turn sent while it
    /// was away (older than its replay window, or the server restarted): events before this
    /// point are missing. `snapshot` is the turn as the server stores it now (`None` if the
    /// snapshot does not hold it). When the turn has ended, the items it completed that this
    /// handle had not seen follow as [`TurnEvent::ItemCompleted`], then
    /// [`TurnEvent::Completed`] (a turn a server restart cut short ends `interrupted`); when it
    /// still runs, live events follow and the snapshot is what to rebuild from.
    Gap {
        /// The turn as the server has it now.
        snapshot: Option<Turn>,
    },
    /// `turn/completed`: the final turn. Nothing follows it.
    Completed(Turn),
    /// Any other notification of the turn or its thread.
    Other(ServerNotification),
}

/// What the router records for a turn handle.
#[derive(Debug)]
pub(crate) struct TurnShared {
    state: Mutex<TurnState>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct TurnState {
    /// `None` until the `turn/start` reply names the turn.
    turn_id: Option<String>,
    text: String,
    current_item: Option<String>,
    completed: Option<Turn>,
    /// A completion seen before the turn id was known; adopted if the id matches.
    early_completion: Option<Turn>,
    disconnected: Option<String>,
}

/// The agent's text of a turn: its `agentMessage` items, one per line.
fn agent_text(turn: &Turn) -> String {
    let texts: Vec<&str> = turn
        .items
        .iter()
        .filter_map(|item| match item {
            ThreadItem::AgentMessage { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

impl TurnShared {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(TurnState::default()),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TurnState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Called by the router for every notification the handle's filter matches.
    pub(crate) fn record(&self, note: &ServerNotification) {
        let mut state = self.lock();
        match note {
            ServerNotification::AgentMessageDelta(delta) => {
                if state.completed.is_some()
                    || state
                        .turn_id
                        .as_ref()
                        .is_some_and(|id| *id != delta.turn_id)
                {
                    return;
                }
                if state.current_item.as_deref() != Some(delta.item_id.as_str()) {
                    if !state.text.is_empty() {
                        state.text.push('\n');
                    }
                    state.current_item = Some(delta.item_id.clone());
                }
                state.text.push_str(&delta.delta);
            }
            ServerNotification::TurnCompleted(done) => match &state.turn_id {
                Some(id) if *id == done.turn.id => {
                    state.text = agent_text(&done.turn);
                    state.completed = Some(done.turn.clone());
                    drop(state);
                    self.changed.notify_waiters();
                }
                Some(_) => {}
                None => state.early_completion = Some(done.turn.clone()),
            },
            _ => {}
        }
    }

    pub(crate) fn set_turn_id(&self, turn_id: &str) {
        let mut state = self.lock();
        state.turn_id = Some(turn_id.to_owned());
        if let Some(turn) = state.early_completion.take()
            && turn.id == turn_id
        {
            state.text = agent_text(&turn);
            state.completed = Some(turn);
            drop(state);
            self.changed.notify_waiters();
        }
    }

    /// A gap: records the turn's final state from the snapshot `turns` if it has ended there.
    pub(crate) fn resync(&self, turns: &[Turn]) {
        let mut state = self.lock();
        if state.completed.is_some() {
            return;
        }
        let Some(id) = state.turn_id.clone() else {
            return;
        };
        if let Some(turn) = turns
            .iter()
            .find(|turn| turn.id == id && turn.status != TurnStatus::InProgress)
        {
            state.text = agent_text(turn);
            state.completed = Some(turn.clone());
            drop(state);
            self.changed.notify_waiters();
        }
    }

    pub(crate) fn disconnect(&self, reason: &str) {
        self.lock()
            .disconnected
            .get_or_insert_with(|| reason.to_owned());
        self.changed.notify_waiters();
    }

    fn text(&self) -> String {
        self.lock().text.clone()
    }

    fn completed(&self) -> Option<Turn> {
        self.lock().completed.clone()
    }

    #[cfg(test)]
    pub(crate) fn completed_for_tests(&self) -> Option<Turn> {
        self.completed()
    }

    /// Waits until the turn completed or the connection ended.
    async fn wait(&self) -> Result<Turn, String> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.lock();
                if let Some(turn) = &state.completed {
                    return Ok(turn.clone());
                }
                if let Some(reason) = &state.disconnected {
                    return Err(reason.clone());
                }
            }
            notified.await;
        }
    }
}

/// What a [`TurnHandle`] asks of the client it came from: `turn/steer`, `turn/interrupt`, and
/// the handler for the server requests it meets. Implemented by [`crate::Client`]; a trait
/// here, so that this module never reaches into the client.
pub(crate) trait TurnCalls: Send + Sync + std::fmt::Debug {
    /// `turn/steer`.
    fn steer_turn(
        &self,
        params: TurnSteerParams,
    ) -> BoxFuture<'_, Result<TurnSteerResponse, ClientError>>;
    /// `turn/interrupt`.
    fn interrupt_turn(
        &self,
        params: TurnInterruptParams,
    ) -> BoxFuture<'_, Result<EmptyResponse, ClientError>>;
    /// The client's [`ServerRequestHandler`].
    fn server_request_handler(&self) -> Arc<dyn ServerRequestHandler>;
}

/// What [`Client::start_turn`] prepares before sending `turn/start`.
#[derive(Debug)]
pub(crate) struct TurnSetup {
    pub(crate) thread_id: String,
    pub(crate) subscription: Subscription,
    pub(crate) shared: Arc<TurnShared>,
}

/// A running turn, returned by [`crate::Client::start_turn`].
///
/// The handle takes its turn's server requests: they arrive as [`TurnEvent::Approval`],
/// [`TurnEvent::FileChangeApproval`], [`TurnEvent::Question`] and [`TurnEvent::ToolCall`] for the caller to answer.
/// [`TurnHandle::wait_completed`] hands the ones it meets to the client's
/// [`crate::ServerRequestHandler`]; a request dropped unanswered (or one that arrives while
/// the handle's queue is full) gets the least-privilege answer or goes to the handler, so a
/// turn never waits for a reader that is not there.
#[derive(Debug)]
pub struct TurnHandle {
    client: Arc<dyn TurnCalls>,
    thread_id: String,
    turn: Turn,
    subscription: Subscription,
    shared: Arc<TurnShared>,
    finished: bool,
    /// Events a gap resync produced, handed out before the next queued one.
    backlog: VecDeque<TurnEvent>,
    /// Items this handle saw completed: a resync never repeats one.
    seen_completed: HashSet<String>,
}

impl TurnHandle {
    pub(crate) fn new(client: Arc<dyn TurnCalls>, setup: TurnSetup, turn: Turn) -> Self {
        setup.shared.set_turn_id(&turn.id);
        Self {
            client,
            thread_id: setup.thread_id,
            turn,
            subscription: setup.subscription,
            shared: setup.shared,
            finished: false,
            backlog: VecDeque::new(),
            seen_completed: HashSet::new(),
        }
    }

    /// The turn id.
    pub fn id(&self) -> &str {
        &self.turn.id
    }

    /// The turn's thread.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// The turn as the `turn/start` reply described it (in progress, no items).
    pub fn started(&self) -> &Turn {
        &self.turn
    }

    /// The agent's text: what has streamed so far while the turn runs, and the text of the
    /// completed turn's `agentMessage` items once it is done (so a skipped delta never leaves a
    /// hole). Messages are separated by a newline.
    pub fn text(&self) -> String {
        self.shared.text()
    }

    /// The final turn, once `turn/completed` has arrived (whether or not it was read).
    pub fn completed(&self) -> Option<Turn> {
        self.shared.completed()
    }

    /// The next event of the turn; `None` after [`TurnEvent::Completed`]. `Some(Err(..))` if
    /// the handle's queue overflowed on a guaranteed event or the connection ended; the turn's
    /// completion can still be awaited with [`Self::wait_completed`] after an overflow.
    pub async fn next_event(&mut self) -> Option<Result<TurnEvent, SubscriptionError>> {
        if self.finished {
            return None;
        }
        loop {
            let event = match self.backlog.pop_front() {
                Some(event) => Some(event),
                None => {
                    let item = match self.subscription.next_item().await? {
                        Ok(item) => item,
                        Err(error) => return Some(Err(error)),
                    };
                    self.convert(item)
                }
            };
            if let Some(event) = event {
                match &event {
                    TurnEvent::Completed(_) => {
                        self.finished = true;
                        self.backlog.clear();
                    }
                    TurnEvent::ItemCompleted(item) => {
                        self.seen_completed.insert(item.id().to_owned());
                    }
                    _ => {}
                }
                return Some(Ok(event));
            }
        }
    }

    /// The events a gap in the stream turns into: the gap itself, then, if the turn has
    /// ended in the snapshot, the items this handle did not see complete and the end.
    fn resync(&mut self, turns: Vec<Turn>) -> TurnEvent {
        let snapshot = turns.into_iter().find(|turn| turn.id == self.turn.id);
        if let Some(turn) = &snapshot
            && turn.status != TurnStatus::InProgress
        {
            for item in &turn.items {
                if !self.seen_completed.contains(item.id()) {
                    self.backlog
                        .push_back(TurnEvent::ItemCompleted(item.clone()));
                }
            }
            self.backlog.push_back(TurnEvent::Completed(turn.clone()));
        }
        TurnEvent::Gap { snapshot }
    }

    /// Converts a queued item into a turn event; `None` for what belongs to another turn.
    fn convert(&mut self, item: Item) -> Option<TurnEvent> {
        let note = match item {
            Item::Request(ServerRequestEvent::Approval(request)) => {
                return Some(TurnEvent::Approval(request));
            }
            Item::Request(ServerRequestEvent::FileChangeApproval(request)) => {
                return Some(TurnEvent::FileChangeApproval(request));
            }
            Item::Request(ServerRequestEvent::UserInput(request)) => {
                return Some(TurnEvent::Question(request));
            }
            Item::Request(ServerRequestEvent::ToolCall(request)) => {
                return Some(TurnEvent::ToolCall(request));
            }
            Item::Request(ServerRequestEvent::Other(request)) => {
                return Some(TurnEvent::OtherRequest(request));
            }
            Item::Event(Event::Lagged { skipped }) => return Some(TurnEvent::Lagged { skipped }),
            Item::Event(Event::ServerRequest(_) | Event::ProcessGap { .. }) => return None,
            Item::Event(Event::Gap { turns, .. }) => return Some(self.resync(turns)),
            Item::Event(Event::Notification(note)) => note,
        };
        if note.turn_id().is_some_and(|turn| turn != self.turn.id) {
            return None;
        }
        Some(match note {
            ServerNotification::TurnStarted(started) => TurnEvent::Started(started.turn),
            ServerNotification::TurnCompleted(done) => TurnEvent::Completed(done.turn),
            ServerNotification::AgentMessageDelta(delta) => TurnEvent::AgentText {
                item_id: delta.item_id,
                delta: delta.delta,
            },
            ServerNotification::CommandExecutionOutputDelta(delta) => TurnEvent::CommandOutput {
                item_id: delta.item_id,
                delta: delta.delta,
            },
            ServerNotification::ItemStarted(started) => TurnEvent::ItemStarted(started.item),
            ServerNotification::ItemCompleted(done) => TurnEvent::ItemCompleted(done.item),
            ServerNotification::ServerRequestResolved(resolved) => {
                TurnEvent::RequestResolved(resolved.request_id)
            }
            ServerNotification::ThreadStatusChanged(changed) => TurnEvent::Status(changed.status),
            ServerNotification::Error(error) => TurnEvent::Error(error),
            other => TurnEvent::Other(other),
        })
    }

    /// Adds `input` to this turn (`turn/steer`).
    pub async fn steer(&self, input: Vec<UserInput>) -> Result<TurnSteerResponse, ClientError> {
        self.client
            .steer_turn(TurnSteerParams::new(&self.thread_id, &self.turn.id, input))
            .await
    }

    /// Adds one text input to this turn.
    pub async fn steer_text(
        &self,
        text: impl Into<SharedText>,
    ) -> Result<TurnSteerResponse, ClientError> {
        self.steer(vec![UserInput::text(text)]).await
    }

    /// Stops the turn (`turn/interrupt`); resolves once it has stopped. Its completion (status
    /// `interrupted`) follows on the event stream.
    pub async fn interrupt(&self) -> Result<(), ClientError> {
        self.client
            .interrupt_turn(TurnInterruptParams::new(&self.thread_id, &self.turn.id))
            .await
            .map(|_| ())
    }

    /// Reads the turn to its end and returns the final turn, whose items are complete even if
    /// deltas were skipped on the way. Server requests met on the way go to the client's
    /// [`crate::ServerRequestHandler`], each on a task of its own.
    pub async fn wait_completed(mut self) -> Result<Turn, ClientError> {
        let handler = self.client.server_request_handler();
        while !self.finished {
            match self.next_event().await {
                Some(Ok(TurnEvent::Completed(turn))) => return Ok(turn),
                Some(Ok(event)) => {
                    let request = match event {
                        TurnEvent::Approval(request) => ServerRequestEvent::Approval(request),
                        TurnEvent::FileChangeApproval(request) => {
                            ServerRequestEvent::FileChangeApproval(request)
                        }
                        TurnEvent::Question(request) => ServerRequestEvent::UserInput(request),
                        TurnEvent::ToolCall(request) => ServerRequestEvent::ToolCall(request),
                        TurnEvent::OtherRequest(request) => ServerRequestEvent::Other(request),
                        _ => continue,
                    };
                    let handler = handler.clone();
                    tokio::spawn(async move { dispatch(handler.as_ref(), request).await });
                }
                // The queue gave up or the stream ended; the completion is still recorded.
                Some(Err(_)) | None => break,
            }
        }
        self.shared
            .wait()
            .await
            .map_err(|reason| ClientError::Disconnected {
                method: "turn/start".into(),
                sent: true,
                reason: format!("the turn's completion never arrived: {reason}"),
            })
    }
}
