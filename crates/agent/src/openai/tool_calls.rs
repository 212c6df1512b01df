//! Assembling streamed Chat Completions tool calls from their fragments, by the rules real
//! servers need: calls are keyed by `index` (a missing one counts as 0); a new non-empty `id`
//! at an index already in use starts a new call (Ollama sends index 0 for every parallel
//! call); a name is assigned, never appended; argument fragments are appended and parsed only
//! when the call runs.

use std::collections::HashMap;

use serde::Deserialize;

/// A fragment of a streamed tool call, as the Chat Completions stream sends it (the
/// assembler's input; the Responses wire builds whole calls itself).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ToolCallDelta {
    #[serde(default)]
    pub(crate) index: Option<u32>,
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) function: Option<FunctionDelta>,
}

/// The function part of a tool-call fragment.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) arguments: Option<String>,
}

/// One tool call the model asked for, complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolCall {
    /// The model's id for the call, echoed as `tool_call_id` in the result.
    pub(crate) id: String,
    /// The function name; empty when the model never sent one.
    pub(crate) name: String,
    /// The arguments as the model wrote them (JSON text, not yet parsed).
    pub(crate) arguments: String,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
    /// How much of `arguments` went out as a patch's progress ([`Decoded::PatchInput`]).
    ///
    /// [`Decoded::PatchInput`]: super::Decoded::PatchInput
    streamed: usize,
}

/// Collects the fragments of every tool call of one streamed answer.
#[derive(Debug, Default)]
pub(crate) struct ToolCallAssembler {
    calls: Vec<PartialCall>,
    /// For each index, the position in `calls` of the call that index currently feeds.
    current: HashMap<u32, usize>,
}

impl ToolCallAssembler {
    /// Adds one fragment; returns the position of the call it belongs to.
    pub(crate) fn push(&mut self, delta: ToolCallDelta) -> usize {
        let index = delta.index.unwrap_or(0);
        let id = delta.id.filter(|id| !id.is_empty());
        let position = match self.current.get(&index).copied() {
            Some(position) => {
                let call = &mut self.calls[position];
                match (&call.id, &id) {
                    (Some(existing), Some(new)) if existing != new => None,
                    (None, Some(new)) => {
                        call.id = Some(new.clone());
                        Some(position)
                    }
                    _ => Some(position),
                }
            }
            None => None,
        };
        let position = position.unwrap_or_else(|| {
            self.calls.push(PartialCall {
                id: id.clone(),
                ..PartialCall::default()
            });
            let position = self.calls.len() - 1;
            self.current.insert(index, position);
            position
        });
        let call = &mut self.calls[position];
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|name| !name.is_empty()) {
                call.name = Some(name);
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
        position
    }

    /// The arguments of the call at `position` not handed out yet, when it is an
    /// `apply_patch` call (from the start once its name is known, so arguments that came
    /// before the name are not lost).
    pub(crate) fn patch_fragment(&mut self, position: usize) -> Option<String> {
        let call = self.calls.get_mut(position)?;
        if call.name.as_deref() != Some(super::apply_patch::APPLY_PATCH_TOOL) {
            return None;
        }
        super::patch_stream::unstreamed(&call.arguments, &mut call.streamed)
    }

    /// The calls in the order they started; a call without an id gets one, so its result can
    /// still be matched to it. Whether this is empty is what makes an answer a tool turn,
    /// whatever its `finish_reason` said.
    pub(crate) fn finish(self) -> Vec<ToolCall> {
        self.calls
            .into_iter()
            .enumerate()
            .map(|(position, call)| ToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{position}")),
                name: call.name.unwrap_or_default(),
                arguments: call.arguments,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(
        index: Option<u32>,
        id: Option<&str>,
        name: Option<&str>,
        args: &str,
    ) -> ToolCallDelta {
        ToolCallDelta {
            index,
            id: id.map(str::to_owned),
            function: Some(FunctionDelta {
                name: name.map(str::to_owned),
                arguments: Some(args.to_owned()),
            }),
        }
    }

    fn assemble(deltas: Vec<ToolCallDelta>) -> Vec<(String, String, String)> {
        let mut assembler = ToolCallAssembler::default();
        for delta in deltas {
            assembler.push(delta);
        }
        assembler
            .finish()
            .into_iter()
            .map(|call| (call.id, call.name, call.arguments))
            .collect()
    }

    fn call(id: &str, name: &str, args: &str) -> (String, String, String) {
        (id.to_owned(), name.to_owned(), args.to_owned())
    }

    #[test]
    fn fragments_append_arguments_and_assign_the_name() {
        let calls = assemble(vec![
            delta(Some(0), Some("a"), Some("shell"), ""),
            delta(Some(0), None, None, "{\"com"),
            delta(Some(0), Some(""), Some("shell"), "mand\""),
            delta(Some(0), None, None, ": \"ls\"}"),
        ]);
        assert_eq!(calls, vec![call("a", "shell", "{\"command\": \"ls\"}")]);
    }

    #[test]
    fn openai_style_parallel_calls_are_keyed_by_index() {
        let calls = assemble(vec![
            delta(Some(0), Some("a"), Some("one"), "{\"x\":"),
            delta(Some(1), Some("b"), Some("two"), "{\"y\":"),
            delta(Some(0), None, None, "1}"),
            delta(Some(1), None, None, "2}"),
        ]);
        assert_eq!(
            calls,
            vec![call("a", "one", "{\"x\":1}"), call("b", "two", "{\"y\":2}")]
        );
    }

    #[test]
    fn a_new_id_at_a_used_index_starts_a_new_call() {
        let calls = assemble(vec![
            delta(Some(0), Some("a"), Some("one"), "{}"),
            delta(Some(0), Some("b"), Some("two"), "{\"y\":"),
            delta(Some(0), None, None, "2}"),
        ]);
        assert_eq!(
            calls,
            vec![call("a", "one", "{}"), call("b", "two", "{\"y\":2}")]
        );
    }

    #[test]
    fn a_missing_index_counts_as_zero_and_missing_ids_are_made_up() {
        let calls = assemble(vec![
            delta(None, Some("a"), Some("one"), "{}"),
            delta(None, Some("b"), Some("two"), "{}"),
        ]);
        assert_eq!(calls, vec![call("a", "one", "{}"), call("b", "two", "{}")]);
        let anonymous = assemble(vec![delta(None, None, Some("one"), "{}")]);
        assert_eq!(anonymous, vec![call("call_0", "one", "{}")]);
    }
}
