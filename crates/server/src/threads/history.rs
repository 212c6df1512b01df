//! Paging a thread's history (issue 16, docs/protocol.md "Paging a thread's history"):
//! `thread/items/list`, the page and cursors `thread/resume` returns, and loading a loaded
//! thread's full history only when something needs all of it.
//!
//! A resume that pages (`excludeTurns` or `initialTurnsPage`) loads only the thread's record:
//! the turns stay in the store until a turn starts (the agent needs the whole history then) or
//! a client asks for every turn, so resuming a thread of 100 000 turns costs what resuming one
//! of 10 does.

use std::sync::Arc;

use tandem_protocol::{
    JSONRPCErrorError, SortDirection, ThreadItemEntry, ThreadItemsListCursor,
    ThreadItemsListParams, ThreadItemsListResponse, ThreadResumeInitialTurnsPageParams,
    TurnItemsView, TurnsPage,
};

use crate::store::{self, ItemListQuery, ItemStart, ThreadStore, TurnListQuery};

use super::{LoadedThread, ThreadService, not_found, store_error};

impl ThreadService {
    /// Loads `thread`'s turns from `store` into its history unless they are there already.
    /// Called before a turn starts (the agent sees the whole history) and before answering
    /// with every turn; both run in the thread's request order, so no turn ends meanwhile.
    pub(super) async fn ensure_history(
        &self,
        thread: &Arc<LoadedThread>,
        store: &dyn ThreadStore,
    ) -> Result<(), JSONRPCErrorError> {
        if thread.state().history_loaded {
            return Ok(());
        }
        let (_, turns) = store
            .get_thread_with_turns(&thread.id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| not_found(&thread.id))?;
        let mut state = thread.state();
        if !state.history_loaded {
            state.history = turns;
            state.history_loaded = true;
        }
        Ok(())
    }

    /// The `thread/turns/list` page that `thread/resume.initialTurnsPage` asks for.
    pub(super) async fn initial_turns_page(
        &self,
        store: &dyn ThreadStore,
        thread_id: &str,
        params: ThreadResumeInitialTurnsPageParams,
    ) -> Result<TurnsPage, JSONRPCErrorError> {
        let query = TurnListQuery {
            cursor: None,
            limit: store::history_page_limit(params.limit),
            direction: params.sort_direction.unwrap_or(SortDirection::Desc),
            items_view: params.items_view.unwrap_or(TurnItemsView::Summary),
        };
        let page = store
            .list_turns(thread_id, &query)
            .await
            .map_err(store_error)?;
        Ok(TurnsPage {
            data: page.data,
            next_cursor: page.next_cursor,
            backwards_cursor: page.backwards_cursor,
        })
    }

    /// `thread/resume`'s `turnsBackwardsCursor` and `itemsBackwardsCursor`: with
    /// `sortDirection: "desc"`, their first pages start at the newest turn and the newest
    /// item. Each is one indexed read of one row.
    pub(super) async fn backwards_cursors(
        &self,
        store: &dyn ThreadStore,
        thread_id: &str,
    ) -> Result<(Option<String>, Option<String>), JSONRPCErrorError> {
        let newest_turn = TurnListQuery {
            cursor: None,
            limit: 1,
            direction: SortDirection::Desc,
            items_view: TurnItemsView::NotLoaded,
        };
        let turns = store
            .list_turns(thread_id, &newest_turn)
            .await
            .map_err(store_error)?;
        let newest_item = ItemListQuery {
            limit: 1,
            direction: SortDirection::Desc,
            ..ItemListQuery::default()
        };
        let items = store
            .list_items(thread_id, &newest_item)
            .await
            .map_err(store_error)?;
        Ok((turns.backwards_cursor, items.backwards_cursor))
    }

    pub(super) async fn items_list(
        &self,
        params: ThreadItemsListParams,
    ) -> Result<ThreadItemsListResponse, JSONRPCErrorError> {
        let start = match params.cursor {
            None => ItemStart::Beginning,
            Some(ThreadItemsListCursor::Cursor(cursor)) => ItemStart::Cursor(cursor),
            Some(ThreadItemsListCursor::Anchor(anchor)) => {
                if params.turn_id.as_deref().is_none_or(str::is_empty) {
                    return Err(JSONRPCErrorError::invalid_params(
                        "turnId is required when cursor is an item anchor",
                    ));
                }
                match anchor {
                    tandem_protocol::ThreadItemsListAnchor::Item { item_id } => {
                        ItemStart::AfterItem(item_id)
                    }
                }
            }
        };
        let (store, _) = self
            .find(&params.thread_id)
            .await?
            .ok_or_else(|| not_found(&params.thread_id))?;
        let query = ItemListQuery {
            turn_id: params.turn_id,
            start,
            limit: store::history_page_limit(params.limit),
            direction: params.sort_direction.unwrap_or(SortDirection::Asc),
        };
        let page = store
            .list_items(&params.thread_id, &query)
            .await
            .map_err(store_error)?;
        Ok(ThreadItemsListResponse {
            data: page
                .data
                .into_iter()
                .map(|stored| ThreadItemEntry {
                    turn_id: stored.position.turn_id,
                    item: stored.item,
                    started_at_ms: stored.times.started_at_ms,
                    completed_at_ms: stored.times.completed_at_ms,
                })
                .collect(),
            next_cursor: page.next_cursor,
            backwards_cursor: page.backwards_cursor,
        })
    }
}
