//! History paging (issue 16) against both stores: turn pages with their backwards cursors
//! and item views, and `thread/items/list` pages across a thread and within one turn, in
//! both directions, from cursors and from item anchors.

use std::sync::Arc;

use tandem_protocol::{
    ApprovalPolicy, SessionSource, SortDirection, ThreadItem, ThreadStatus, Turn, TurnItemsView,
    TurnStatus, UserInput,
};

use super::*;

fn record(id: &str) -> ThreadRecord {
    ThreadRecord {
        id: id.to_owned(),
        name: None,
        preview: Default::default(),
        ephemeral: false,
        created_at: 1_700_000_000,
        updated_at: 1_700_000_000,
        status: ThreadStatus::Idle,
        cwd: "/work".to_owned(),
        source: SessionSource::AppServer,
        forked_from_id: None,
        model: None,
        model_provider: "tandem".to_owned(),
        cli_version: "0".to_owned(),
        approval_policy: ApprovalPolicy::Never,
        dynamic_tools: Vec::new(),
        config: Default::default(),
        archived_at: None,
    }
}

/// Turn `n` holds `n % 4` items after its user message (turn 3 none at all, so empty turns
/// are crossed too): agent messages, the last of which the summary keeps.
fn turn(n: usize) -> Turn {
    let mut items = Vec::new();
    if n % 5 != 3 {
        items.push(ThreadItem::UserMessage {
            id: format!("user-{n}"),
            content: vec![UserInput::text(format!("request {n}"))],
            client_id: None,
        });
        for k in 0..n % 4 {
            items.push(ThreadItem::AgentMessage {
                id: format!("agent-{n}-{k}"),
                text: format!("answer {n}.{k}").into(),
            });
        }
    }
    Turn {
        id: format!("0190a000-0000-7000-8000-{n:012x}"),
        items,
        items_view: TurnItemsView::Full,
        status: TurnStatus::Completed,
        error: None,
        started_at: Some(1),
        completed_at: Some(2),
        duration_ms: Some(1),
    }
}

const TURNS: usize = 12;

async fn fixture(store: Arc<dyn ThreadStore>) -> (Arc<dyn ThreadStore>, String, Vec<Turn>) {
    let thread = record("0190a000-0000-7000-8000-0000000000aa");
    let turns: Vec<Turn> = (0..TURNS).map(turn).collect();
    store
        .create_thread(&thread, &turns[..4])
        .await
        .expect("create");
    for turn in &turns[4..] {
        store
            .commit_turn(&thread.id, turn, &ThreadUpdate::default())
            .await
            .expect("commit");
    }
    (store, thread.id, turns)
}

async fn with_both(case: impl AsyncFn(Arc<dyn ThreadStore>, String, Vec<Turn>)) {
    let (store, id, turns) = fixture(Arc::new(InMemoryThreadStore::new())).await;
    case(store, id, turns).await;
    let home = tempfile::tempdir().expect("temp dir");
    let sqlite = SqliteThreadStore::open(home.path()).await.expect("open");
    let (store, id, turns) = fixture(Arc::new(sqlite)).await;
    case(store, id, turns).await;
    if let Some(postgres) = super::tests::postgres_store().await {
        let (store, id, turns) = fixture(Arc::new(postgres)).await;
        case(store, id, turns).await;
    }
}

/// Every item of `turns` with its position, in thread order.
fn all_items(turns: &[Turn]) -> Vec<(String, usize, String)> {
    turns
        .iter()
        .flat_map(|turn| {
            turn.items
                .iter()
                .enumerate()
                .map(|(index, item)| (turn.id.clone(), index, item.id().to_owned()))
        })
        .collect()
}

fn keys(page: &Page<StoredItem>) -> Vec<(String, usize, String)> {
    page.data
        .iter()
        .map(|stored| {
            (
                stored.position.turn_id.clone(),
                stored.position.index,
                stored.item.id().to_owned(),
            )
        })
        .collect()
}

async fn walk_items(
    store: &dyn ThreadStore,
    thread: &str,
    mut query: ItemListQuery,
) -> Vec<(String, usize, String)> {
    let mut seen = Vec::new();
    for _ in 0..200 {
        let page = store.list_items(thread, &query).await.expect("page");
        assert!(page.data.len() <= query.limit.max(1));
        seen.extend(keys(&page));
        match page.next_cursor {
            Some(cursor) => query.start = ItemStart::Cursor(cursor),
            None => return seen,
        }
    }
    panic!("item paging did not end");
}

