//! Paging a thread's history (issue 16): the cursors of `thread/turns/list` and
//! `thread/items/list`, the item query, and how a turn's items are cut down to the view a
//! page asks for. Both stores share this so that a cursor means the same in either.
//!
//! A cursor names a position, not a row count, so a page costs what the page holds whatever
//! the thread's length: the SQLite store finds the position through its turn index, the
//! memory store through its id-to-position map.
//!
//! Cursor strings are opaque to clients. A turn cursor is the turn's id (the page starts just
//! past it, as `nextCursor` always was) or `at:<turn id>` (the page starts at it: the
//! `backwardsCursor` of a page, which with the opposite direction shows that turn again). An
//! item cursor is `<turn id>/<item index>`, or `at:` and the same for an inclusive one.

use tandem_protocol::{SortDirection, ThreadItem, Turn, TurnItemsView};

use super::{DEFAULT_PAGE_LIMIT, Page, StoreError, effective_limit};

/// The largest page a history listing returns, whatever `limit` asks: a page is built in
/// memory and sent as one message.
pub const MAX_HISTORY_PAGE_LIMIT: usize = 1000;

/// The prefix of an inclusive cursor.
const INCLUSIVE: &str = "at:";

/// Page size for a history listing: `limit` (default [`DEFAULT_PAGE_LIMIT`]) within 1 and
/// [`MAX_HISTORY_PAGE_LIMIT`].
pub fn history_page_limit(limit: Option<u32>) -> usize {
    limit
        .map_or(DEFAULT_PAGE_LIMIT, |limit| {
            usize::try_from(limit).unwrap_or(usize::MAX)
        })
        .clamp(1, MAX_HISTORY_PAGE_LIMIT)
}

/// Where a page of a history listing starts: just past a position, or at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Anchor<P> {
    /// The position.
    pub(crate) position: P,
    /// Whether the page includes the position itself.
    pub(crate) inclusive: bool,
}

/// Parses a turn cursor into the turn id it names.
pub(crate) fn parse_turn_cursor(cursor: &str) -> Result<Anchor<String>, StoreError> {
    let (id, inclusive) = match cursor.strip_prefix(INCLUSIVE) {
        Some(id) => (id, true),
        None => (cursor, false),
    };
    if id.is_empty() || id.contains('/') {
        return Err(StoreError::InvalidCursor(cursor.to_owned()));
    }
    Ok(Anchor {
        position: id.to_owned(),
        inclusive,
    })
}

/// The `nextCursor` of a page whose last turn is `turn_id`.
pub(crate) fn turn_cursor_after(turn_id: &str) -> String {
    turn_id.to_owned()
}

/// The `backwardsCursor` of a page whose first turn is `turn_id`.
pub(crate) fn turn_cursor_at(turn_id: &str) -> String {
    format!("{INCLUSIVE}{turn_id}")
}

/// An item's place in its thread: its turn and its index in that turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemPosition {
    /// The turn holding the item.
    pub turn_id: String,
    /// The item's index in the turn, from 0.
    pub index: usize,
}

/// Parses an item cursor.
pub(crate) fn parse_item_cursor(cursor: &str) -> Result<Anchor<ItemPosition>, StoreError> {
    let invalid = || StoreError::InvalidCursor(cursor.to_owned());
    let (rest, inclusive) = match cursor.strip_prefix(INCLUSIVE) {
        Some(rest) => (rest, true),
        None => (cursor, false),
    };
    let (turn_id, index) = rest.rsplit_once('/').ok_or_else(invalid)?;
    let index = index.parse::<usize>().map_err(|_| invalid())?;
    if turn_id.is_empty() {
        return Err(invalid());
    }
    Ok(Anchor {
        position: ItemPosition {
            turn_id: turn_id.to_owned(),
            index,
        },
        inclusive,
    })
}

fn item_cursor(position: &ItemPosition, inclusive: bool) -> String {
    let prefix = if inclusive { INCLUSIVE } else { "" };
    format!("{prefix}{}/{}", position.turn_id, position.index)
}

