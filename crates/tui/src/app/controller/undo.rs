//! undo29: `/undo`: the open thread's last turn dropped and the files its patches changed put
//! back where nothing changed them since (`Client::undo_last_turn`, a `thread/rollback` with
//! the Tandem extension `restoreFiles`); the transcript is redrawn without the turn and each
//! file's fate shown as a notice.

use super::Controller;

impl Controller {
    pub(super) fn undo(&self) {
        let thread = self
            .tui
            .state()
            .thread
            .as_ref()
            .map(|thread| thread.id.clone());
        let Some(thread) = thread else {
            return self.tui.update(|state| {
                state.hint =
                    Some("/undo undoes the open thread's last turn; no thread is open".into());
            });
        };
        let tui = self.tui.clone();
        tokio::spawn(async move {
            match tui.client.undo_last_turn(&thread).await {
                Ok(None) => tui.update(|state| state.notice("(no turn to undo)")),
                Ok(Some(undone)) => tui.update(|state| {
                    state.open_thread(&undone.thread);
                    for line in tandem_client::undo_report(&undone.file_restore) {
                        state.notice(line);
                    }
                }),
                Err(error) => tui.report("undoing the last turn", &error),
            }
        });
    }
}
