//! [`TurnRun::apply_patch`], what the agent's `TurnDriver::apply_patch` runs: a patch in the
//! reference's `apply_patch` format becomes one `fileChange` item, applied by the server (not
//! by a shell) all or nothing.
//!
//! The order, for every patch: parse it and work out every file's new content in memory
//! (tandem-patch; a patch that does not parse or apply stops here, as an item that starts and
//! completes `failed` with no changes, and an error naming the line or the file and hunk for
//! the model); store the item
//! `inProgress` with its planned changes and report it (`item/started`,
//! `item/fileChange/patchUpdated`), so that after a crash the client can tell which files may
//! have changed; decide the approval (docs/protocol.md, "File changes"); write (the `write`
//! module: temporary files renamed into place, undone on failure); complete the item; send the
//! turn's diff (`turn/diff/updated`, the `turn_diff` module). Just before writing, the turn's
//! file checkpoint is stored (the `checkpoint` module), so that a revert can undo the patch.
//!
//! Files: `paths` resolves what a patch names, `write` writes a patch's outcome as one change,
//! `turn_diff` keeps the turn's diff, `checkpoint` the turn's file checkpoint, `restore` puts
//! reverted turns' files back (`restoreFiles: true`).

mod checkpoint;
mod paths;
mod restore;
mod turn_diff;
mod write;

pub(crate) use checkpoint::TurnCheckpoint;
pub(crate) use restore::restore_files;
pub(crate) use turn_diff::TurnDiff;

use std::path::{Path, PathBuf};

use tandem_patch::{AppliedChange, FileChange, Limits, Patch};
use tandem_protocol::RequestMethod;
use tandem_protocol::server_methods::FileChangeRequestApproval;
use tandem_protocol::{
    ApprovalPolicy, FileChangeApprovalDecision, FileChangePatchUpdatedNotification,
    FileChangeRequestApprovalParams, FileChangeRequestApprovalResponse, FileUpdateChange,
    PatchApplyStatus, PatchChangeKind, ServerNotification, ThreadActiveFlag, ThreadItem,
    TurnDiffUpdatedNotification,
};

use crate::agent::{AgentError, PatchOutcome};
use crate::store;
use crate::threads::now_millis;

use super::TurnRun;
use checkpoint::{Before, THREAD_MAX_BYTES, Touch};
use paths::ResolvedPath;
use write::FinalState;

/// What a patch may carry and write: at most 4 MiB of patch text, and files of at most
/// 16 MiB before and after (docs/protocol.md, "File changes").
const LIMITS: Limits = Limits {
    max_patch_bytes: Limits::DEFAULT_MAX_PATCH_BYTES,
    max_file_bytes: Limits::DEFAULT_MAX_FILE_BYTES,
};

