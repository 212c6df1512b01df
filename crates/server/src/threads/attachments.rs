//! `thread/attachment/add`, `thread/attachment/remove` and `thread/attachment/list`, and the
//! notification that follows a change.

use tandem_host::{ConnectionId, ConnectionRequestId};
use tandem_protocol::{
    EmptyResponse, JSONRPCErrorError, ThreadAttachment, ThreadAttachmentAddOutcome,
    ThreadAttachmentAddParams, ThreadAttachmentListParams, ThreadAttachmentListResponse,
    ThreadAttachmentOperation, ThreadAttachmentRemoveParams, ThreadAttachmentUpdatedNotification,
};

use crate::store;

use super::{ThreadService, now_secs, store_error};

impl ThreadService {
    pub(super) async fn attachment_add(
        &self,
        params: ThreadAttachmentAddParams,
        id: ConnectionRequestId,
    ) {
        let caller = id.connection_id;
        let result = async {
            if params.attachment_type.is_empty() {
                return Err(JSONRPCErrorError::invalid_params(
                    "attachmentType must not be empty",
                ));
            }
            if params.identity_key.is_empty() {
                return Err(JSONRPCErrorError::invalid_params(
                    "identityKey must not be empty",
                ));
            }
            let (store, _) = self.find(&params.thread_id).await?.ok_or_else(|| {
                JSONRPCErrorError::invalid_params(format!("thread not found: {}", params.thread_id))
            })?;
            let attachment = ThreadAttachment {
                id: store::new_id(),
                attachment_type: params.attachment_type.clone(),
                identity_key: params.identity_key.clone(),
                payload: params.payload.clone(),
                created_at: now_secs(),
            };
            store
                .add_attachment(&params.thread_id, &attachment)
                .await
                .map_err(store_error)
        }
        .await;
        let response = match result {
            Ok(response) => response,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        let created = response.outcome == ThreadAttachmentAddOutcome::Created;
        let attachment_id = response.attachment.id.clone();
        // The reply must reach the caller before the notification (docs/protocol.md section 4).
        self.outgoing.send_response_and_wait(id, response).await;
        if created {
            self.attachment_updated(
                &params.thread_id,
                params.attachment_type,
                params.identity_key,
                attachment_id,
                ThreadAttachmentOperation::Created,
                caller,
            )
            .await;
        }
    }

    pub(super) async fn attachment_remove(
        &self,
        params: ThreadAttachmentRemoveParams,
        id: ConnectionRequestId,
    ) {
        let caller = id.connection_id;
        let result = async {
            let (store, _) = self.find(&params.thread_id).await?.ok_or_else(|| {
                JSONRPCErrorError::invalid_params(format!("thread not found: {}", params.thread_id))
            })?;
            store
                .remove_attachment(
                    &params.thread_id,
                    &params.attachment_type,
                    &params.identity_key,
                )
                .await
                .map_err(store_error)
        }
        .await;
        let removed = match result {
            Ok(removed) => removed,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        self.outgoing
            .send_response_and_wait(id, EmptyResponse {})
            .await;
        if let Some(removed) = removed {
            self.attachment_updated(
                &params.thread_id,
                removed.attachment_type,
                removed.identity_key,
                removed.id,
                ThreadAttachmentOperation::Deleted,
                caller,
            )
            .await;
        }
    }

    pub(super) async fn attachment_updated(
        &self,
        thread_id: &str,
        attachment_type: String,
        identity_key: String,
        attachment_id: String,
        operation: ThreadAttachmentOperation,
        caller: ConnectionId,
    ) {
        let note = tandem_protocol::ServerNotification::ThreadAttachmentUpdated(
            ThreadAttachmentUpdatedNotification {
                thread_id: thread_id.to_owned(),
                attachment_type,
                identity_key,
                attachment_id,
                operation,
            },
        );
        match self.loaded(thread_id) {
            Some(thread) => thread.notify(&self.outgoing, note, Some(caller)).await,
            None => self.outgoing.send_notification(caller, note).await,
        }
    }

    /// One page of a thread's attachments, oldest first; the cursor is the id of the last
    /// attachment of the previous page. A thread that does not exist has no attachments (the
    /// reference answers the same).
    pub(super) async fn attachment_list(
        &self,
        params: ThreadAttachmentListParams,
    ) -> Result<ThreadAttachmentListResponse, JSONRPCErrorError> {
        let attachments = match self.find(&params.thread_id).await? {
            Some((store, _)) => store
                .list_attachments(&params.thread_id)
                .await
                .map_err(store_error)?,
            None => Vec::new(),
        };
        let start = match &params.cursor {
            None => 0,
            Some(cursor) => {
                attachments
                    .iter()
                    .position(|attachment| &attachment.id == cursor)
                    .ok_or_else(|| {
                        JSONRPCErrorError::invalid_request(format!("invalid cursor: {cursor}"))
                    })?
                    + 1
            }
        };
        let limit = params
            .limit
            .map_or(store::DEFAULT_PAGE_LIMIT, |limit| limit as usize)
            .max(1);
        let data: Vec<ThreadAttachment> = attachments.into_iter().skip(start).collect();
        let page = store::Page::from_candidates(data, limit, |attachment: &ThreadAttachment| {
            attachment.id.clone()
        });
        Ok(ThreadAttachmentListResponse {
            data: page.data,
            next_cursor: page.next_cursor,
        })
    }
}
