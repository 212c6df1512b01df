//! The compaction turn of `thread/compact/start`: the driver reports a `contextCompaction`
//! item around the agent's summary, stores the summary before the item completes (so
//! "completed" means a restart still sends the summary), then sends `thread/compacted`.

use tandem_protocol::{ContextCompactedNotification, ServerNotification, ThreadItem, Turn};

use crate::agent::{Agent, AgentError, TurnDriver};
use crate::store::Compaction;

use super::TurnRun;

/// Runs a compaction on `driver`'s turn: asks `agent` to summarize `history`, stores the
/// summary and reports the `contextCompaction` item and `thread/compacted`.
pub(crate) async fn compact(
    driver: &mut TurnDriver,
    agent: &dyn Agent,
    history: &[Turn],
) -> Result<(), AgentError> {
    let run = TurnRun::of(driver);
    let item = ThreadItem::ContextCompaction {
        id: format!("{}-compaction", run.turn_id),
    };
    run.item_started(&item).await;
    let summary = agent.compact(history, driver).await?;
    TurnRun::of(driver).store_compaction(item, summary).await
}

impl TurnRun {
    /// After the agent's summary: stores it, then completes `item` and sends
    /// `thread/compacted`; a store failure ends the turn instead.
    async fn store_compaction(
        &mut self,
        item: ThreadItem,
        summary: String,
    ) -> Result<(), AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        if let Err(error) = self
            .store
            .put_compaction(&self.thread.id, &self.turn_id, &summary)
            .await
        {
            self.fail_on_store(&error);
            return Ok(());
        }
        self.item_completed(item).await;
        if self.has_failed() {
            return Ok(());
        }
        self.thread.state().compaction = Some(Compaction {
            turn_id: self.turn_id.clone(),
            summary,
        });
        self.notify(ServerNotification::ThreadCompacted(
            ContextCompactedNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
            },
        ))
        .await;
        Ok(())
    }
}