/// Why a patch cannot be applied, before anything is written.
#[derive(Debug, thiserror::Error)]
enum PlanError {
    /// The text is not a patch.
    #[error("the patch does not parse: {0}")]
    Parse(#[from] tandem_patch::ParseError),
    /// A path cannot be resolved.
    #[error(transparent)]
    Path(#[from] paths::PathError),
    /// A file cannot be read, or a hunk does not match it.
    #[error(transparent)]
    Apply(#[from] tandem_patch::ApplyError),
    /// The task working it out died (a bug): nothing was written.
    #[error("the server could not work the patch out ({0}); this is a bug, please report it")]
    Crashed(String),
}

/// Why a file a patch names cannot be read as text.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    /// It holds NUL bytes or is not UTF-8.
    #[error("it is a binary file (not UTF-8 text); patches change text files only")]
    Binary,
    /// It is a directory or another non-file.
    #[error("it is not a regular file")]
    NotAFile,
    /// It is larger than a patch may change.
    #[error("it is {bytes} bytes, more than the {limit} bytes a patched file may have")]
    TooLarge {
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: usize,
    },
    /// The system refused.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A patch worked out in memory, ready to be approved and written.
#[derive(Debug)]
struct Plan {
    /// The changes, with display paths (what the diffs and the model's report show).
    applied: Vec<AppliedChange>,
    /// The item's changes.
    changes: Vec<FileUpdateChange>,
    /// What each file becomes.
    finals: Vec<FinalState>,
    /// What each of `finals` held before the patch, in the same order.
    befores: Vec<Before>,
    /// The digest of what each of `finals` will hold (`None`: removed), in the same order.
    after_digests: Vec<Option<String>>,
    /// Every file written or removed: display path and real path.
    touched: Vec<(String, PathBuf)>,
}

impl TurnRun {
    /// Sends `item/fileChange/patchUpdated` for item `item_id` with the changes a patch the
    /// model is still writing names so far (paths made absolute against the cwd as the item's
    /// are, without reading the disk; each change's `diff` is its part of the patch as written
    /// so far). Returns whether it named any change; a text that does not start as a patch
    /// names none (it fails as a whole when applied).
    pub(super) async fn patch_progress(&self, item_id: &str, partial_patch: &str) -> bool {
        let Ok(patch) = tandem_patch::parse_partial(partial_patch, &LIMITS) else {
            return false;
        };
        if patch.changes.is_empty() {
            return false;
        }
        let cwd = Path::new(&self.cwd);
        let absolute = |written: &str| paths::absolute(cwd, written).display().to_string();
        let changes = patch
            .changes
            .iter()
            .map(|change| FileUpdateChange {
                path: absolute(change.path()),
                kind: match change {
                    FileChange::Add { .. } => PatchChangeKind::Add,
                    FileChange::Delete { .. } => PatchChangeKind::Delete,
                    FileChange::Update { move_to, .. } => PatchChangeKind::Update {
                        move_path: move_to.as_deref().map(absolute),
                    },
                },
                diff: change.progress_text(),
            })
            .collect();
        self.notify(ServerNotification::FileChangePatchUpdated(
            FileChangePatchUpdatedNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                item_id: item_id.to_owned(),
                changes,
            },
        ))
        .await;
        true
    }

    /// Applies `patch` as one `fileChange` item (see the module doc), with id `item_id` when
    /// the patch's progress was shown under it.
    pub(super) async fn apply_patch(
        &mut self,
        item_id: Option<String>,
        patch: &str,
    ) -> Result<PatchOutcome, AgentError> {
        let id = item_id.unwrap_or_else(store::new_id);
        let started_at_ms = now_millis();
        let cwd = PathBuf::from(&self.cwd);
        let text = patch.to_owned();
        let planned = tokio::task::spawn_blocking(move || plan(&cwd, &text))
            .await
            .unwrap_or_else(|panic| Err(PlanError::Crashed(panic.to_string())));
        let plan = match planned {
            Ok(plan) => plan,
            Err(error) => {
                let report = format!(
                    "The patch was not applied; no file was changed. {error}. Correct the patch \
                     and send it whole again."
                );
                tracing::debug!(thread = %self.thread.id, %error, "patch refused");
                let item = file_change(&id, Vec::new(), PatchApplyStatus::InProgress);
                self.item_started(&item).await;
                self.item_completed(file_change(&id, Vec::new(), PatchApplyStatus::Failed))
                    .await;
                return Ok(PatchOutcome::Failed { report });
            }
        };
        let item = |status| file_change(&id, plan.changes.clone(), status);
        // Stored before anything is written: a crash from here on leaves an item that names
        // every file that may have changed.
        self.item_started(&item(PatchApplyStatus::InProgress)).await;
        self.notify(ServerNotification::FileChangePatchUpdated(
            FileChangePatchUpdatedNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                item_id: id.clone(),
                changes: plan.changes.clone(),
            },
        ))
        .await;
        if let Some(declined) = self.approve(&id, started_at_ms, &plan).await? {
            self.item_completed(item(PatchApplyStatus::Declined)).await;
            return Ok(declined);
        }
        let touches: Vec<Touch<'_>> = plan
            .finals
            .iter()
            .zip(&plan.befores)
            .zip(&plan.after_digests)
            .map(|((state, before), after_digest)| Touch {
                path: &state.path,
                before,
                after_digest: after_digest.as_ref(),
            })
            .collect();
        let next = self.checkpoint.with(&touches);
        // Stored before anything is written, as the item is: after a crash in the middle, a
        // revert still knows every file the patch may have changed.
        if let Err(error) = self
            .store
            .put_file_checkpoint(&self.thread.id, &self.turn_id, &next, THREAD_MAX_BYTES)
            .await
        {
            self.fail_on_store(&error);
            return Ok(PatchOutcome::Failed {
                report: format!(
                    "The patch was not applied; no file was changed: its undo record could not \
                     be stored ({error})."
                ),
            });
        }
        let previous = self.checkpoint.replace(next);
        let tag = id.clone();
        let finals = plan.finals;
        let written = tokio::task::spawn_blocking(move || write::write_all(&finals, &tag))
            .await
            .map_err(|panic| {
                format!("the task writing it died ({panic}); some files may have changed")
            })
            .and_then(|written| written.map_err(|error| error.to_string()));
        if let Err(error) = written {
            tracing::warn!(thread = %self.thread.id, %error, "patch not written");
            // Nothing was written: the checkpoint goes back to what the turn really did.
            let stored = self
                .store
                .put_file_checkpoint(&self.thread.id, &self.turn_id, &previous, THREAD_MAX_BYTES)
                .await;
            if let Err(error) = stored {
                // Harmless if it stays: a file the patch did not change is as it was before.
                tracing::warn!(thread = %self.thread.id, %error, "checkpoint not put back");
            }
            self.checkpoint.replace(previous);
            self.item_completed(item(PatchApplyStatus::Failed)).await;
            return Ok(PatchOutcome::Failed {
                report: format!("The patch was not applied: {error}."),
            });
        }
        self.item_completed(item(PatchApplyStatus::Completed)).await;
        self.turn_diff.record(&plan.applied);
        let diff = self.turn_diff.render();
        self.notify(ServerNotification::TurnDiffUpdated(
            TurnDiffUpdatedNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                diff,
            },
        ))
        .await;
        Ok(PatchOutcome::Applied {
            report: applied_report(&plan.applied),
        })
    }

