//! [`TurnRun::run_user_shell`]: the user's own command line (`thread/shellCommand`), run in a
//! turn of its own as a `commandExecution` item with `source: "userShell"`. It goes through
//! the same [`TurnRun::execute`] as the agent's commands (the turn's process manager, output
//! deltas, kill on interrupt), but without the approval and without the thread's sandbox: the
//! user asked for it, with the server's rights, as the reference runs it (docs/security.md).

use std::time::{Duration, Instant};

use tandem_protocol::{CommandExecutionSource, CommandExecutionStatus, SharedText};

use crate::agent::AgentError;
use crate::store;

use super::{TurnRun, elapsed_ms};

/// The shell that runs a user's command line: `$SHELL` when it names an existing absolute
/// path (the user's login shell, as the reference uses), else `/bin/sh`.
pub(crate) fn user_shell() -> String {
    std::env::var("SHELL")
        .ok()
        .filter(|shell| {
            let path = std::path::Path::new(shell);
            path.is_absolute() && path.is_file()
        })
        .unwrap_or_else(|| "/bin/sh".to_owned())
}

/// `text` quoted for a POSIX shell: as is when it holds nothing the shell would read, else in
/// single quotes (a quote inside written `'\''`).
fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

impl TurnRun {
    /// Runs `command` with `<shell> -c` in the thread's cwd, unsandboxed and unasked, killed
    /// after `timeout`; reports it as a `userShell` command item and returns what the model
    /// is told of it. Fails only when the turn was interrupted meanwhile.
    pub(crate) async fn run_user_shell(
        &mut self,
        command: &str,
        timeout: Duration,
    ) -> Result<String, AgentError> {
        let id = store::new_id();
        let shell = user_shell();
        let shown = format!("{} -c {}", shell_quote(&shell), shell_quote(command));
        let cwd = self.cwd.clone();
        let shape = super::commands::CommandItem {
            id: id.clone(),
            shown: shown.clone(),
            command: command.to_owned(),
            cwd: cwd.clone(),
            source: CommandExecutionSource::UserShell,
        };
        let item = |status, process_id, exit_code, output, duration_ms| {
            shape.at(status, process_id, exit_code, output, duration_ms)
        };
        self.item_started(&item(
            CommandExecutionStatus::InProgress,
            None,
            None,
            None,
            None,
        ))
        .await;
        let started = Instant::now();
        // Not a login shell (the reference runs `-lc`): profile scripts can print, prompt or
        // hang, and the server's environment is already the user's.
        let argv = vec![shell, "-c".to_owned(), command.to_owned()];
        let (exit_code, output, process_id) = self
            .execute(&id, &id, argv, &cwd, Some(timeout), None)
            .await;
        let status = match exit_code {
            Some(0) => CommandExecutionStatus::Completed,
            _ => CommandExecutionStatus::Failed,
        };
        let report = crate::agent::user_shell_report(&shown, exit_code, &output);
        self.item_completed(item(
            status,
            process_id,
            exit_code,
            Some(SharedText::from(output)),
            Some(elapsed_ms(started)),
        ))
        .await;
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn quoting_leaves_plain_words_and_single_quotes_the_rest() {
        assert_eq!(shell_quote("/bin/bash"), "/bin/bash");
        assert_eq!(shell_quote("echo hi"), "'echo hi'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
