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
//!
//! Beneath the writable roots, the top-level `.git` of each root and the server's home stay
//! read-only (the `protected` module); [`ReadOnlySubpaths`] says how this machine enforces that.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tandem_protocol::SandboxPolicy;

use crate::program::HelperProgram;

mod protected;

pub(crate) use protected::PROBE_SUBCOMMAND;

/// The environment variable that makes the probe report Landlock as missing, whatever the
/// kernel supports: a test knob for the refusal path (`1` turns it on).
pub const FORCE_NO_LANDLOCK_ENV: &str = "TANDEM_SANDBOX_FORCE_NO_LANDLOCK";

/// The environment variable that makes the probe report mount namespaces as unusable, as
/// where user namespaces are blocked: `.git` is then kept read-only by Landlock alone
/// ([`ReadOnlySubpaths::LandlockPerEntry`]). A knob to see (and test) that path (`1` turns it
/// on).
pub const FORCE_NO_MOUNT_NAMESPACE_ENV: &str = "TANDEM_SANDBOX_FORCE_NO_MOUNT_NAMESPACE";

/// How the paths that stay read-only beneath a writable root (its top-level `.git`, the
/// server's home) are kept read-only, as the probe found it (docs/security.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReadOnlySubpaths {
    /// The command runs in a mount namespace of its own, in which each of them is bind-mounted
    /// read-only (over a user namespace when the server is unprivileged), as bubblewrap does.
    MountNamespace,
    /// Landlock grants write access to each entry of such a root except them, since it
    /// cannot take a subdirectory back out of a granted tree: in that root (and in each
    /// directory between it and a protected path) no entry can be created, removed or renamed.
    LandlockPerEntry,
}

impl ReadOnlySubpaths {
    /// Its name on the wire (`config/read`'s `sandbox_support.readOnlySubpaths`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MountNamespace => "mountNamespace",
            Self::LandlockPerEntry => "landlockPerEntry",
        }
    }
}

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
    /// How `.git` and the home are kept read-only beneath writable roots; `None` where
    /// Landlock is missing, so that neither way can be enforced.
    pub read_only_subpaths: Option<ReadOnlySubpaths>,
    /// Why the command cannot get a mount namespace of its own, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount_namespace_unavailable: Option<String>,
}

impl SandboxSupport {
    /// The support of this machine, probed on the first call (and logged); later calls
    /// return the same answer. Whether a mount namespace works is tried in a process of
    /// `helper`, the program that will apply the sandbox (the server's own process must not
    /// change namespaces); without a helper it is reported as untried.
    pub fn probe(helper: Option<&HelperProgram>) -> SandboxSupport {
        static KERNEL: OnceLock<SandboxSupport> = OnceLock::new();
        static NAMESPACE: OnceLock<Result<(), String>> = OnceLock::new();
        static LOGGED: std::sync::Once = std::sync::Once::new();
        let forced = |name: &str| std::env::var(name).is_ok_and(|value| value == "1");
        let kernel = KERNEL.get_or_init(|| Self::probe_kernel(forced(FORCE_NO_LANDLOCK_ENV)));
        let namespace = if forced(FORCE_NO_MOUNT_NAMESPACE_ENV) {
            Err(format!("forced off by {FORCE_NO_MOUNT_NAMESPACE_ENV}=1"))
        } else if let Some(helper) = helper {
            NAMESPACE
                .get_or_init(|| protected::probe_mount_namespace(helper))
                .clone()
        } else {
            Err("not tried: the server has no helper program".to_owned())
        };
        let support = kernel.clone().with_mount_namespace(namespace);
        LOGGED.call_once(|| Self::log(&support));
        support
    }