    /// Decides whether the plan may be written: `None` when it may, else what the model is
    /// told. Files beneath the sandbox's writable roots (and outside its read-only subpaths)
    /// are written without asking; any other file needs the user's approval, which the
    /// `never` policy cannot ask for. `cancel` stops the turn.
    async fn approve(
        &mut self,
        item_id: &str,
        started_at_ms: i64,
        plan: &Plan,
    ) -> Result<Option<PatchOutcome>, AgentError> {
        let roots = match self
            .sandboxing
            .writable_roots(&self.sandbox_policy, Path::new(&self.cwd))
        {
            Ok(roots) => roots,
            Err(error) => {
                return Ok(Some(PatchOutcome::Declined {
                    report: format!("The patch was refused; no file was changed: {error}."),
                }));
            }
        };
        let Some(roots) = roots else {
            return Ok(None);
        };
        let (outside, outside_real): (Vec<&str>, Vec<&Path>) = plan
            .touched
            .iter()
            .filter(|(_, real)| !roots.allows(real))
            .map(|(display, real)| (display.as_str(), real.as_path()))
            .unzip();
        if outside.is_empty() {
            return Ok(None);
        }
        // Files the user already allowed for the session (`acceptForSession`).
        if self.approval_policy != ApprovalPolicy::Never
            && self
                .thread
                .session_approvals()
                .allows_paths(outside_real.iter().copied())
        {
            return Ok(None);
        }
        let where_allowed = if roots.writable.is_empty() {
            "the sandbox is read-only, so every change needs approval".to_owned()
        } else {
            let listed: Vec<String> = roots
                .writable
                .iter()
                .map(|root| root.display().to_string())
                .collect();
            format!(
                "files may be changed without approval beneath {} (not in a top-level .git)",
                listed.join(", ")
            )
        };
        let reason = format!(
            "the patch changes {} outside the writable roots; {where_allowed}",
            outside.join(", ")
        );
        if self.approval_policy == ApprovalPolicy::Never {
            return Ok(Some(PatchOutcome::Declined {
                report: format!(
                    "The patch was refused; no file was changed: {reason}, and the approval \
                     policy `never` cannot ask for it. Change only files that may be changed \
                     without approval."
                ),
            }));
        }
        let params = FileChangeRequestApprovalParams {
            thread_id: self.thread.id.clone(),
            turn_id: self.turn_id.clone(),
            item_id: item_id.to_owned(),
            started_at_ms,
            reason: Some(reason),
            grant_root: None,
        };
        self.set_flag(ThreadActiveFlag::WaitingOnApproval, true)
            .await;
        let pending = self
            .send_to_thread(|id| FileChangeRequestApproval::into_request(id, params))
            .await;
        let answer = self.await_answer(pending).await;
        self.set_flag(ThreadActiveFlag::WaitingOnApproval, false)
            .await;
        let decision = match &answer {
            Ok(Ok(value)) => {
                serde_json::from_value::<FileChangeRequestApprovalResponse>(value.clone())
                    .map(|response| response.decision)
                    .unwrap_or(FileChangeApprovalDecision::Decline)
            }
            // An error reply or an interruption: nothing may be written.
            _ => FileChangeApprovalDecision::Decline,
        };
        let declined = PatchOutcome::Declined {
            report: format!(
                "The user declined this patch; no file was changed ({}). Do not apply it again \
                 unchanged.",
                outside.join(", ")
            ),
        };
        match decision {
            _ if answer.is_err() => {
                self.item_completed(file_change(
                    item_id,
                    plan.changes.clone(),
                    PatchApplyStatus::Declined,
                ))
                .await;
                Err(AgentError::Interrupted)
            }
            FileChangeApprovalDecision::Accept => Ok(None),
            FileChangeApprovalDecision::AcceptForSession => {
                self.thread
                    .session_approvals()
                    .approve_paths(outside_real.iter().copied());
                Ok(None)
            }
            FileChangeApprovalDecision::Decline => Ok(Some(declined)),
            FileChangeApprovalDecision::Cancel => {
                // `cancel` stops the turn, like an interrupt from the client.
                self.item_completed(file_change(
                    item_id,
                    plan.changes.clone(),
                    PatchApplyStatus::Declined,
                ))
                .await;
                self.active.cancel.cancel();
                Err(AgentError::Interrupted)
            }
        }
    }
}

