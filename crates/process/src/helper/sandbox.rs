//! The `sandbox` helper: restricts itself with Landlock and a seccomp filter, then executes the
//! command in its place (same pid, process group, session, terminal and environment), so the
//! command and everything it starts inherit the restrictions and the server keeps none.
//!
//! `PROGRAM __tandem-helper sandbox SPEC_JSON COMMAND ARGS...`, where `SPEC_JSON` is a
//! [`SandboxSpec`]. The paths that stay read-only beneath the writable roots (`.git`, the
//! server's home) are kept so first (the `read_only` helper module): by a mount namespace,
//! which must be set up before Landlock forbids mounting, or by leaving them out of
//! Landlock's grants.
//! The watchdog's guarantees are untouched: the server registers the helper's group or
//! session before it runs anything, and `exec` keeps both and the marker (neither a user nor
//! a mount namespace changes the pid, group or session).
//!
//! Fail closed: if any restriction cannot be applied in full, the helper prints why on stderr
//! and exits with [`SANDBOX_FAILED_EXIT_CODE`] without running the command.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;

use landlock::{
    ABI, Access as _, AccessFs, CompatLevel, Compatible as _, Ruleset, RulesetAttr as _,
    RulesetCreatedAttr as _, RulesetStatus, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::{read_only, report};
use crate::sandbox::SandboxSpec;

/// The subcommand name after [`super::HELPER_ARG`].
pub const SUBCOMMAND: &str = "sandbox";

/// The exit code of a command the sandbox refused to run because a restriction could not be
/// applied (the shell's "cannot execute", which the command itself never reached).
pub const SANDBOX_FAILED_EXIT_CODE: i32 = 126;

/// The prefix of every line the helper prints, so a refusal is recognizable in the output.
pub const REPORT_PREFIX: &str = "tandem sandbox:";

/// Files outside the writable roots that commands write to as a matter of course and that
/// hold nothing: writing to them is no escape.
const ALWAYS_WRITABLE: &[&str] = &["/dev/null", "/dev/zero", "/dev/tty", "/dev/full"];

/// The helper's `main`: `sandbox SPEC_JSON COMMAND ARGS...`. Returns only on failure.
pub(crate) fn main(args: &[OsString]) -> i32 {
    let [spec, program, rest @ ..] = args else {
        report(format_args!(
            "{REPORT_PREFIX} expected a policy and a command to run"
        ));
        return super::HELPER_USAGE_EXIT_CODE;
    };
    let spec: SandboxSpec = match spec.to_str().map(serde_json::from_str) {
        Some(Ok(spec)) => spec,
        _ => {
            report(format_args!("{REPORT_PREFIX} malformed policy {spec:?}"));
            return super::HELPER_USAGE_EXIT_CODE;
        }
    };
    let excluded = match read_only::keep_read_only(&spec, REPORT_PREFIX) {
        Ok(excluded) => excluded,
        Err(error) => {
            report(format_args!(
                "{REPORT_PREFIX} could not keep .git read-only, so the command was not run: \
                 {error}"
            ));
            return SANDBOX_FAILED_EXIT_CODE;
        }
    };
    if let Err(error) = restrict_files(&spec, &excluded) {
        report(format_args!(
            "{REPORT_PREFIX} could not restrict file access, so the command was not run: \
             {error}"
        ));
        return SANDBOX_FAILED_EXIT_CODE;
    }
    if let Err(error) = restrict_syscalls(spec.network) {
        report(format_args!(
            "{REPORT_PREFIX} could not install the seccomp filter, so the command was not run: \
             {error}"
        ));
        return SANDBOX_FAILED_EXIT_CODE;
    }
    // Only returns on failure; the restrictions stay on the helper, which exits.
    let error = std::process::Command::new(program).args(rest).exec();
    report(format_args!(
        "{REPORT_PREFIX} cannot run {}: {error}",
        program.to_string_lossy()
    ));
    if error.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        SANDBOX_FAILED_EXIT_CODE
    }
}

/// Landlock: read and execute everywhere, write only beneath the spec's roots except
/// `excluded` (see [`read_only::writable_grants`]), and the [`ALWAYS_WRITABLE`] devices.
/// Every right of the kernel's ABI is handled, so a right the rules do not grant is denied;
/// no grant is silently dropped, and a ruleset the kernel does not enforce at all is an error.
fn restrict_files(spec: &SandboxSpec, excluded: &[PathBuf]) -> Result<(), String> {
    let writable = read_only::writable_grants(&spec.writable, excluded)?;
    let abi = ABI::V6;
    let status = Ruleset::default()
        // Best effort over the ABI: an older kernel handles fewer rights, which the server
        // already reported as partial enforcement before it started the command.
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(&writable, AccessFs::from_all(abi)))
        })
        .and_then(|ruleset| {
            let devices = ALWAYS_WRITABLE
                .iter()
                .filter(|path| std::path::Path::new(path).exists());
            ruleset.add_rules(path_beneath_rules(
                devices,
                AccessFs::from_read(abi) | AccessFs::from_file(abi),
            ))
        })
        .and_then(|ruleset| ruleset.restrict_self())
        .map_err(|error| error.to_string())?;
    match status.ruleset {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
        RulesetStatus::NotEnforced => {
            Err("the kernel does not enforce Landlock (it is missing or disabled)".to_owned())
        }
    }
}

/// seccomp: `EPERM` for what no sandboxed command needs (tracing or reading other processes,
/// `io_uring`, whose operations escape the filter; joining another namespace or changing
/// mounts, which would undo the read-only mounts of `.git` for a command running as root)
/// and, without network, for every socket that is not `AF_UNIX`. Installing it also sets
/// `no_new_privs`.
fn restrict_syscalls(network: bool) -> Result<(), String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        // Landlock already denies mount, umount and pivot_root to a sandboxed process, but not
        // setns (back into the server's mount namespace, where `.git` is writable) nor the new
        // mount API (mount_setattr would clear the read-only flag).
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_mount_setattr,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
    ] {
        // An empty rule list matches every call of the syscall.
        rules.insert(call, Vec::new());
    }
    if !network {
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(|error| error.to_string())?;
        let rule = SeccompRule::new(vec![not_unix]).map_err(|error| error.to_string())?;
        rules.insert(libc::SYS_socket, vec![rule.clone()]);
        rules.insert(libc::SYS_socketpair, vec![rule]);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|error| error.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|error| error.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|error: seccompiler::BackendError| error.to_string())?;
    seccompiler::apply_filter(&program).map_err(|error| error.to_string())
}
