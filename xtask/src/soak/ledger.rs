//! The ledger of acknowledged work: every thread a `thread/start` or `thread/fork` answered,
//! every turn a `turn/start` answered (with its input and idempotency key), the status each
//! `turn/completed` told and every item an `item/completed` reported. After every restart and
//! at the end of a phase, the store is read back through a server and compared with it
//! (docs/protocol.md, "Durability of turns"): nothing acknowledged may be missing or differ.
//!
//! Items are kept as a digest of their JSON (a long run acknowledges tens of thousands), and
//! a read-back after a restart reads the threads that changed since the previous one and a
//! seeded sample of the others; the read-back at the end of a phase reads every thread.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::sync::atomic::Ordering;

use rand::rngs::StdRng;
use rand::seq::IteratorRandom as _;

use tandem_client::Client;
use tandem_protocol::client_methods::ThreadRead;
use tandem_protocol::{Thread, ThreadItem, ThreadReadParams, Turn, TurnStatus, UserInput};

use super::record::Counters;

/// What was acknowledged about one turn.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnFacts {
    /// The text input `turn/start` sent (`None` for a compaction turn, which has none).
    pub(crate) input: Option<String>,
    /// The `clientUserMessageId` it carried.
    pub(crate) key: Option<String>,
    /// The status `turn/completed` told, once it arrived.
    pub(crate) told: Option<TurnStatus>,
    /// Every item `item/completed` reported: its id and the digest of its JSON.
    pub(crate) items: BTreeMap<String, u64>,
}

/// What was acknowledged about one thread.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadFacts {
    /// Its turns, by id.
    pub(crate) turns: BTreeMap<String, TurnFacts>,
    /// The ledger's change count when it last changed.
    changed: u64,
}

/// Every acknowledged thread, by id.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ledger {
    threads: BTreeMap<String, ThreadFacts>,
    /// One more per change.
    changes: u64,
}

/// Which threads a read-back reads.
#[derive(Debug)]
pub(crate) enum Selection<'a> {
    /// Every thread.
    All,
    /// Those changed since `since` (a [`Ledger::changes`] value), and `sample` of the others.
    Recent {
        /// The change count of the previous read-back.
        since: u64,
        /// How many unchanged threads to read too.
        sample: usize,
        /// Draws them.
        rng: &'a mut StdRng,
    },
}

/// What a read-back found.
#[derive(Debug, Default)]
pub(crate) struct CheckOutcome {
    /// What is missing or differs.
    pub(crate) problems: Vec<String>,
    /// Turns told `failed` that the store still holds `inProgress`: their final write was
    /// refused (a full disk) and the server that ran them owes it; docs/reliability.md allows
    /// this while the disk is full, and the disk fault checks it is gone soon after.
    pub(crate) pending: usize,
}

