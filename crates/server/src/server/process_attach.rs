//! attach19: watching a PTY process another connection runs (`process/share`,
//! `process/attach`, experimental; docs/protocol.md, "Attaching to another connection's
//! process").
//!
//! A process belongs to its connection's process session, whose secret token lets a client
//! take every process over (`process/resume`). Watching is a smaller right, so it has a
//! smaller secret: the owner asks `process/share` for one run of one PTY process and hands the
//! attach token on; its holder may read that process's screen and output, never write to it,
//! resize or kill it, and the token dies with the run. A client without it learns nothing,
//! not even whether the handle exists.

use std::sync::Arc;

use tandem_host::{ConnectionId, RequestContext};
use tandem_protocol::{
    JSONRPCErrorError, ProcessAttachParams, ProcessAttachResponse, ProcessShareParams,
    ProcessShareResponse,
};

use super::TandemServer;
use super::process_session::ProcessSession;

impl TandemServer {
    /// `process/share`: the attach token of one of the connection's running PTY processes.
    pub(super) async fn share_process(&self, params: ProcessShareParams, context: RequestContext) {
        let session = self.processes(context.id.connection_id).session();
        match session.share(&params.process_handle) {
            Ok(attach_token) => {
                self.outgoing
                    .send_response(context.id, ProcessShareResponse { attach_token })
                    .await;
            }
            Err(error) => self.outgoing.send_error(context.id, error).await,
        }
    }

    /// `process/attach`, on a task of its own: the answer waits for the attachment, and takes
    /// the ordinary lane behind whatever the connection was sent before.
    pub(super) fn attach_process(&self, params: ProcessAttachParams, context: RequestContext) {
        let connection = context.id.connection_id;
        let owner = self.shared_session(connection, &params);
        let outgoing = self.outgoing.clone();
        tokio::spawn(async move {
            let result = match owner {
                Ok(owner) => attach(&outgoing, &owner, connection, &params.process_handle).await,
                Err(error) => Err(error),
            };
            outgoing.send_result(context.id, result).await;
        });
    }

    /// The session that shared `params.process_handle` under `params.attach_token`, on a live
    /// connection or detached.
    fn shared_session(
        &self,
        connection: ConnectionId,
        params: &ProcessAttachParams,
    ) -> Result<Arc<ProcessSession>, JSONRPCErrorError> {
        let handle = params.process_handle.as_str();
        let own = self.processes(connection).session();
        let live: Vec<Arc<ProcessSession>> = self
            .lock()
            .values()
            .map(|processes| processes.session())
            .collect();
        let detached: Vec<Arc<ProcessSession>> = super::process_session::lock(&self.detached)
            .values()
            .cloned()
            .collect();
        let owner = live
            .into_iter()
            .chain(detached)
            .find(|session| session.is_shared(handle, &params.attach_token))
            .ok_or_else(|| {
                JSONRPCErrorError::invalid_request(format!(
                    "no shared process {handle:?} for this attachToken: the process exited, or the token is not its owner's process/share answer for it"
                ))
            })?;
        if Arc::ptr_eq(&owner, &own) {
            return Err(JSONRPCErrorError::invalid_request(format!(
                "process {handle:?} is this connection's own: its notifications already come here (process/screen reads its screen)"
            )));
        }
        if own.start_of(handle).is_some() {
            return Err(JSONRPCErrorError::invalid_request(format!(
                "this connection has a process of its own named {handle:?}: the two could not be told apart; attach from another connection"
            )));
        }
        Ok(owner)
    }
}

/// Takes the screen and attaches `connection` to the process's stream at that very point.
async fn attach(
    outgoing: &tandem_host::OutgoingMessageSender,
    owner: &ProcessSession,
    connection: ConnectionId,
    handle: &str,
) -> Result<ProcessAttachResponse, JSONRPCErrorError> {
    let screen = owner.screen_of(handle)?;
    let stream = owner.stream(handle);
    // Under the lock the process's output is fed and queued with (the session's sink): no
    // delta is both in the snapshot and sent, nor in neither.
    let (snapshot, pending) = {
        let _order = screen.order.lock().await;
        let snapshot = screen.snapshot();
        let pending = outgoing.queue_attach_stream(&stream, connection).await;
        (snapshot, pending)
    };
    let attachment = pending
        .attached()
        .await
        .ok_or_else(|| JSONRPCErrorError::internal("the server is shutting down"))?;
    tracing::debug!(%connection, handle, "a connection attached to another's process");
    Ok(ProcessAttachResponse {
        screen: snapshot,
        cursor: attachment.cursor,
    })
}
