//! The OS sandbox of the agent's commands (docs/security.md): what this machine can enforce
//! ([`SandboxSupport`], probed once per process), and how a wire [`SandboxPolicy`] becomes the
//! restrictions of one command ([`ResolvedSandbox`]) or a refusal ([`SandboxError`]).
//!
//! The restrictions themselves are applied by the `sandbox` helper
//! ([`crate::helper::sandbox`]) to itself just before it executes the command, so that only
//! the child is restricted, never the server, and no `unsafe` `pre_exec` hook is needed. The
//! process layer takes a resolved sandbox as one optional value
//! ([`crate::ProcessManager::spawn_sandboxed`]).
//!
//! Fail closed: a policy that restricts anything needs Landlock, seccomp and a helper program;
//! without one of them [`Sandboxing::resolve`] refuses with an error that says what to change,
//! and the command does not run.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tandem_protocol::SandboxPolicy;

use crate::program::HelperProgram;

/// The environment variable that makes the probe report Landlock as missing, whatever the
/// kernel supports: a test knob for the refusal path (`1` turns it on).
pub const FORCE_NO_LANDLOCK_ENV: &str = "TANDEM_SANDBOX_FORCE_NO_LANDLOCK";

/// The lowest Landlock ABI at which a policy is enforced in full: ABI 3 adds the control of
/// `truncate`, without which a read-only file could still be emptied.
pub const FULL_LANDLOCK_ABI: i32 = 3;

/// What the kernel offers the sandbox, found once per process by [`SandboxSupport::probe`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxSupport {
    /// The kernel release (`uname -r`).
    pub kernel: String,
    /// The Landlock ABI version, `None` when Landlock is unavailable.
    pub landlock_abi: Option<i32>,
    /// Why Landlock is unavailable, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landlock_unavailable: Option<String>,
    /// Whether seccomp filters are available.
    pub seccomp: bool,
}

impl SandboxSupport {
    /// The support of this machine, probed on the first call (and logged); later calls
    /// return the same answer.
    pub fn probe() -> &'static SandboxSupport {
        static PROBED: OnceLock<SandboxSupport> = OnceLock::new();
        PROBED.get_or_init(|| {
            let support = Self::probe_now(
                std::env::var(FORCE_NO_LANDLOCK_ENV).is_ok_and(|value| value == "1"),
            );
            match (&support.landlock_abi, support.seccomp) {
                (Some(abi), true) => tracing::info!(
                    kernel = %support.kernel, landlock_abi = abi, seccomp = true,
                    "command sandbox available"
                ),
                _ => tracing::warn!(
                    kernel = %support.kernel,
                    landlock_abi = ?support.landlock_abi,
                    landlock = support.landlock_unavailable.as_deref().unwrap_or("available"),
                    seccomp = support.seccomp,
                    "command sandbox unavailable: commands under read-only or workspace-write \
                     policies will be refused (docs/security.md)"
                ),
            }
            support
        })
    }

    /// Probes now, without the cache; `force_no_landlock` reports Landlock as missing.
    pub fn probe_now(force_no_landlock: bool) -> SandboxSupport {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|release| release.trim().to_owned())
            .unwrap_or_else(|_| "unknown".to_owned());
        let (landlock_abi, landlock_unavailable) = if force_no_landlock {
            (
                None,
                Some(format!("forced off by {FORCE_NO_LANDLOCK_ENV}=1")),
            )
        } else {
            match landlock_abi() {
                Some(abi) => (Some(abi), None),
                None => (
                    None,
                    Some(
                        "the kernel does not offer Landlock (or it is not enabled at boot)".into(),
                    ),
                ),
            }
        };
        SandboxSupport {
            kernel,
            landlock_abi,
            landlock_unavailable,
            seccomp: seccomp_available(),
        }
    }

    /// Whether restricting policies can be enforced (fully or partially) here.
    pub fn can_enforce(&self) -> bool {
        self.landlock_abi.is_some() && self.seccomp
    }
}

/// The highest Landlock ABI the kernel supports, up to 6 (the newest one whose rights Tandem
/// uses): creating a ruleset that handles every right of an ABI, as a hard requirement,
/// succeeds only when the kernel knows them all, and restricts nothing until it is enforced.
fn landlock_abi() -> Option<i32> {
    use landlock::{
        ABI, Access as _, AccessFs, AccessNet, CompatLevel, Compatible as _, Ruleset,
        RulesetAttr as _, Scope,
    };
    let supports = |abi: ABI| {
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi));
        let ruleset = match ruleset {
            Ok(ruleset) if abi >= ABI::V4 => ruleset.handle_access(AccessNet::from_all(abi)),
            other => other,
        };
        let ruleset = match ruleset {
            Ok(ruleset) if abi >= ABI::V6 => ruleset.scope(Scope::from_all(abi)),
            other => other,
        };
        ruleset.and_then(|ruleset| ruleset.create()).is_ok()
    };
    [
        (ABI::V6, 6),
        (ABI::V5, 5),
        (ABI::V4, 4),
        (ABI::V3, 3),
        (ABI::V2, 2),
        (ABI::V1, 1),
    ]
    .into_iter()
    .find_map(|(abi, number)| supports(abi).then_some(number))
}

/// Whether seccomp filters exist: the kernel lists the `Seccomp` mode of every process in its
/// status when built with seccomp. The helper still fails closed if installing one fails.
fn seccomp_available() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|status| status.lines().any(|line| line.starts_with("Seccomp:")))
}

/// What the `sandbox` helper enforces before it executes a command: passed to it as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxSpec {
    /// Directories (and files) writable beneath; everything else is read-only.
    pub writable: Vec<PathBuf>,
    /// Whether the command may open sockets other than `AF_UNIX`.
    pub network: bool,
}