#[tokio::test]
async fn items_page_across_the_thread_both_ways() {
    with_both(async |store, thread, turns| {
        let expected = all_items(&turns);
        let reversed: Vec<_> = expected.iter().rev().cloned().collect();
        for limit in [0, 1, 2, 5, 100] {
            let asc = ItemListQuery {
                limit,
                ..ItemListQuery::default()
            };
            assert_eq!(
                walk_items(&*store, &thread, asc).await,
                expected,
                "asc {limit}"
            );
            let desc = ItemListQuery {
                limit,
                direction: SortDirection::Desc,
                ..ItemListQuery::default()
            };
            assert_eq!(
                walk_items(&*store, &thread, desc).await,
                reversed,
                "desc {limit}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn items_page_within_one_turn_and_from_an_item_anchor() {
    with_both(async |store, thread, turns| {
        let turn = &turns[7];
        let in_turn: Vec<_> = all_items(std::slice::from_ref(turn));
        let query = ItemListQuery {
            turn_id: Some(turn.id.clone()),
            limit: 1,
            ..ItemListQuery::default()
        };
        assert_eq!(walk_items(&*store, &thread, query.clone()).await, in_turn);

        // Just past `user-7`, ascending: the agent messages; descending: nothing before it.
        let after_user = ItemListQuery {
            start: ItemStart::AfterItem("user-7".to_owned()),
            limit: 10,
            ..query.clone()
        };
        let page = store.list_items(&thread, &after_user).await.expect("page");
        assert_eq!(keys(&page), in_turn[1..].to_vec());
        assert_eq!(page.next_cursor, None);
        let before_last = ItemListQuery {
            start: ItemStart::AfterItem("agent-7-2".to_owned()),
            direction: SortDirection::Desc,
            limit: 10,
            ..query.clone()
        };
        let page = store.list_items(&thread, &before_last).await.expect("page");
        let mut expected = in_turn[..3].to_vec();
        expected.reverse();
        assert_eq!(keys(&page), expected);

        let unknown = ItemListQuery {
            start: ItemStart::AfterItem("no-such-item".to_owned()),
            ..query.clone()
        };
        let error = store
            .list_items(&thread, &unknown)
            .await
            .expect_err("unknown item");
        assert!(matches!(error, StoreError::InvalidCursor(_)), "{error}");
        let no_turn = ItemListQuery {
            turn_id: Some("no-such-turn".to_owned()),
            ..ItemListQuery::default()
        };
        let error = store
            .list_items(&thread, &no_turn)
            .await
            .expect_err("unknown turn");
        assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error}");
        for cursor in ["garbage", "at:", "x/y", "/3", "no-such-turn/0"] {
            let bad = ItemListQuery {
                start: ItemStart::Cursor(cursor.to_owned()),
                ..ItemListQuery::default()
            };
            let error = store.list_items(&thread, &bad).await.expect_err(cursor);
            assert!(
                matches!(error, StoreError::InvalidCursor(_)),
                "{cursor}: {error}"
            );
        }
        let error = store
            .list_items("no-such-thread", &ItemListQuery::default())
            .await
            .expect_err("unknown thread");
        assert!(matches!(error, StoreError::ThreadNotFound(_)), "{error}");
    })
    .await;
}

#[tokio::test]
async fn backwards_cursors_start_at_the_first_entry_of_their_page() {
    with_both(async |store, thread, turns| {
        // Turns: a descending page of 3 from the newest, then its backwards cursor ascending
        // shows its first turn (the newest) again and nothing newer.
        let page = store
            .list_turns(
                &thread,
                &TurnListQuery {
                    limit: 3,
                    items_view: TurnItemsView::NotLoaded,
                    ..TurnListQuery::default()
                },
            )
            .await
            .expect("page");
        let ids: Vec<_> = page.data.iter().map(|turn| turn.id.clone()).collect();
        let newest: Vec<_> = turns
            .iter()
            .rev()
            .take(3)
            .map(|turn| turn.id.clone())
            .collect();
        assert_eq!(ids, newest);
        let back = store
            .list_turns(
                &thread,
                &TurnListQuery {
                    cursor: page.backwards_cursor.clone(),
                    direction: SortDirection::Asc,
                    ..TurnListQuery::default()
                },
            )
            .await
            .expect("backwards");
        assert_eq!(back.data, vec![turns[TURNS - 1].clone()]);
        assert_eq!(back.next_cursor, None);
        // The same cursor in the page's own direction repeats the page from its start.
        let again = store
            .list_turns(
                &thread,
                &TurnListQuery {
                    cursor: page.backwards_cursor.clone(),
                    limit: 3,
                    items_view: TurnItemsView::NotLoaded,
                    ..TurnListQuery::default()
                },
            )
            .await
            .expect("again");
        assert_eq!(again.data, page.data);

        // Items: the newest item's backwards cursor, descending, starts at that item.
        let newest_item = store
            .list_items(
                &thread,
                &ItemListQuery {
                    limit: 1,
                    direction: SortDirection::Desc,
                    ..ItemListQuery::default()
                },
            )
            .await
            .expect("newest item");
        let expected = all_items(&turns);
        assert_eq!(keys(&newest_item), vec![expected.last().unwrap().clone()]);
        let from_newest = ItemListQuery {
            start: ItemStart::Cursor(newest_item.backwards_cursor.clone().expect("cursor")),
            direction: SortDirection::Desc,
            limit: 4,
            ..ItemListQuery::default()
        };
        let mut expected_tail: Vec<_> = expected.iter().rev().take(4).cloned().collect();
        let page = store.list_items(&thread, &from_newest).await.expect("page");
        assert_eq!(keys(&page), expected_tail);
        expected_tail.reverse();
        // An empty page has no backwards cursor.
        let past_end = ItemListQuery {
            start: ItemStart::Cursor(newest_item.backwards_cursor.unwrap().replacen("at:", "", 1)),
            ..ItemListQuery::default()
        };
        let page = store.list_items(&thread, &past_end).await.expect("empty");
        assert!(page.data.is_empty());
        assert_eq!((page.next_cursor, page.backwards_cursor), (None, None));
    })
    .await;
}

#[tokio::test]
async fn turn_pages_cut_items_to_the_view() {
    with_both(async |store, thread, turns| {
        for view in [
            TurnItemsView::NotLoaded,
            TurnItemsView::Summary,
            TurnItemsView::Full,
        ] {
            let page = store
                .list_turns(
                    &thread,
                    &TurnListQuery {
                        limit: TURNS,
                        direction: SortDirection::Asc,
                        items_view: view,
                        ..TurnListQuery::default()
                    },
                )
                .await
                .expect("page");
            for (listed, stored) in page.data.iter().zip(&turns) {
                let mut expected = stored.clone();
                match view {
                    TurnItemsView::NotLoaded => expected.items.clear(),
                    TurnItemsView::Summary => {
                        // The user message and the last agent message, nothing between.
                        let last = expected.items.len().saturating_sub(1);
                        expected.items = expected
                            .items
                            .iter()
                            .enumerate()
                            .filter(|(index, _)| *index == 0 || (*index == last && last > 0))
                            .map(|(_, item)| item.clone())
                            .collect();
                    }
                    TurnItemsView::Full => {}
                }
                if view != TurnItemsView::Full {
                    expected.items_view = view;
                }
                assert_eq!(listed, &expected, "{view:?}");
            }
        }
    })
    .await;
}

#[tokio::test]
async fn memory_positions_follow_turns_that_come_and_go() {
    // The memory store's id-to-position map is rebuilt when it no longer matches: a turn
    // committed after the map was built, and a history cut short by a re-created thread.
    let store: Arc<dyn ThreadStore> = Arc::new(InMemoryThreadStore::new());
    let (store, thread, turns) = fixture(store).await;
    let first = TurnListQuery {
        cursor: Some(turns[2].id.clone()),
        direction: SortDirection::Asc,
        limit: 1,
        ..TurnListQuery::default()
    };
    let page = store.list_turns(&thread, &first).await.expect("page");
    assert_eq!(page.data[0].id, turns[3].id);
    let extra = turn(TURNS);
    store
        .commit_turn(&thread, &extra, &ThreadUpdate::default())
        .await
        .expect("commit");
    let after_new = TurnListQuery {
        cursor: Some(extra.id.clone()),
        ..TurnListQuery::default()
    };
    let page = store.list_turns(&thread, &after_new).await.expect("page");
    assert_eq!(
        page.data.first().map(|turn| &turn.id),
        Some(&turns[TURNS - 1].id)
    );
    store.delete_thread(&thread).await.expect("delete");
    store
        .create_thread(&record(&thread), &turns[5..])
        .await
        .expect("recreate");
    let page = store.list_turns(&thread, &first).await;
    assert!(
        matches!(page, Err(StoreError::InvalidCursor(_))),
        "{page:?}"
    );
    let moved = TurnListQuery {
        cursor: Some(turns[6].id.clone()),
        direction: SortDirection::Asc,
        limit: 1,
        ..TurnListQuery::default()
    };
    let page = store.list_turns(&thread, &moved).await.expect("page");
    assert_eq!(page.data[0].id, turns[7].id);
}

/// Every combination of start cursor (each turn, indexes inside and past the turn, inclusive
/// or not), turn filter and direction gives the items an independent filter of the whole
/// history gives: a cursor in another turn than the filter's, an empty turn or an index past
/// a turn's last item included.
#[tokio::test]
async fn items_page_from_any_cursor_matches_the_history() {
    with_both(async |store, thread, turns| {
        // (turn position, index, item id) in thread order.
        let history: Vec<(usize, usize, String)> = turns
            .iter()
            .enumerate()
            .flat_map(|(position, turn)| {
                turn.items
                    .iter()
                    .enumerate()
                    .map(move |(index, item)| (position, index, item.id().to_owned()))
            })
            .collect();
        let limit = 3;
        for (anchor_turn, turn) in turns.iter().enumerate() {
            for anchor_index in [0, 1, 2, 9] {
                for inclusive in [false, true] {
                    for scope in [None, Some(7)] {
                        for direction in [SortDirection::Asc, SortDirection::Desc] {
                            let prefix = if inclusive { "at:" } else { "" };
                            let cursor = format!("{prefix}{}/{anchor_index}", turn.id);
                            let anchor = (anchor_turn, anchor_index);
                            let mut expected: Vec<_> = history
                                .iter()
                                .filter(|(position, index, _)| {
                                    let at = (*position, *index);
                                    let past = match direction {
                                        SortDirection::Asc => at > anchor,
                                        SortDirection::Desc => at < anchor,
                                    };
                                    (past || (inclusive && at == anchor))
                                        && scope.is_none_or(|scope| scope == *position)
                                })
                                .map(|(position, index, id)| {
                                    (turns[*position].id.clone(), *index, id.clone())
                                })
                                .collect();
                            if direction == SortDirection::Desc {
                                expected.reverse();
                            }
                            expected.truncate(limit);
                            let query = ItemListQuery {
                                turn_id: scope.map(|position| turns[position].id.clone()),
                                start: ItemStart::Cursor(cursor.clone()),
                                limit,
                                direction,
                            };
                            let page = store.list_items(&thread, &query).await.expect("page");
                            assert_eq!(
                                keys(&page),
                                expected,
                                "{cursor} {direction:?} scope {scope:?}"
                            );
                        }
                    }
                }
            }
        }
    })
    .await;
}

/// The statements a cold resume and an open run find their rows through an index, whatever
/// the thread's length: the latest compaction starts from the thread's compactions (not from
/// its turns), and recovery reads the partial index of running turns (not every turn).
#[tokio::test]
async fn sqlite_resume_and_open_statements_search_by_index() {
    let home = tempfile::tempdir().expect("temp dir");
    let store = SqliteThreadStore::open(home.path()).await.expect("open");
    let plans = store
        .run(|connection| {
            let plan = |sql: &str| -> Result<Vec<String>, StoreError> {
                Ok(connection
                    .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?
                    .query_map(["thread"], |row| row.get::<_, String>(3))?
                    .collect::<Result<Vec<_>, _>>()?)
            };
            let unfinished = connection
                .prepare(&format!(
                    "EXPLAIN QUERY PLAN {}",
                    super::sqlite::UNFINISHED_TURNS
                ))?
                .query_map([], |row| row.get::<_, String>(3))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok((
                unfinished,
                plan(super::sqlite::LATEST_COMPACTION)?,
                plan(super::sqlite::UNFINISHED_TURNS_OF_THREAD)?,
            ))
        })
        .await
        .expect("plans");
    let (unfinished, compaction, unfinished_of_thread) = plans;
    // Every lease taken (every cold resume) reads the thread's running turns.
    assert_eq!(unfinished_of_thread.len(), 1, "{unfinished_of_thread:?}");
    assert!(
        unfinished_of_thread[0].starts_with("SEARCH turns USING")
            && unfinished_of_thread[0].contains("INDEX turns_unfinished"),
        "{unfinished_of_thread:?}"
    );
    assert_eq!(unfinished.len(), 1, "{unfinished:?}");
    assert!(
        unfinished[0].contains("USING INDEX turns_unfinished")
            || unfinished[0].contains("USING COVERING INDEX turns_unfinished"),
        "{unfinished:?}"
    );
    assert!(
        compaction[0].starts_with("SEARCH c USING"),
        "compactions drive the join: {compaction:?}"
    );
    assert!(
        compaction.iter().all(|step| !step.starts_with("SCAN")),
        "{compaction:?}"
    );
}