/// A `fileChange` item.
fn file_change(id: &str, changes: Vec<FileUpdateChange>, status: PatchApplyStatus) -> ThreadItem {
    ThreadItem::FileChange {
        id: id.to_owned(),
        changes,
        status,
    }
}

/// Parses `text`, resolves its paths against `cwd`, reads the files and applies the patch in
/// memory. Reads the disk, writes nothing.
fn plan(cwd: &Path, text: &str) -> Result<Plan, PlanError> {
    let mut patch = tandem_patch::parse_with(text, &LIMITS)?;
    let mut resolved: Vec<ResolvedPath> = Vec::new();
    let mut display = |written: &mut String| -> Result<(), PlanError> {
        let path = paths::resolve(cwd, written)?;
        written.clone_from(&path.display);
        if !resolved.iter().any(|known| known.display == path.display) {
            resolved.push(path);
        }
        Ok(())
    };
    for change in &mut patch.changes {
        match change {
            FileChange::Add { path, .. } | FileChange::Delete { path } => display(path)?,
            FileChange::Update { path, move_to, .. } => {
                display(path)?;
                if let Some(to) = move_to {
                    display(to)?;
                }
            }
        }
    }
    let real = |display: &str| -> PathBuf {
        resolved
            .iter()
            .find(|path| path.display == display)
            .map(|path| path.real.clone())
            .expect("every path of the patch was resolved")
    };
    let absolute = |display: &str| -> String {
        resolved
            .iter()
            .find(|path| path.display == display)
            .map(|path| path.absolute.display().to_string())
            .expect("every path of the patch was resolved")
    };
    // What the patch read, kept as the files' earlier content for the checkpoint.
    let mut originals: Vec<(PathBuf, Option<String>)> = Vec::new();
    let applied = apply(&patch, |display| {
        let path = real(display);
        let text = read_text(&path)?;
        originals.push((path, text.clone()));
        Ok(text)
    })?;
    let changes = applied
        .iter()
        .map(|change| FileUpdateChange {
            path: absolute(change.path()),
            kind: match change {
                AppliedChange::Add { .. } => PatchChangeKind::Add,
                AppliedChange::Delete { .. } => PatchChangeKind::Delete,
                AppliedChange::Update { move_to, .. } => PatchChangeKind::Update {
                    move_path: move_to.as_deref().map(absolute),
                },
            },
            diff: change.unified_diff(),
        })
        .collect();
    let mut finals: Vec<FinalState> = Vec::new();
    let mut touched: Vec<(String, PathBuf)> = Vec::new();
    let mut set = |display: &str, contents: Option<&str>, existed: bool| {
        let path = real(display);
        if !touched.iter().any(|(known, _)| known == display) {
            touched.push((display.to_owned(), path.clone()));
        }
        match finals.iter_mut().find(|state| state.path == path) {
            Some(state) => state.contents = contents.map(str::to_owned),
            None => finals.push(FinalState {
                path,
                contents: contents.map(str::to_owned),
                exists: existed,
            }),
        }
    };
    for change in &applied {
        match change {
            AppliedChange::Add { path, contents } => set(path, Some(contents), false),
            AppliedChange::Delete { path, .. } => set(path, None, true),
            AppliedChange::Update {
                path,
                move_to,
                new_contents,
                ..
            } => match move_to {
                Some(to) => {
                    set(path, None, true);
                    set(to, Some(new_contents), false);
                }
                None => set(path, Some(new_contents), true),
            },
        }
    }
    // A file the patch adds and deletes again never reaches the disk.
    finals.retain(|state| state.exists || state.contents.is_some());
    let befores = finals
        .iter()
        .map(|state| {
            if let Some((_, text)) = originals.iter().find(|(path, _)| *path == state.path) {
                return Before::Text(text.clone());
            }
            // A file the patch did not read: an added file or a move's destination, which
            // may exist already.
            match read_text(&state.path) {
                Ok(text) => Before::Text(text),
                Err(error) => Before::Unreadable(error.to_string()),
            }
        })
        .collect();
    let after_digests = finals
        .iter()
        .map(|state| state.contents.as_deref().map(checkpoint::digest))
        .collect();
    Ok(Plan {
        applied,
        changes,
        finals,
        befores,
        after_digests,
        touched,
    })
}