/// Where a `thread/items/list` page starts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ItemStart {
    /// At the first item in the requested order.
    #[default]
    Beginning,
    /// At a cursor string of an earlier page.
    Cursor(String),
    /// Just past the item with this id in the query's turn (the protocol's item anchor).
    AfterItem(String),
}

/// A `thread/items/list` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemListQuery {
    /// Only this turn's items; `None` for the whole thread.
    pub turn_id: Option<String>,
    /// Where the page starts.
    pub start: ItemStart,
    /// Page size; 0 counts as 1.
    pub limit: usize,
    /// Oldest or newest first.
    pub direction: SortDirection,
}

impl Default for ItemListQuery {
    fn default() -> Self {
        Self {
            turn_id: None,
            start: ItemStart::Beginning,
            limit: DEFAULT_PAGE_LIMIT,
            direction: SortDirection::Asc,
        }
    }
}

/// One item of a page, with where it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredItem {
    /// Its turn and index.
    pub position: ItemPosition,
    /// The item.
    pub item: ThreadItem,
    /// When it started and completed, as recorded.
    pub times: ItemTimes,
}

/// When an item started and completed, unix milliseconds, as the server recorded them with
/// the item ([`crate::ThreadStore::put_item`], and the input of
/// [`crate::ThreadStore::begin_turn`]). `None` where nothing was recorded: an item stored with
/// a whole turn otherwise (a fork's copy), a running item's completion, and rows written
/// before the times were kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemTimes {
    /// When the item started.
    pub started_at_ms: Option<i64>,
    /// When it completed.
    pub completed_at_ms: Option<i64>,
}

/// The page of `candidates` (filtered, past the anchor, in order; one more than the page
/// when another page follows), with both cursors.
pub(crate) fn history_page<T>(
    mut candidates: Vec<T>,
    limit: usize,
    next_of: impl Fn(&T) -> String,
    backwards_of: impl Fn(&T) -> String,
) -> Page<T> {
    let limit = effective_limit(limit);
    let more = candidates.len() > limit;
    candidates.truncate(limit);
    let next_cursor = if more {
        candidates.last().map(next_of)
    } else {
        None
    };
    let backwards_cursor = candidates.first().map(backwards_of);
    Page {
        data: candidates,
        next_cursor,
        backwards_cursor,
    }
}

/// A page of turns with its cursors.
pub(crate) fn turn_page(candidates: Vec<Turn>, limit: usize) -> Page<Turn> {
    history_page(
        candidates,
        limit,
        |turn| turn_cursor_after(&turn.id),
        |turn| turn_cursor_at(&turn.id),
    )
}

/// A page of items with its cursors.
pub(crate) fn item_page(candidates: Vec<StoredItem>, limit: usize) -> Page<StoredItem> {
    history_page(
        candidates,
        limit,
        |item| item_cursor(&item.position, false),
        |item| item_cursor(&item.position, true),
    )
}

/// Cuts `turn`'s items down to `view` and says so in `items_view`; `Full` leaves the turn
/// as stored.
pub fn apply_items_view(turn: &mut Turn, view: TurnItemsView) {
    match view {
        TurnItemsView::Full => return,
        TurnItemsView::NotLoaded => turn.items.clear(),
        TurnItemsView::Summary => turn.items = summary_items(std::mem::take(&mut turn.items)),
    }
    turn.items_view = view;
}

/// The summary of a turn's items: its first user message and its last agent message, in
/// turn order.
pub fn summary_items(items: Vec<ThreadItem>) -> Vec<ThreadItem> {
    let first_user = items
        .iter()
        .position(|item| matches!(item, ThreadItem::UserMessage { .. }));
    let last_agent = items
        .iter()
        .rposition(|item| matches!(item, ThreadItem::AgentMessage { .. }));
    items
        .into_iter()
        .enumerate()
        .filter(|(index, _)| Some(*index) == first_user || Some(*index) == last_agent)
        .map(|(_, item)| item)
        .collect()
}
