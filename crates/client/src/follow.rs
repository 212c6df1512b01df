//! Which threads a client's connection follows, and where each one's event stream stood when
//! the client last heard of it (docs/protocol.md, "Cursors and replay"): what a reconnect
//! resumes, from which cursor, and which replayed events were seen already. Kept apart from
//! routing so that the bookkeeping can be tested without a server.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use tandem_protocol::{ClientRequest, EventCursor, ThreadResumeResponse};

use crate::backend::OutgoingRequest;
use crate::connection::ReconnectStats;

/// What the client needs to know about a request before it is sent: whether it carries an
/// idempotency key, and how its success changes the connection's subscriptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestFacts {
    /// `clientUserMessageId` (`turn/start`, `turn/steer`) or `idempotencyKey`
    /// (`thread/start`, `thread/fork`): sending it again cannot act twice.
    pub(crate) keyed: bool,
    pub(crate) effect: Effect,
}

/// How a successful request changes what the connection follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    None,
    /// `thread/start`, `thread/fork`, `thread/resume`: the reply names the thread and cursor.
    Subscribes,
    /// `thread/unsubscribe` of this thread.
    Unsubscribes(String),
}

impl RequestFacts {
    /// The facts of `request`; `None` for a request that neither carries a key nor changes
    /// subscriptions (most of them: the common case costs a match).
    pub(crate) fn of(request: &OutgoingRequest) -> Option<Self> {
        let facts = match request {
            OutgoingRequest::Typed(request) => match request {
                ClientRequest::TurnStart { params, .. } => Self {
                    keyed: params.client_user_message_id.is_some(),
                    effect: Effect::None,
                },
                ClientRequest::TurnSteer { params, .. } => Self {
                    keyed: params.client_user_message_id.is_some(),
                    effect: Effect::None,
                },
                ClientRequest::ThreadStart { params, .. } => Self {
                    keyed: params.idempotency_key.is_some(),
                    effect: Effect::Subscribes,
                },
                ClientRequest::ThreadFork { params, .. } => Self {
                    keyed: params.idempotency_key.is_some(),
                    effect: Effect::Subscribes,
                },
                ClientRequest::ThreadResume { .. } => Self {
                    keyed: false,
                    effect: Effect::Subscribes,
                },
                ClientRequest::ThreadUnsubscribe { params, .. } => Self {
                    keyed: false,
                    effect: Effect::Unsubscribes(params.thread_id.clone()),
                },
                _ => return None,
            },
            OutgoingRequest::Raw(request) => {
                let params = request.params.as_ref();
                let member = |name: &str| {
                    params
                        .and_then(|params| params.get(name))
                        .is_some_and(|value| !value.is_null())
                };
                match request.method.as_str() {
                    "turn/start" | "turn/steer" => Self {
                        keyed: member("clientUserMessageId"),
                        effect: Effect::None,
                    },
                    "thread/start" | "thread/fork" => Self {
                        keyed: member("idempotencyKey"),
                        effect: Effect::Subscribes,
                    },
                    "thread/resume" => Self {
                        keyed: false,
                        effect: Effect::Subscribes,
                    },
                    "thread/unsubscribe" => Self {
                        keyed: false,
                        effect: match params
                            .and_then(|params| params.get("threadId"))
                            .and_then(Value::as_str)
                        {
                            Some(thread) => Effect::Unsubscribes(thread.to_owned()),
                            None => Effect::None,
                        },
                    },
                    _ => return None,
                }
            }
        };
        Some(facts)
    }
}

/// The members of a `thread/resume` answer that say what was replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResumeAnswer {
    pub(crate) cursor: Option<EventCursor>,
    pub(crate) gap: Option<bool>,
    pub(crate) replayed: Option<u64>,
}

impl From<&ThreadResumeResponse> for ResumeAnswer {
    fn from(response: &ThreadResumeResponse) -> Self {
        Self {
            cursor: response.cursor.clone(),
            gap: response.gap,
            replayed: response.replayed,
        }
    }
}

/// What a resume after a reconnect found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResumeOutcome {
    /// Events were missed: the followers of the thread resync from the snapshot.
    pub(crate) gap: bool,
    /// The server is another instance than the one the client last heard from.
    pub(crate) server_changed: bool,
}

/// The threads a connection follows and the last cursor seen of each.
#[derive(Debug, Default)]
pub(crate) struct Followed {
    subscribed: HashSet<String>,
    /// The newest cursor seen per thread (kept for threads not subscribed too: an event may be
    /// routed before the reply that subscribed its thread is read).
    cursors: HashMap<String, EventCursor>,
    /// The epoch of the server instance last heard from.
    epoch: Option<String>,
    pub(crate) stats: ReconnectStats,
}

