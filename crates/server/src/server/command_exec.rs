//! `command/exec` between the host and [`crate::process`] (docs/protocol.md section 8a): each
//! command gets an [`ExecSink`] that turns its output into `command/exec/outputDelta` and its
//! exit into the deferred `command/exec` result.
//!
//! The result takes the ordinary lane, behind the deltas: the sink awaits each delta's delivery
//! and the exit comes after both streams ended, so the result is never sent before the output
//! it follows (the reference's rule). The follow-up requests (`write`, `terminate`, `resize`)
//! are process control and answer on the reply lane, past queued output.

use std::sync::Arc;

use async_trait::async_trait;
use tandem_host::{ConnectionId, ConnectionRequestId, OutgoingMessageSender, RequestContext};
use tandem_protocol::{
    CommandExecOutputDeltaNotification, CommandExecParams, CommandExecResponse,
    CommandExecWriteParams, ProcessExitedNotification, ProcessOutputDeltaNotification,
    ServerNotification,
};

use super::{StdinTable, TandemServer};
use crate::process::{DeltaDelivery, ExecRequest, HandleRelease, ProcessEventSink};

/// Delivers one `command/exec` child's events to the connection that started it.
struct ExecSink {
    outgoing: OutgoingMessageSender,
    connection: ConnectionId,
    /// The `command/exec` request, answered when the child exited.
    request: ConnectionRequestId,
    /// The client's id, named in every delta (streamed commands always have one).
    process_id: String,
}

impl ExecSink {
    fn result(exited: ProcessExitedNotification) -> CommandExecResponse {
        CommandExecResponse {
            exit_code: exited.exit_code,
            stdout: exited.stdout,
            stderr: exited.stderr,
        }
    }
}

#[async_trait]
impl ProcessEventSink for ExecSink {
    async fn output_delta(&self, delta: ProcessOutputDeltaNotification) {
        let note = ServerNotification::CommandExecOutputDelta(CommandExecOutputDeltaNotification {
            process_id: self.process_id.clone(),
            stream: delta.stream,
            delta: delta.delta,
            cap_reached: delta.cap_reached,
        });
        if !self
            .outgoing
            .send_notification_and_wait(self.connection, note)
            .await
        {
            tracing::trace!(connection = %self.connection, "command/exec output not delivered");
        }
    }

    fn deltas_in_flight(&self) -> usize {
        super::process_session::window_for(&self.outgoing)
    }

    async fn queue_output_delta(&self, delta: ProcessOutputDeltaNotification) -> DeltaDelivery {
        let note = ServerNotification::CommandExecOutputDelta(CommandExecOutputDeltaNotification {
            process_id: self.process_id.clone(),
            stream: delta.stream,
            delta: delta.delta,
            cap_reached: delta.cap_reached,
        });
        let delivery = self
            .outgoing
            .queue_notification(self.connection, note)
            .await;
        let connection = self.connection;
        DeltaDelivery::pending(async move {
            if !delivery.delivered().await {
                tracing::trace!(%connection, "command/exec output not delivered");
            }
        })
    }

    async fn exited(&self, exited: ProcessExitedNotification) {
        let result = Self::result(exited);
        if !self
            .outgoing
            .send_response_and_wait(self.request.clone(), result)
            .await
        {
            tracing::debug!(connection = %self.connection, "command/exec result not delivered");
        }
    }

    async fn exited_then(&self, exited: ProcessExitedNotification, release: HandleRelease) {
        let result = Self::result(exited);
        // Released at hand-over, so that a `command/exec` reusing the id in reaction to the
        // result never meets "duplicate active command/exec process id".
        let delivered = self
            .outgoing
            .send_response_then(self.request.clone(), result, move |_| release.run())
            .await;
        if !delivered {
            tracing::debug!(connection = %self.connection, "command/exec result not delivered");
        }
    }
}

impl TandemServer {
    /// `command/exec`: checks and starts the child on the processor task (it returns once the
    /// child runs), then lets its sink answer when it exits.
    pub(super) fn command_exec(&self, params: CommandExecParams, context: RequestContext) {
        let server_cwd = match std::env::current_dir() {
            Ok(cwd) => cwd,
            Err(error) => {
                let error = tandem_protocol::JSONRPCErrorError::internal(format!(
                    "failed to spawn command: the server's working directory is unusable: {error}"
                ));
                return self.answer_error_later(context.id, error);
            }
        };
        let mut request = match ExecRequest::new(params, &server_cwd) {
            Ok(request) => request,
            Err(error) => return self.answer_error_later(context.id, error),
        };
        // Without a `sandboxPolicy` the command runs under the configured one, as the
        // reference does; a policy this machine cannot enforce refuses the command.
        let policy = request
            .sandbox_policy()
            .cloned()
            .unwrap_or_else(|| self.threads.config().sandbox.clone());
        match self.options.sandboxing().resolve(&policy, request.cwd()) {
            Ok(sandbox) => request.set_sandbox(sandbox),
            Err(error) => {
                let error = tandem_protocol::JSONRPCErrorError::invalid_request(error.to_string());
                return self.answer_error_later(context.id, error);
            }
        }
        let connection = context.id.connection_id;
        let processes = self.processes(connection);
        let sink = Arc::new(ExecSink {
            outgoing: self.outgoing.clone(),
            connection,
            request: context.id.clone(),
            process_id: request.process_id().unwrap_or_default().to_owned(),
        });
        match request.start(&processes.exec, sink) {
            // No spawn reply to wait for: output may flow at once.
            Ok(spawned) => spawned.start_streaming(),
            Err(error) => self.answer_error_later(context.id, error),
        }
    }

    /// `command/exec/write`, ordered behind earlier writes to the same child.
    pub(super) fn command_exec_write(
        &self,
        params: CommandExecWriteParams,
        context: RequestContext,
    ) {
        let handle = params.process_id.clone();
        let write = self
            .processes(context.id.connection_id)
            .exec
            .exec_stdin_write(params);
        self.queue_stdin_write(StdinTable::Exec, handle, context, write);
    }

    /// Sends an ordinary-lane error from a task of its own: that lane waits while a guaranteed
    /// notification is parked, and the processor must stay free for process control.
    fn answer_error_later(
        &self,
        id: ConnectionRequestId,
        error: tandem_protocol::JSONRPCErrorError,
    ) {
        let outgoing = self.outgoing.clone();
        tokio::spawn(async move { outgoing.send_error(id, error).await });
    }
}
