//! The `apply_patch` tool, as the reference offers it: a function tool named `apply_patch`
//! whose one string parameter `input` holds the whole patch (Chat Completions and Responses),
//! and on the Responses API, for the models trained on it, the free-form custom tool of the
//! same name whose input is the patch itself, constrained by a Lark grammar of the format.
//!
//! Either way the call reaches [`crate::TurnDriver::apply_patch`]; a custom call's input is
//! carried as the function form's arguments (`{"input": PATCH}`) inside the agent, and turned
//! back into a custom call when the conversation is sent again.

use serde::Deserialize;
use serde_json::{Value, json};
use tandem_protocol::{FileUpdateChange, PatchApplyStatus, PatchChangeKind};

use super::transcript::FunctionTool;

/// The tool's name.
pub(crate) const APPLY_PATCH_TOOL: &str = "apply_patch";

/// What the model is told the tool does and how a patch is written.
const DESCRIPTION: &str = "\
Edits files by applying a patch: the server checks it, asks the user when it must, and \
writes all of its changes or none. Paths are relative to the working directory.

The patch is framed by `*** Begin Patch` and `*** End Patch` lines. Between them, one \
section per file:
- `*** Add File: PATH`, then the new file's lines, each starting with `+`;
- `*** Delete File: PATH`;
- `*** Update File: PATH`, optionally followed by `*** Move to: NEW_PATH`, then one or more \
hunks. A hunk starts with a line `@@` (or `@@ LINE`, naming a line such as a function \
header that comes before the change, to say where it is); its lines start with ` ` for \
context kept as is, `-` for a line removed, `+` for a line added. Give about three lines of \
context above and below each change, copied exactly from the file; `*** End of File` after \
a hunk pins it to the end of the file.

Example:
*** Begin Patch
*** Update File: src/greet.py
@@ def greet():
-    print(\"Hi\")
+    print(\"Hello\")
*** Add File: NOTES.md
+Greeting changed.
*** End Patch";

/// The Lark grammar of the format, for the Responses API's custom tool.
const GRAMMAR: &str = r#"start: begin_patch file_op+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

file_op: add_file | delete_file | update_file
add_file: "*** Add File: " filename LF add_line*
delete_file: "*** Delete File: " filename LF
update_file: "*** Update File: " filename LF move_to? hunk+
move_to: "*** Move to: " filename LF

hunk: "@@" anchor? LF hunk_line+ end_of_file?
anchor: / (.+)/
hunk_line: (" " | "-" | "+") /(.*)/ LF
add_line: "+" /(.*)/ LF
end_of_file: "*** End of File" LF

filename: /(.+)/

%import common.LF
"#;

/// The function form.
pub(crate) fn function_tool() -> FunctionTool {
    FunctionTool {
        name: APPLY_PATCH_TOOL.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "input": {
                    "type": "string",
                    "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`."
                }
            },
            "required": ["input"],
            "additionalProperties": false
        }),
    }
}

/// The Responses API's free-form form: `{type: "custom", name, description, format}`.
pub(crate) fn custom_tool() -> Value {
    json!({
        "type": "custom",
        "name": APPLY_PATCH_TOOL,
        "description": DESCRIPTION,
        "format": {"type": "grammar", "syntax": "lark", "definition": GRAMMAR},
    })
}

/// Whether `model` is offered the free-form tool on the Responses API: the GPT-5 and Codex
/// families, which the reference offers it to, were trained on it; other models get the
/// function form, which any model that calls functions can use.
pub(crate) fn uses_custom_tool(model: &str) -> bool {
    let model = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    model.starts_with("gpt-5") || model.contains("codex")
}

/// The function form's arguments carrying a custom call's `input`.
pub(crate) fn arguments_of_input(input: &str) -> String {
    json!({ "input": input }).to_string()
}

#[derive(Debug, Deserialize)]
struct Arguments {
    input: String,
}

/// The patch of a call's arguments; an error the model can act on when they hold none.
pub(crate) fn patch_of(arguments: &str) -> Result<String, String> {
    serde_json::from_str::<Arguments>(arguments)
        .map(|arguments| arguments.input)
        .map_err(|error| {
            format!(
                "error: the arguments of {APPLY_PATCH_TOOL} are not valid ({error}); send \
                 {{\"input\": PATCH}} with the whole patch as one string"
            )
        })
}

/// What a stored `fileChange` item replays as: its diffs as the call's input (the patch text
/// itself is not stored), and a result that says what became of it.
pub(crate) fn replay(changes: &[FileUpdateChange], status: PatchApplyStatus) -> (String, String) {
    let diffs: String = changes.iter().map(|change| change.diff.as_str()).collect();
    let result = match status {
        PatchApplyStatus::Completed => {
            let mut result = String::from("The patch was applied; every file was written:");
            for change in changes {
                let path = &change.path;
                result.push('\n');
                result.push_str(&match &change.kind {
                    PatchChangeKind::Add => format!("added {path}"),
                    PatchChangeKind::Delete => format!("deleted {path}"),
                    PatchChangeKind::Update {
                        move_path: Some(to),
                    } => format!("updated {path} and moved it to {to}"),
                    PatchChangeKind::Update { move_path: None } => format!("updated {path}"),
                });
            }
            result
        }
        PatchApplyStatus::Failed if changes.is_empty() => {
            "The patch was not applied; no file was changed (it did not parse or apply).".into()
        }
        PatchApplyStatus::Failed => {
            // Either it failed to write, or a crash cut it short (recovery closes it so).
            "The patch may not have been applied: writing it failed or the server stopped \
             while it was written. Check the files before patching them again."
                .into()
        }
        PatchApplyStatus::Declined => "The patch was declined; no file was changed.".into(),
        PatchApplyStatus::InProgress => super::tools::INTERRUPTED_RESULT.to_owned(),
    };
    (arguments_of_input(&diffs), result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_carry_the_patch_and_bad_ones_say_what_to_send() {
        let arguments = arguments_of_input("*** Begin Patch\n*** End Patch");
        assert_eq!(
            patch_of(&arguments).as_deref(),
            Ok("*** Begin Patch\n*** End Patch")
        );
        let error = patch_of("{\"patch\": 1}").expect_err("no input");
        assert!(error.contains("{\"input\": PATCH}"), "{error}");
    }

    #[test]
    fn the_custom_form_is_for_the_families_trained_on_it() {
        assert!(uses_custom_tool("gpt-5.1-codex"));
        assert!(uses_custom_tool("openai/gpt-5"));
        assert!(!uses_custom_tool("gpt-4.1"));
        assert!(!uses_custom_tool("qwen3-coder"));
        let tool = custom_tool();
        assert_eq!(tool["type"], "custom");
        assert_eq!(tool["format"]["syntax"], "lark");
    }
}