/// The restrictions one command runs under: give it to
/// [`crate::ProcessManager::spawn_sandboxed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedSandbox {
    pub(crate) helper: HelperProgram,
    pub(crate) spec: SandboxSpec,
    partial: Option<String>,
}

impl ResolvedSandbox {
    /// What enforces it and how: the writable roots and the network switch.
    pub fn spec(&self) -> &SandboxSpec {
        &self.spec
    }

    /// Why the policy is only partially enforced on this machine, if it is.
    pub fn partial_enforcement(&self) -> Option<&str> {
        self.partial.as_deref()
    }
}

/// Why a command's sandbox policy cannot be enforced; the command is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// Landlock or seccomp is missing.
    #[error(
        "sandbox policy {policy} cannot be enforced on this machine (kernel {kernel}, Landlock \
         ABI {abi}, seccomp {seccomp}): the command was not run. Run Tandem on Linux 5.13 or \
         later with Landlock enabled (add `landlock` to the kernel's `lsm=` boot parameter) \
         and seccomp, or ask for the `danger-full-access` sandbox to run commands without \
         one (docs/security.md)"
    )]
    Unsupported {
        /// The policy asked for.
        policy: String,
        /// The kernel release.
        kernel: String,
        /// The Landlock ABI, or why there is none.
        abi: String,
        /// `available` or `unavailable`.
        seccomp: &'static str,
    },
    /// The embedder named no helper program, which the sandbox needs to restrict only the
    /// child.
    #[error(
        "sandbox policy {policy} cannot be enforced: this server has no helper program to \
         apply it with, so the command was not run. Name one with \
         ServerOptions::with_helper_program (a binary whose main calls \
         tandem_server::helper::run_if_helper), or ask for `danger-full-access`"
    )]
    NoHelper {
        /// The policy asked for.
        policy: String,
    },
    /// A writable root is relative.
    #[error("writable root {0} is not an absolute path: name it from /")]
    RelativeRoot(String),
}

/// The sandbox of one server: the machine's support and the helper that applies it.
#[derive(Debug, Clone)]
pub struct Sandboxing {
    helper: Option<HelperProgram>,
    support: SandboxSupport,
}

impl Sandboxing {
    /// Sandboxing with this process's probed support, applied by `helper`.
    pub fn new(helper: Option<HelperProgram>) -> Self {
        Self::with_support(helper, SandboxSupport::probe().clone())
    }

    /// Sandboxing with the given support, e.g. one probed with Landlock forced off.
    pub fn with_support(helper: Option<HelperProgram>, support: SandboxSupport) -> Self {
        Self { helper, support }
    }

    /// What this machine offers.
    pub fn support(&self) -> &SandboxSupport {
        &self.support
    }

    /// The restrictions of `policy` for a command run in `cwd`: `None` when the policy
    /// restricts nothing (`dangerFullAccess`, `externalSandbox`), an error when it cannot be
    /// enforced here.
    pub fn resolve(
        &self,
        policy: &SandboxPolicy,
        cwd: &Path,
    ) -> Result<Option<ResolvedSandbox>, SandboxError> {
        let spec = match policy {
            SandboxPolicy::DangerFullAccess | SandboxPolicy::ExternalSandbox { .. } => {
                return Ok(None);
            }
            SandboxPolicy::ReadOnly { network_access } => SandboxSpec {
                writable: Vec::new(),
                network: *network_access,
            },
            SandboxPolicy::WorkspaceWrite {
                writable_roots,
                network_access,
                exclude_tmpdir_env_var,
                exclude_slash_tmp,
            } => {
                let mut writable = vec![cwd.to_path_buf()];
                for root in writable_roots {
                    let root = PathBuf::from(root);
                    if !root.is_absolute() {
                        return Err(SandboxError::RelativeRoot(root.display().to_string()));
                    }
                    writable.push(root);
                }
                if !exclude_slash_tmp {
                    writable.push(PathBuf::from("/tmp"));
                }
                if !exclude_tmpdir_env_var
                    && let Some(tmpdir) = std::env::var_os("TMPDIR").map(PathBuf::from)
                    && tmpdir.is_absolute()
                {
                    writable.push(tmpdir);
                }
                // Landlock rules name open files: a root that does not exist cannot be one,
                // and nothing can be written beneath it anyway.
                writable.retain(|root| root.exists());
                writable.sort();
                writable.dedup();
                SandboxSpec {
                    writable,
                    network: *network_access,
                }
            }
        };
        let describe = || serde_json::to_string(policy).unwrap_or_default();
        if !self.support.can_enforce() {
            return Err(SandboxError::Unsupported {
                policy: describe(),
                kernel: self.support.kernel.clone(),
                abi: match (
                    &self.support.landlock_abi,
                    &self.support.landlock_unavailable,
                ) {
                    (Some(abi), _) => abi.to_string(),
                    (None, Some(why)) => format!("none: {why}"),
                    (None, None) => "none".to_owned(),
                },
                seccomp: if self.support.seccomp {
                    "available"
                } else {
                    "unavailable"
                },
            });
        }
        let Some(helper) = self.helper.clone() else {
            return Err(SandboxError::NoHelper { policy: describe() });
        };
        let partial = self
            .support
            .landlock_abi
            .filter(|abi| *abi < FULL_LANDLOCK_ABI)
            .map(|abi| {
                format!(
                    "Landlock ABI {abi} (kernel {}) cannot stop truncating files outside the \
                     writable roots (ABI {FULL_LANDLOCK_ABI}, Linux 6.2, can)",
                    self.support.kernel
                )
            });
        Ok(Some(ResolvedSandbox {
            helper,
            spec,
            partial,
        }))
    }
}

#[cfg(test)]
mod tests;
