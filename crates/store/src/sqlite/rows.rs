//! SQLite rows to values: a `threads` row read into a [`RawThread`], turns and attachments.

use super::*;

impl RawThread {
    /// Reads a row selected with [`THREAD_COLUMNS`].
    pub(super) fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            name: row.get(1)?,
            preview: row.get(2)?,
            ephemeral: row.get(3)?,
            created_at: row.get(4)?,
            updated_at: row.get(5)?,
            status: row.get(6)?,
            cwd: row.get(7)?,
            source: row.get(8)?,
            forked_from_id: row.get(9)?,
            model: row.get(10)?,
            model_provider: row.get(11)?,
            cli_version: row.get(12)?,
            approval_policy: row.get(13)?,
            dynamic_tools: row.get(14)?,
            config: row.get(15)?,
            archived_at: row.get(16)?,
        })
    }
}

/// A `turns` row as stored, before its items are loaded.
pub(super) struct RawTurn {
    id: String,
    status: String,
    items_view: String,
    error: Option<String>,
    started_at: Option<i64>,
    completed_at: Option<i64>,
    duration_ms: Option<i64>,
}

impl RawTurn {
    /// Reads a row selected with [`TURN_COLUMNS`].
    pub(super) fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            status: row.get(1)?,
            items_view: row.get(2)?,
            error: row.get(3)?,
            started_at: row.get(4)?,
            completed_at: row.get(5)?,
            duration_ms: row.get(6)?,
        })
    }

    /// Decodes the row and loads as much of the turn's items as `view` shows (none for
    /// `notLoaded`, so a page of bare turns reads no item).
    pub(super) fn load_view(
        self,
        connection: &Connection,
        thread_id: &str,
        view: TurnItemsView,
    ) -> Result<Turn, StoreError> {
        let id = self.id;
        let what = |member: &str| format!("{member} of turn {id} in thread {thread_id}");
        let items = if view == TurnItemsView::NotLoaded {
            Vec::new()
        } else {
            let mut statement = connection.prepare_cached(
                "SELECT idx, item FROM items WHERE thread_id = ?1 AND turn_id = ?2 ORDER BY idx",
            )?;
            statement
                .query_map(params![thread_id, id], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
                })?
                .map(|row| {
                    let (index, item) = row?;
                    decode(&item, || what(&format!("item {index}")))
                })
                .collect::<Result<Vec<_>, StoreError>>()?
        };
        let mut turn = Turn {
            items,
            status: decode_word(self.status, || what("status"))?,
            items_view: decode_word(self.items_view, || what("itemsView"))?,
            error: self
                .error
                .map(|error| decode(&error, || what("error")))
                .transpose()?,
            started_at: self.started_at,
            completed_at: self.completed_at,
            duration_ms: self.duration_ms,
            id,
        };
        paging::apply_items_view(&mut turn, view);
        Ok(turn)
    }
}

pub(super) fn attachment_from_row(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<(ThreadAttachment, String)> {
    Ok((
        ThreadAttachment {
            id: row.get(0)?,
            attachment_type: row.get(1)?,
            identity_key: row.get(2)?,
            payload: Value::Null,
            created_at: row.get(4)?,
        },
        row.get(3)?,
    ))
}

/// Fills in the payload read beside an attachment by [`attachment_from_row`].
pub(super) fn decode_attachment(
    (mut attachment, payload): (ThreadAttachment, String),
    thread_id: &str,
) -> Result<ThreadAttachment, StoreError> {
    attachment.payload = decode(&payload, || {
        format!(
            "payload of attachment {} in thread {thread_id}",
            attachment.id
        )
    })?;
    Ok(attachment)
}