/// The digest of an item's JSON.
pub(crate) fn digest(item: &ThreadItem) -> u64 {
    let mut hasher = DefaultHasher::new();
    serde_json::to_string(item)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

impl Ledger {
    /// A `thread/start` or `thread/fork` was answered with `thread`.
    pub(crate) fn thread(&mut self, thread: &str) {
        self.touch(thread);
    }

    /// The change count so far.
    pub(crate) fn changes(&self) -> u64 {
        self.changes
    }

    fn touch(&mut self, thread: &str) -> &mut ThreadFacts {
        self.changes += 1;
        let facts = self.threads.entry(thread.to_owned()).or_default();
        facts.changed = self.changes;
        facts
    }

    /// A `turn/start` was answered (or a compaction turn started).
    pub(crate) fn turn_started(
        &mut self,
        thread: &str,
        turn: &str,
        input: Option<String>,
        key: Option<String>,
    ) {
        let facts = self.turn_entry(thread, turn);
        facts.input = input;
        facts.key = key;
    }

    /// An `item/completed` of `turn` arrived.
    pub(crate) fn item_completed(&mut self, thread: &str, turn: &str, item: &ThreadItem) {
        self.turn_entry(thread, turn)
            .items
            .insert(item.id().to_owned(), digest(item));
    }

    /// The `turn/completed` of `turn` arrived.
    pub(crate) fn turn_completed(&mut self, thread: &str, turn: &Turn) {
        self.turn_entry(thread, &turn.id).told = Some(turn.status);
    }

    fn turn_entry(&mut self, thread: &str, turn: &str) -> &mut TurnFacts {
        self.touch(thread).turns.entry(turn.to_owned()).or_default()
    }

    /// How many threads and turns it holds.
    pub(crate) fn size(&self) -> (usize, usize) {
        let turns = self.threads.values().map(|t| t.turns.len()).sum();
        (self.threads.len(), turns)
    }

    /// The ids of the threads `selection` names.
    fn select(&self, selection: Selection<'_>) -> Vec<String> {
        match selection {
            Selection::All => self.threads.keys().cloned().collect(),
            Selection::Recent { since, sample, rng } => {
                let (mut recent, older): (Vec<_>, Vec<_>) = self
                    .threads
                    .iter()
                    .partition(|(_, facts)| facts.changed > since);
                recent.extend(older.into_iter().choose_multiple(rng, sample));
                recent.into_iter().map(|(id, _)| id.clone()).collect()
            }
        }
    }

    /// Reads the `selection` of threads back through `client` and compares.
    pub(crate) async fn check(
        &self,
        client: &Client,
        counters: &Counters,
        selection: Selection<'_>,
    ) -> CheckOutcome {
        let mut outcome = CheckOutcome::default();
        counters.ledger_checks.fetch_add(1, Ordering::Relaxed);
        for id in self.select(selection) {
            let facts = &self.threads[&id];
            counters.request();
            let read = client
                .call::<ThreadRead>(ThreadReadParams::new(&id).include_turns(true))
                .await;
            match read {
                Ok(read) => {
                    counters
                        .turns_checked
                        .fetch_add(facts.turns.len() as u64, Ordering::Relaxed);
                    let (problems, pending) = compare(&id, facts, &read.thread);
                    outcome.problems.extend(problems);
                    outcome.pending += pending;
                }
                Err(error) => outcome.problems.push(format!(
                    "acknowledged thread {id} cannot be read back: {error}"
                )),
            }
        }
        outcome
    }
}

/// The text of a turn's first `userMessage`, and the `clientId`s of all of them.
fn user_input(turn: &Turn) -> (Option<String>, Vec<String>) {
    let mut text = None;
    let mut keys = Vec::new();
    for item in &turn.items {
        if let ThreadItem::UserMessage {
            content, client_id, ..
        } = item
        {
            if text.is_none() {
                text = Some(
                    content
                        .iter()
                        .filter_map(|input| match input {
                            UserInput::Text { text, .. } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
            }
            keys.extend(client_id.clone());
        }
    }
    (text, keys)
}

/// Compares what was acknowledged about thread `id` with the stored `thread` (read with
/// every turn): the problems, and how many turns told `failed` are still `inProgress`
/// ([`CheckOutcome::pending`]). Pure.
pub(crate) fn compare(id: &str, facts: &ThreadFacts, thread: &Thread) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut pending = 0;
    let stored: BTreeMap<&str, &Turn> = thread.turns.iter().map(|t| (t.id.as_str(), t)).collect();
    for (turn_id, turn) in &facts.turns {
        let Some(stored_turn) = stored.get(turn_id.as_str()) else {
            problems.push(format!(
                "thread {id}: acknowledged turn {turn_id} is not in the store"
            ));
            continue;
        };
        let (text, _) = user_input(stored_turn);
        if let Some(input) = &turn.input
            && text.as_deref() != Some(input.as_str())
        {
            problems.push(format!(
                "thread {id}, turn {turn_id}: stored input {text:?} is not the input sent, {input:?}"
            ));
        }
        if let Some(told) = turn.told {
            // A turn told `failed` reads back `interrupted` when the store could not take its
            // last write (docs/reliability.md, "Turns and the store").
            let agrees = stored_turn.status == told
                || (told == TurnStatus::Failed && stored_turn.status == TurnStatus::Interrupted);
            if told == TurnStatus::Failed && stored_turn.status == TurnStatus::InProgress {
                pending += 1;
            } else if !agrees {
                problems.push(format!(
                    "thread {id}, turn {turn_id}: turn/completed said {told:?}, the store says {:?}",
                    stored_turn.status
                ));
            }
        }
        for (item_id, reported) in &turn.items {
            match stored_turn.items.iter().find(|i| i.id() == item_id) {
                None => problems.push(format!(
                    "thread {id}, turn {turn_id}: item {item_id} reported completed is not in the store"
                )),
                Some(stored_item) if digest(stored_item) != *reported => problems.push(format!(
                    "thread {id}, turn {turn_id}: item {item_id} differs from its item/completed: \
                     stored {stored_item:?}"
                )),
                Some(_) => {}
            }
        }
        if let Some(key) = &turn.key {
            let holders: Vec<&str> = thread
                .turns
                .iter()
                .filter(|t| user_input(t).1.contains(key))
                .map(|t| t.id.as_str())
                .collect();
            if holders != [turn_id.as_str()] {
                problems.push(format!(
                    "thread {id}: clientUserMessageId {key} should be on turn {turn_id} alone, \
                     the store has it on {holders:?}"
                ));
            }
        }
    }
    (problems, pending)
}

#[cfg(test)]
pub(crate) mod tests {
    use tandem_protocol::TurnItemsView;

    use super::*;

    fn user(id: &str, text: &str, key: Option<&str>) -> ThreadItem {
        ThreadItem::UserMessage {
            id: id.into(),
            content: vec![UserInput::text(text)],
            client_id: key.map(str::to_owned),
        }
    }

    fn agent(id: &str, text: &str) -> ThreadItem {
        ThreadItem::AgentMessage {
            id: id.into(),
            text: text.into(),
        }
    }

    /// A turn for tests, `items` complete.
    pub(crate) fn turn(id: &str, status: TurnStatus, items: Vec<ThreadItem>) -> Turn {
        Turn {
            id: id.into(),
            items,
            items_view: TurnItemsView::Full,
            status,
            error: None,
            started_at: None,
            completed_at: None,
            duration_ms: None,
        }
    }

    fn thread(turns: Vec<Turn>) -> Thread {
        let mut thread: Thread = serde_json::from_value(serde_json::json!({
            "id": "t", "sessionId": "t", "name": null, "preview": "", "ephemeral": false,
            "createdAt": 0, "updatedAt": 0, "status": {"type": "idle"}, "cwd": "/",
            "source": "vscode", "forkedFromId": null, "model": null, "modelProvider": "tandem",
            "cliVersion": "0", "projectId": null, "turns": []
        }))
        .expect("a thread");
        thread.turns = turns;
        thread
    }

    fn ledger() -> Ledger {
        let mut ledger = Ledger::default();
        ledger.thread("t");
        ledger.turn_started("t", "a", Some("hello".into()), Some("k1".into()));
        ledger.item_completed("t", "a", &user("a-u", "hello", Some("k1")));
        ledger.item_completed("t", "a", &agent("a-m", "You said hello"));
        ledger.turn_completed("t", &turn("a", TurnStatus::Completed, vec![]));
        ledger.turn_started("t", "b", Some("/fail x".into()), None);
        ledger.turn_completed("t", &turn("b", TurnStatus::Failed, vec![]));
        // Answered, never completed (the server was killed).
        ledger.turn_started("t", "c", Some("/sleep 9".into()), None);
        ledger
    }

    fn stored() -> Vec<Turn> {
        vec![
            turn(
                "a",
                TurnStatus::Completed,
                vec![
                    user("a-u", "hello", Some("k1")),
                    agent("a-m", "You said hello"),
                ],
            ),
            turn("b", TurnStatus::Failed, vec![user("b-u", "/fail x", None)]),
            turn(
                "c",
                TurnStatus::Interrupted,
                vec![user("c-u", "/sleep 9", None)],
            ),
        ]
    }

    fn problems(turns: Vec<Turn>) -> Vec<String> {
        let (problems, pending) = compare("t", &ledger().threads["t"], &thread(turns));
        assert_eq!(pending, 0);
        problems
    }

    #[test]
    fn a_store_holding_everything_acknowledged_passes() {
        assert_eq!(problems(stored()), Vec::<String>::new());
        // A turn told failed may read back interrupted.
        let mut turns = stored();
        turns[1].status = TurnStatus::Interrupted;
        assert_eq!(problems(turns), Vec::<String>::new());
        // Still inProgress (its final write refused, not recovered yet): pending, not lost.
        let mut turns = stored();
        turns[1].status = TurnStatus::InProgress;
        assert_eq!(
            compare("t", &ledger().threads["t"], &thread(turns)),
            (Vec::new(), 1)
        );
        // A turn told completed may not be.
        let mut turns = stored();
        turns[0].status = TurnStatus::InProgress;
        assert_eq!(
            compare("t", &ledger().threads["t"], &thread(turns)).0.len(),
            1
        );
    }

    #[test]
    fn a_recent_selection_reads_the_changed_threads_and_a_sample() {
        use rand::SeedableRng as _;
        let mut ledger = Ledger::default();
        for n in 0..10 {
            ledger.thread(&format!("old{n}"));
        }
        let since = ledger.changes();
        ledger.turn_started("old3", "x", None, None);
        ledger.thread("new");
        let mut rng = StdRng::seed_from_u64(1);
        let selection = Selection::Recent {
            since,
            sample: 2,
            rng: &mut rng,
        };
        let chosen = ledger.select(selection);
        assert_eq!(chosen.len(), 4, "{chosen:?}");
        assert!(chosen.contains(&"old3".to_owned()) && chosen.contains(&"new".to_owned()));
        assert_eq!(ledger.select(Selection::All).len(), 11);
    }

    #[test]
    fn a_lost_turn_or_item_is_found() {
        let mut turns = stored();
        turns.remove(2);
        let found = problems(turns);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("turn c is not in the store"), "{found:?}");

        let mut turns = stored();
        turns[0].items.pop();
        let found = problems(turns);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("item a-m reported completed"),
            "{found:?}"
        );
    }

    #[test]
    fn a_changed_item_status_or_input_is_found() {
        let mut turns = stored();
        turns[0].items[1] = agent("a-m", "You said something else");
        assert!(problems(turns)[0].contains("differs"));

        let mut turns = stored();
        turns[0].status = TurnStatus::Interrupted;
        assert!(problems(turns)[0].contains("turn/completed said Completed"));

        let mut turns = stored();
        turns[2].items[0] = user("c-u", "/sleep 1", None);
        assert!(problems(turns)[0].contains("is not the input sent"));
    }

    #[test]
    fn an_idempotency_key_on_two_turns_is_found() {
        let mut turns = stored();
        turns.push(turn(
            "d",
            TurnStatus::Completed,
            vec![user("d-u", "hello", Some("k1"))],
        ));
        let found = problems(turns);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("k1"), "{found:?}");
    }
}