impl Followed {
    /// Whether the event at `cursor` of `thread` is new (and records it); `false` for one at
    /// or before the last seen of the same server instance.
    pub(crate) fn accept(&mut self, thread: &str, cursor: &EventCursor) -> bool {
        match self.cursors.get_mut(thread) {
            Some(last) if last.epoch == cursor.epoch => {
                if cursor.seq <= last.seq {
                    self.stats.duplicates_dropped += 1;
                    return false;
                }
                last.seq = cursor.seq;
            }
            Some(last) => *last = cursor.clone(),
            None => {
                self.cursors.insert(thread.to_owned(), cursor.clone());
            }
        }
        if self.epoch.as_deref() != Some(cursor.epoch.as_str()) {
            self.epoch = Some(cursor.epoch.clone());
        }
        true
    }

    /// Records `cursor` as where `thread` stands unless a newer one of the same instance was
    /// seen already.
    fn advance(&mut self, thread: &str, cursor: &EventCursor) {
        match self.cursors.get_mut(thread) {
            Some(last) if last.epoch == cursor.epoch && last.seq >= cursor.seq => {}
            Some(last) => *last = cursor.clone(),
            None => {
                self.cursors.insert(thread.to_owned(), cursor.clone());
            }
        }
        self.epoch = Some(cursor.epoch.clone());
    }

    pub(crate) fn track_reply(&mut self, facts: &RequestFacts, value: &Value) {
        match &facts.effect {
            Effect::None => {}
            Effect::Subscribes => {
                let Some(thread) = value
                    .get("thread")
                    .and_then(|thread| thread.get("id"))
                    .and_then(Value::as_str)
                else {
                    return;
                };
                self.subscribed.insert(thread.to_owned());
                if let Some(cursor) = value
                    .get("cursor")
                    .and_then(|cursor| serde_json::from_value::<EventCursor>(cursor.clone()).ok())
                {
                    self.advance(thread, &cursor);
                }
            }
            Effect::Unsubscribes(thread) => self.forget(thread),
        }
    }

    pub(crate) fn forget(&mut self, thread: &str) {
        self.subscribed.remove(thread);
        self.cursors.remove(thread);
    }

    pub(crate) fn clear(&mut self) {
        self.subscribed.clear();
        self.cursors.clear();
    }

    /// What to resume after a reconnect: every subscribed thread, from its last cursor.
    pub(crate) fn plan(&self) -> Vec<(String, Option<EventCursor>)> {
        let mut plan: Vec<_> = self
            .subscribed
            .iter()
            .map(|thread| (thread.clone(), self.cursors.get(thread).cloned()))
            .collect();
        plan.sort_by(|a, b| a.0.cmp(&b.0));
        plan
    }

