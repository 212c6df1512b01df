//! The typed helper of each protocol method that needs nothing but its request and reply
//! (`start_thread`, `list_threads`, `kill_process`, ...): one line each over
//! [`Client::call`], kept apart from the client's machinery. The helpers that return handles
//! (`start_turn`, `spawn_process`) subscribe first and live with it, in `client.rs`.

use tandem_protocol::client_methods::{
    ConfigRead, ProcessKill, ProcessResizePty, ProcessScreen, ProcessShare, ProcessWriteStdin,
    ThreadAttachmentAdd, ThreadAttachmentRemove, ThreadDelete, ThreadFork, ThreadItemsList,
    ThreadList, ThreadLoadedList, ThreadNameSet, ThreadRead, ThreadResume, ThreadStart,
    ThreadTurnsList, ThreadUnsubscribe, TurnInterrupt, TurnSteer,
};
use tandem_protocol::{
    ConfigReadParams, ConfigReadResponse, EmptyResponse, ProcessKillParams, ProcessResizePtyParams,
    ProcessScreenParams, ProcessScreenResponse, ProcessShareParams, ProcessWriteStdinParams,
    ThreadAttachmentAddParams, ThreadAttachmentAddResponse, ThreadAttachmentRemoveParams,
    ThreadDeleteParams, ThreadForkParams, ThreadForkResponse, ThreadItemsListParams,
    ThreadItemsListResponse, ThreadListParams, ThreadListResponse, ThreadLoadedListParams,
    ThreadLoadedListResponse, ThreadNameSetParams, ThreadReadParams, ThreadReadResponse,
    ThreadResumeParams, ThreadResumeResponse, ThreadStartParams, ThreadStartResponse,
    ThreadTurnsListParams, ThreadTurnsListResponse, ThreadUnsubscribeParams,
    ThreadUnsubscribeResponse, TurnInterruptParams, TurnSteerParams, TurnSteerResponse,
};

use crate::client::Client;
use crate::error::ClientError;

impl Client {
    /// attach19: `process/share` (experimental): the attach token of this connection's
    /// running PTY process `handle`, for another client's [`Client::attach_process`].
    pub async fn share_process(&self, handle: &str) -> Result<String, ClientError> {
        self.call::<ProcessShare>(ProcessShareParams::new(handle))
            .await
            .map(|shared| shared.attach_token)
    }

    /// `process/screen` (experimental): the present screen of this connection's running PTY
    /// process `handle`.
    pub async fn process_screen(&self, handle: &str) -> Result<ProcessScreenResponse, ClientError> {
        self.call::<ProcessScreen>(ProcessScreenParams::new(handle))
            .await
    }

    /// `config/read`.
    pub async fn config_read(
        &self,
        params: ConfigReadParams,
    ) -> Result<ConfigReadResponse, ClientError> {
        self.call::<ConfigRead>(params).await
    }

    /// `thread/start`: creates a thread and subscribes this connection to it.
    pub async fn start_thread(
        &self,
        params: ThreadStartParams,
    ) -> Result<ThreadStartResponse, ClientError> {
        self.call::<ThreadStart>(params).await
    }

    /// `thread/resume`.
    pub async fn resume_thread(
        &self,
        params: ThreadResumeParams,
    ) -> Result<ThreadResumeResponse, ClientError> {
        self.call::<ThreadResume>(params).await
    }

    /// `thread/read`.
    pub async fn read_thread(
        &self,
        params: ThreadReadParams,
    ) -> Result<ThreadReadResponse, ClientError> {
        self.call::<ThreadRead>(params).await
    }

    /// `thread/list`.
    pub async fn list_threads(
        &self,
        params: ThreadListParams,
    ) -> Result<ThreadListResponse, ClientError> {
        self.call::<ThreadList>(params).await
    }

    /// `thread/loaded/list`.
    pub async fn list_loaded_threads(
        &self,
        params: ThreadLoadedListParams,
    ) -> Result<ThreadLoadedListResponse, ClientError> {
        self.call::<ThreadLoadedList>(params).await
    }

    /// `thread/turns/list`.
    pub async fn list_turns(
        &self,
        params: ThreadTurnsListParams,
    ) -> Result<ThreadTurnsListResponse, ClientError> {
        self.call::<ThreadTurnsList>(params).await
    }

    /// `thread/items/list`.
    pub async fn list_items(
        &self,
        params: ThreadItemsListParams,
    ) -> Result<ThreadItemsListResponse, ClientError> {
        self.call::<ThreadItemsList>(params).await
    }

    /// `thread/unsubscribe`.
    pub async fn unsubscribe_thread(
        &self,
        params: ThreadUnsubscribeParams,
    ) -> Result<ThreadUnsubscribeResponse, ClientError> {
        self.call::<ThreadUnsubscribe>(params).await
    }

    /// `thread/name/set`.
    pub async fn set_thread_name(
        &self,
        params: ThreadNameSetParams,
    ) -> Result<EmptyResponse, ClientError> {
        self.call::<ThreadNameSet>(params).await
    }

    /// `thread/fork`.
    pub async fn fork_thread(
        &self,
        params: ThreadForkParams,
    ) -> Result<ThreadForkResponse, ClientError> {
        self.call::<ThreadFork>(params).await
    }

    /// `thread/delete`.
    pub async fn delete_thread(
        &self,
        params: ThreadDeleteParams,
    ) -> Result<EmptyResponse, ClientError> {
        self.call::<ThreadDelete>(params).await
    }

    /// `thread/attachment/add`.
    pub async fn add_attachment(
        &self,
        params: ThreadAttachmentAddParams,
    ) -> Result<ThreadAttachmentAddResponse, ClientError> {
        self.call::<ThreadAttachmentAdd>(params).await
    }

    /// `thread/attachment/remove`.
    pub async fn remove_attachment(
        &self,
        params: ThreadAttachmentRemoveParams,
    ) -> Result<EmptyResponse, ClientError> {
        self.call::<ThreadAttachmentRemove>(params).await
    }

    /// `turn/steer`.
    pub async fn steer_turn(
        &self,
        params: TurnSteerParams,
    ) -> Result<TurnSteerResponse, ClientError> {
        self.call::<TurnSteer>(params).await
    }

    /// `turn/interrupt`.
    pub async fn interrupt_turn(
        &self,
        params: TurnInterruptParams,
    ) -> Result<EmptyResponse, ClientError> {
        self.call::<TurnInterrupt>(params).await
    }

    /// `process/writeStdin` (experimental).
    pub async fn write_stdin(
        &self,
        params: ProcessWriteStdinParams,
    ) -> Result<EmptyResponse, ClientError> {
        self.call::<ProcessWriteStdin>(params).await
    }

    /// `process/kill` (experimental).
    pub async fn kill_process(
        &self,
        params: ProcessKillParams,
    ) -> Result<EmptyResponse, ClientError> {
        self.call::<ProcessKill>(params).await
    }

    /// `process/resizePty` (experimental).
    pub async fn resize_pty(
        &self,
        params: ProcessResizePtyParams,
    ) -> Result<EmptyResponse, ClientError> {
        self.call::<ProcessResizePty>(params).await
    }
}