    /// Logs what was found, once per process.
    fn log(support: &SandboxSupport) {
        let read_only = support
            .read_only_subpaths
            .map_or("none", ReadOnlySubpaths::as_str);
        let namespace = support
            .mount_namespace_unavailable
            .as_deref()
            .unwrap_or("available");
        match (&support.landlock_abi, support.seccomp) {
            (Some(abi), true) => tracing::info!(
                kernel = %support.kernel, landlock_abi = abi, seccomp = true,
                read_only_subpaths = read_only, mount_namespace = namespace,
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
    }

    /// Probes now, without the cache: `force_no_landlock` reports Landlock as missing, and
    /// the mount namespace is tried in a process of `helper` (reported as untried without
    /// one).
    pub fn probe_now(force_no_landlock: bool, helper: Option<&HelperProgram>) -> SandboxSupport {
        let namespace = match helper {
            Some(helper) => protected::probe_mount_namespace(helper),
            None => Err("not tried: no helper program was given".to_owned()),
        };
        Self::probe_kernel(force_no_landlock).with_mount_namespace(namespace)
    }

    /// This support with the mount namespace found usable (`Ok`) or not, and why: decides
    /// [`SandboxSupport::read_only_subpaths`] (Landlock per entry without the namespace).
    pub fn with_mount_namespace(mut self, found: Result<(), String>) -> Self {
        self.mount_namespace_unavailable = found.err();
        self.read_only_subpaths = self.landlock_abi.map(|_| {
            if self.mount_namespace_unavailable.is_none() {
                ReadOnlySubpaths::MountNamespace
            } else {
                ReadOnlySubpaths::LandlockPerEntry
            }
        });
        self
    }

    /// Landlock and seccomp; no read-only subpaths until [`Self::with_mount_namespace`].
    fn probe_kernel(force_no_landlock: bool) -> SandboxSupport {
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
            read_only_subpaths: None,
            mount_namespace_unavailable: None,
        }
    }

    /// Whether restricting policies can be enforced (fully or partially) here, including
    /// keeping `.git` read-only beneath writable roots.
    pub fn can_enforce(&self) -> bool {
        self.landlock_abi.is_some() && self.seccomp && self.read_only_subpaths.is_some()
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
    /// Directories (and files) writable beneath, canonical; everything else is read-only.
    pub writable: Vec<PathBuf>,
    /// Paths beneath `writable` that stay read-only: each root's top-level `.git` (and the git
    /// directory a `.git` file or link names), the server's home. Writable roots at or beneath
    /// one of them stay writable.
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    /// How `read_only` is enforced; `None` when there is nothing to keep read-only.
    #[serde(default)]
    pub read_only_by: Option<ReadOnlySubpaths>,
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
    /// Landlock or seccomp is missing, or neither way of keeping `.git` read-only works.
    #[error(
        "sandbox policy {policy} cannot be enforced on this machine (kernel {kernel}, Landlock \
         ABI {abi}, seccomp {seccomp}, read-only .git by {read_only}): the command was not run. \
         Run Tandem on Linux 5.13 or later with Landlock enabled (add `landlock` to the \
         kernel's `lsm=` boot parameter) and seccomp, or ask for the `danger-full-access` \
         sandbox to run commands without one (docs/security.md)"
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
        /// How `.git` is kept read-only, or `none`.
        read_only: &'static str,
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

/// The sandbox of one server: the machine's support, the helper that applies it and the
/// server's home, which commands must not write.
#[derive(Debug, Clone)]
pub struct Sandboxing {
    helper: Option<HelperProgram>,
    support: SandboxSupport,
    home: Option<PathBuf>,
}

impl Sandboxing {
    /// Sandboxing with this process's probed support, applied by `helper`.
    pub fn new(helper: Option<HelperProgram>) -> Self {
        let support = SandboxSupport::probe(helper.as_ref());
        Self::with_support(helper, support)
    }

    /// Sandboxing with the given support, e.g. one probed with Landlock forced off.
    pub fn with_support(helper: Option<HelperProgram>, support: SandboxSupport) -> Self {
        Self {
            helper,
            support,
            home: None,
        }
    }

    /// Keeps `home` (the server's home: its configuration and thread store) read-only for
    /// commands where it lies beneath one of their writable roots.
    pub fn protecting_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
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
        let Some(spec) = self.spec(policy, cwd)? else {
            return Ok(None);
        };
        self.enforced(policy, spec).map(Some)
    }

    /// Where `policy` lets the agent write, for writes the server makes itself on the
    /// agent's behalf (its patches): the same writable roots and read-only subpaths a command
    /// run in `cwd` gets, whether or not this machine could enforce them on a command. `None`
    /// when the policy restricts nothing.
    pub fn writable_roots(
        &self,
        policy: &SandboxPolicy,
        cwd: &Path,
    ) -> Result<Option<WritableRoots>, SandboxError> {
        Ok(self.spec(policy, cwd)?.map(|spec| WritableRoots {
            writable: spec.writable,
            read_only: spec.read_only,
        }))
    }

    /// The restrictions of `policy` for `cwd`, before checking that they can be enforced.
    fn spec(
        &self,
        policy: &SandboxPolicy,
        cwd: &Path,
    ) -> Result<Option<SandboxSpec>, SandboxError> {
        let spec = match policy {
            SandboxPolicy::DangerFullAccess | SandboxPolicy::ExternalSandbox { .. } => {
                return Ok(None);
            }
            SandboxPolicy::ReadOnly { network_access } => SandboxSpec {
                writable: Vec::new(),
                read_only: Vec::new(),
                read_only_by: None,
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
                // and nothing can be written beneath it anyway. Canonical, so that what stays
                // read-only beneath a root is found whatever links lead to it.
                let mut writable: Vec<PathBuf> = writable
                    .iter()
                    .filter_map(|root| std::fs::canonicalize(root).ok())
                    .collect();
                writable.sort();
                writable.dedup();
                let read_only = protected::read_only_subpaths(&writable, self.home.as_deref());
                SandboxSpec {
                    read_only_by: self
                        .support
                        .read_only_subpaths
                        .filter(|_| !read_only.is_empty()),
                    writable,
                    read_only,
                    network: *network_access,
                }
            }
        };
        Ok(Some(spec))
    }

    /// `spec` as a command's sandbox, or why this machine cannot enforce it.
    fn enforced(
        &self,
        policy: &SandboxPolicy,
        spec: SandboxSpec,
    ) -> Result<ResolvedSandbox, SandboxError> {
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
                read_only: self
                    .support
                    .read_only_subpaths
                    .map_or("none", ReadOnlySubpaths::as_str),
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
        Ok(ResolvedSandbox {
            helper,
            spec,
            partial,
        })
    }
}

/// Where a policy lets the agent write ([`Sandboxing::writable_roots`]): canonical writable
/// roots, and the paths beneath them that stay read-only (each root's top-level `.git`, the
/// server's home).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritableRoots {
    /// Directories writable beneath, canonical; empty for `readOnly`.
    pub writable: Vec<PathBuf>,
    /// Paths beneath `writable` that stay read-only.
    pub read_only: Vec<PathBuf>,
}

impl WritableRoots {
    /// Whether `path` (canonical: resolved through links and `..`) may be written: it lies
    /// beneath a writable root and not beneath a read-only subpath, unless a writable root
    /// at or beneath that subpath reopens it (as the helper does for commands).
    pub fn allows(&self, path: &Path) -> bool {
        let root = self
            .writable
            .iter()
            .filter(|root| path.starts_with(root))
            .max_by_key(|root| root.as_os_str().len());
        let Some(root) = root else {
            return false;
        };
        !self
            .read_only
            .iter()
            .any(|protected| path.starts_with(protected) && !root.starts_with(protected))
    }
}

#[cfg(test)]
mod tests;