    /// Takes in the answer to a resume of `thread` after a reconnect.
    pub(crate) fn resumed(&mut self, thread: &str, response: &ResumeAnswer) -> ResumeOutcome {
        let previous_epoch = self.epoch.clone();
        let asked_from = self.cursors.get(thread).cloned();
        // No cursor to resume from (a server without cursors, or none seen) is a gap too:
        // nothing says what was missed.
        let gap = response.gap != Some(false) || asked_from.is_none();
        self.stats.replayed_events += response.replayed.unwrap_or(0);
        if gap {
            self.stats.gaps += 1;
        }
        if let Some(cursor) = &response.cursor {
            // After a gap the stream restarts here (what came before is in the snapshot); in
            // both cases live events newer than the answer may have been taken in already: they
            // are written as soon as the connection is attached, the answer after them on the
            // other lane, and moving back would replay them twice on the next resume.
            self.advance(thread, cursor);
        }
        let server_changed = match (&previous_epoch, &response.cursor) {
            (Some(before), Some(now)) => *before != now.epoch,
            _ => false,
        };
        ResumeOutcome {
            gap,
            server_changed,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tandem_protocol::{JSONRPCRequest, RequestId, TurnStartParams};

    use super::*;

    fn cursor(epoch: &str, seq: u64) -> EventCursor {
        EventCursor {
            epoch: epoch.into(),
            seq,
        }
    }

    fn resume_response(cursor: EventCursor, gap: bool, replayed: u64) -> ResumeAnswer {
        ResumeAnswer {
            cursor: Some(cursor),
            gap: Some(gap),
            replayed: Some(replayed),
        }
    }

    #[test]
    fn events_at_or_before_the_last_cursor_are_duplicates() {
        let mut followed = Followed::default();
        assert!(followed.accept("t", &cursor("e", 5)));
        assert!(followed.accept("t", &cursor("e", 6)));
        assert!(!followed.accept("t", &cursor("e", 6)), "seen");
        assert!(!followed.accept("t", &cursor("e", 3)), "older");
        assert!(followed.accept("u", &cursor("e", 1)), "threads count apart");
        // Another server instance starts its own numbering.
        assert!(followed.accept("t", &cursor("f", 2)));
        assert_eq!(followed.stats.duplicates_dropped, 2);
    }

    #[test]
    fn replies_subscribe_and_unsubscribe_and_a_resume_plans_from_the_last_cursor() {
        let mut followed = Followed::default();
        let start = RequestFacts {
            keyed: false,
            effect: Effect::Subscribes,
        };
        followed.track_reply(
            &start,
            &json!({"thread": {"id": "a"}, "cursor": {"epoch": "e", "seq": 10}}),
        );
        followed.track_reply(&start, &json!({"thread": {"id": "b"}}));
        assert!(followed.accept("a", &cursor("e", 12)));
        // A reply read after events of its thread does not move the cursor back.
        followed.track_reply(
            &start,
            &json!({"thread": {"id": "a"}, "cursor": {"epoch": "e", "seq": 11}}),
        );
        assert_eq!(
            followed.plan(),
            vec![("a".into(), Some(cursor("e", 12))), ("b".into(), None)]
        );
        followed.track_reply(
            &RequestFacts {
                keyed: false,
                effect: Effect::Unsubscribes("a".into()),
            },
            &json!({"status": "unsubscribed"}),
        );
        assert_eq!(followed.plan(), vec![("b".into(), None)]);
    }

    #[test]
    fn a_resume_reports_gaps_replays_and_a_new_server() {
        let mut followed = Followed::default();
        let start = RequestFacts {
            keyed: false,
            effect: Effect::Subscribes,
        };
        followed.track_reply(
            &start,
            &json!({"thread": {"id": "t"}, "cursor": {"epoch": "e", "seq": 1}}),
        );
        assert!(followed.accept("t", &cursor("e", 2)));
        assert!(followed.accept("t", &cursor("e", 3)));
        let outcome = followed.resumed("t", &resume_response(cursor("e", 3), false, 2));
        assert_eq!(
            outcome,
            ResumeOutcome {
                gap: false,
                server_changed: false
            }
        );
        let outcome = followed.resumed("t", &resume_response(cursor("g", 7), true, 0));
        assert_eq!(
            outcome,
            ResumeOutcome {
                gap: true,
                server_changed: true
            }
        );
        assert_eq!(followed.plan(), vec![("t".into(), Some(cursor("g", 7)))]);
        assert_eq!(
            (followed.stats.replayed_events, followed.stats.gaps),
            (2, 1)
        );
    }

    #[test]
    fn a_resume_answer_behind_live_events_already_seen_keeps_the_newer_cursor() {
        let mut followed = Followed::default();
        let start = RequestFacts {
            keyed: false,
            effect: Effect::Subscribes,
        };
        followed.track_reply(
            &start,
            &json!({"thread": {"id": "t"}, "cursor": {"epoch": "e", "seq": 1}}),
        );
        // Attached at 40 after a gap; 41 and 42 streamed live before the answer arrived.
        assert!(followed.accept("t", &cursor("e", 41)));
        assert!(followed.accept("t", &cursor("e", 42)));
        let outcome = followed.resumed("t", &resume_response(cursor("e", 40), true, 0));
        assert!(outcome.gap);
        assert_eq!(followed.plan(), vec![("t".into(), Some(cursor("e", 42)))]);
        // Same without a gap.
        assert!(followed.accept("t", &cursor("e", 43)));
        followed.resumed("t", &resume_response(cursor("e", 42), false, 0));
        assert_eq!(followed.plan(), vec![("t".into(), Some(cursor("e", 43)))]);
    }

    #[test]
    fn keys_are_found_in_typed_and_raw_requests() {
        let mut params = TurnStartParams::text("t", "hi");
        let unkeyed = OutgoingRequest::Typed(ClientRequest::TurnStart {
            request_id: RequestId::Integer(1),
            params: params.clone(),
        });
        assert_eq!(
            RequestFacts::of(&unkeyed).map(|facts| facts.keyed),
            Some(false)
        );
        params.client_user_message_id = Some("k".into());
        let keyed = OutgoingRequest::Typed(ClientRequest::TurnStart {
            request_id: RequestId::Integer(2),
            params,
        });
        assert_eq!(
            RequestFacts::of(&keyed).map(|facts| facts.keyed),
            Some(true)
        );
        let raw = |method: &str, params: Value| {
            OutgoingRequest::Raw(JSONRPCRequest {
                id: RequestId::Integer(3),
                method: method.into(),
                params: Some(params),
            })
        };
        let keyed_start = raw("thread/start", json!({"idempotencyKey": "k"}));
        assert_eq!(
            RequestFacts::of(&keyed_start),
            Some(RequestFacts {
                keyed: true,
                effect: Effect::Subscribes
            })
        );
        let null_key = raw("thread/start", json!({"idempotencyKey": null}));
        assert_eq!(
            RequestFacts::of(&null_key).map(|facts| facts.keyed),
            Some(false)
        );
        assert_eq!(RequestFacts::of(&raw("thread/read", json!({}))), None);
    }
}
