//! `cargo xtask codegen`: regenerates the protocol bindings checked in under `docs/protocol/`.
//! `cargo xtask check-ts`: compiles the checked-in TypeScript with `tsc` (by hand, not in CI:
//! it needs node and the npm registry).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use tandem_protocol::schema::{BindingKind, BindingSet};

use crate::paths::workspace_root;

fn protocol_docs() -> PathBuf {
    workspace_root().join("docs/protocol")
}

pub(crate) fn regenerate() -> ExitCode {
    for set in BindingSet::CHECKED_IN {
        let dir = protocol_docs().join(set.dir);
        match set.replace_dir(&dir) {
            Ok(written) => eprintln!("xtask: {} files in {}", written.len(), dir.display()),
            Err(err) => {
                eprintln!("xtask: {err}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// Type-level uses of the bindings that must compile, whatever the set.
const USAGE: &str = r#"import type { ClientRequest, ClientRequestResponses, ServerNotification } from "./index";

export const start: ClientRequest = { id: 1, method: "thread/start", params: { cwd: "/tmp", model: null } };
export const turn: ClientRequest = {
  id: "t",
  method: "turn/start",
  params: { threadId: "t1", input: [{ type: "text", text: "hi", text_elements: [] }] },
};
// @ts-expect-error: not a method of the protocol
export const unknown: ClientRequest = { id: 2, method: "thread/frobnicate", params: {} };
// @ts-expect-error: `threadId` is required
export const missing: ClientRequest = { id: 3, method: "thread/read", params: {} };

export function resultOf<M extends ClientRequest["method"]>(
  _method: M,
  result: ClientRequestResponses[M],
): ClientRequestResponses[M] {
  return result;
}
export const unsubscribed = resultOf("thread/unsubscribe", { status: "unsubscribed" });

export function describe(notification: ServerNotification): string {
  switch (notification.method) {
    case "item/agentMessage/delta":
      return notification.params.delta;
    case "turn/completed":
      return notification.params.turn.status;
    default:
      return notification.method;
  }
}
"#;

/// Uses of the experimental API: they compile only against the experimental set.
const EXPERIMENTAL_USAGE: &str = r#"
// @ts-expect-error: experimental method
export const spawn: ClientRequest = { id: 4, method: "process/spawn", params: { processHandle: "p", command: ["ls"] } };
// @ts-expect-error: experimental field
export const tools: ClientRequest = { id: 5, method: "thread/start", params: { dynamicTools: [] } };
"#;

pub(crate) fn check_typescript() -> ExitCode {
    let scratch = std::env::temp_dir().join(format!("tandem-check-ts-{}", std::process::id()));
    let result = check_in(&scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn check_in(scratch: &Path) -> Result<(), String> {
    std::fs::create_dir_all(scratch).map_err(|err| format!("{}: {err}", scratch.display()))?;
    eprintln!("xtask: npm install typescript@5 into {}", scratch.display());
    run_checked(
        Command::new("npm")
            .args(["install", "--silent", "--no-save", "--prefix"])
            .arg(scratch)
            .arg("typescript@5"),
    )?;
    let tsc = scratch.join("node_modules/.bin/tsc");
    for set in BindingSet::CHECKED_IN
        .iter()
        .filter(|set| set.kind == BindingKind::TypeScript)
    {
        let dir = scratch.join(set.dir);
        copy_dir(&protocol_docs().join(set.dir), &dir)?;
        let usage = if set.experimental {
            // Against the experimental set the same lines must compile without complaint.
            format!(
                "{USAGE}{}",
                EXPERIMENTAL_USAGE.replace("// @ts-expect-error", "//")
            )
        } else {
            format!("{USAGE}{EXPERIMENTAL_USAGE}")
        };
        std::fs::write(dir.join("usage.ts"), usage).map_err(|err| err.to_string())?;
        eprintln!("xtask: tsc --strict {}", set.dir);
        run_checked(
            Command::new(&tsc)
                .args([
                    "--noEmit",
                    "--strict",
                    "--noUnusedLocals",
                    "--target",
                    "es2020",
                ])
                .args(["--module", "es2020", "--moduleResolution", "node"])
                .arg(dir.join("index.ts"))
                .arg(dir.join("usage.ts")),
        )?;
    }
    eprintln!("xtask: the TypeScript bindings compile");
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|err| format!("{}: {err}", to.display()))?;
    let entries = std::fs::read_dir(from).map_err(|err| format!("{}: {err}", from.display()))?;
    for entry in entries {
        let path = entry.map_err(|err| err.to_string())?.path();
        let target = to.join(path.file_name().expect("a directory entry has a name"));
        std::fs::copy(&path, &target).map_err(|err| format!("{}: {err}", path.display()))?;
    }
    Ok(())
}

fn run_checked(command: &mut Command) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|err| format!("could not run {command:?}: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed with {status}"))
    }
}
