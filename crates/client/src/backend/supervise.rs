//! Resuming on a new wire connection: [`ResumeSession`], through which the client resumes its
//! threads and processes on the new connection before anything else is sent. The connection
//! comes in as a [`ResumeLink`], passed down by the wire backend (which also runs the
//! reconnection attempts), so this module never reaches into the wire's internals.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tandem_protocol::{ProcessResumeParams, RequestId, ThreadResumeParams};

use super::{Failure, Reply};

/// The connection a [`ResumeSession`] sends its resumes on.
pub(crate) trait ResumeLink: Send + Sync {
    /// The connection's generation.
    fn generation(&self) -> u64;
    /// Sends `thread/resume` as request `id`, its answer routed to the thread's followers
    /// after every event it replayed; resolves with the answer.
    fn resume_thread(
        &self,
        id: RequestId,
        params: ThreadResumeParams,
    ) -> BoxFuture<'_, Result<Reply, Failure>>;
    /// procre: sends `process/resume` as request `id`, its answer routed to the process's
    /// followers after every notification it replayed; resolves with the answer.
    fn resume_process(
        &self,
        id: RequestId,
        params: ProcessResumeParams,
    ) -> BoxFuture<'_, Result<Reply, Failure>>;
}

/// The new connection, for the resumes that must precede every other request on it.
pub(crate) struct ResumeSession {
    connection: Arc<dyn ResumeLink>,
    limit: Duration,
}

impl ResumeSession {
    pub(crate) fn new(connection: Arc<dyn ResumeLink>, limit: Duration) -> Self {
        Self { connection, limit }
    }

    /// The new connection's generation.
    pub(crate) fn generation(&self) -> u64 {
        self.connection.generation()
    }

    /// Sends `thread/resume` with `params` as request `id` and waits until its answer was
    /// routed (as [`super::Incoming::Resumed`], after every event it replayed); `Err` with
    /// the reason if no answer came.
    pub(crate) async fn resume(
        &self,
        id: RequestId,
        params: ThreadResumeParams,
    ) -> Result<(), String> {
        self.wait(self.connection.resume_thread(id, params)).await
    }

    /// procre: sends `process/resume` with `params` as request `id` and waits until its
    /// answer was routed (as [`super::Incoming::ProcessResumed`], after every notification it
    /// replayed).
    pub(crate) async fn resume_process(
        &self,
        id: RequestId,
        params: ProcessResumeParams,
    ) -> Result<(), String> {
        self.wait(self.connection.resume_process(id, params)).await
    }

    async fn wait(
        &self,
        reply: impl Future<Output = Result<Reply, Failure>>,
    ) -> Result<(), String> {
        match tokio::time::timeout(self.limit, reply).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(failure)) => Err(failure.reason()),
            Err(_) => Err(format!("no answer within {:?}", self.limit)),
        }
    }
}