/// Applies `patch` to the files `read` returns.
fn apply(
    patch: &Patch,
    read: impl FnMut(&str) -> Result<Option<String>, ReadError>,
) -> Result<Vec<AppliedChange>, tandem_patch::ApplyError> {
    tandem_patch::apply_with(patch, &LIMITS, read)
}

/// The text of the file at `path`; `None` when there is none.
fn read_text(path: &Path) -> Result<Option<String>, ReadError> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    if !metadata.is_file() {
        return Err(ReadError::NotAFile);
    }
    if metadata.len() > LIMITS.max_file_bytes as u64 {
        return Err(ReadError::TooLarge {
            bytes: metadata.len(),
            limit: LIMITS.max_file_bytes,
        });
    }
    let bytes = std::fs::read(path)?;
    if bytes.contains(&0) {
        return Err(ReadError::Binary);
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| ReadError::Binary)
}

/// What the model is told of an applied patch: each file and what happened to it.
fn applied_report(applied: &[AppliedChange]) -> String {
    let mut report = String::from("The patch was applied; every file was written:");
    for change in applied {
        report.push('\n');
        match change {
            AppliedChange::Add { path, .. } => report.push_str(&format!("added {path}")),
            AppliedChange::Delete { path, .. } => report.push_str(&format!("deleted {path}")),
            AppliedChange::Update {
                path,
                move_to: Some(to),
                ..
            } => report.push_str(&format!("updated {path} and moved it to {to}")),
            AppliedChange::Update { path, .. } => report.push_str(&format!("updated {path}")),
        }
    }
    report
}
