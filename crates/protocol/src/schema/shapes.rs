//! Canonical shapes of the types whose serde impls are hand-written, so that their bindings
//! can still be derived: each shape is what the type's `Serialize` emits, and the real type
//! hands both traits over to it.

use std::borrow::Cow;
use std::path::PathBuf;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;
use ts_rs::{Config, TS, TypeVisitor};

use crate::UserInput;

/// One piece of user input, tagged on `type`. Only `text` belongs to the protocol.
///
/// On input the server also recognises the input types of existing clients (`image`,
/// `localImage`, `audio`, `localAudio`, `skill`, `mention`) and answers them with -32602
/// `unsupported input type: X`; they are not part of this schema.
#[derive(JsonSchema, TS)]
#[schemars(rename = "UserInput", tag = "type", rename_all = "camelCase")]
#[ts(rename = "UserInput", tag = "type", rename_all = "camelCase")]
// Never built: only its shape is read, by the derives.
#[allow(dead_code)]
pub(crate) enum UserInputShape {
    /// Text from the user.
    Text {
        /// The text.
        text: String,
        /// UI annotations of existing clients. Always `[]` on output; on input any array is
        /// accepted (or the member omitted) and dropped.
        text_elements: Vec<Value>,
    },
}

// By hand rather than `with`/`as` on the type, so that the bindings carry the shape's docs
// (the wire contract) instead of those of the Rust enum (its `Unsupported` variant).
impl JsonSchema for UserInput {
    fn schema_name() -> Cow<'static, str> {
        UserInputShape::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        UserInputShape::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        UserInputShape::json_schema(generator)
    }
}

impl TS for UserInput {
    type WithoutGenerics = Self;
    type OptionInnerType = Self;

    fn docs() -> Option<String> {
        UserInputShape::docs()
    }

    fn name(config: &Config) -> String {
        UserInputShape::name(config)
    }

    fn inline(config: &Config) -> String {
        UserInputShape::inline(config)
    }

    fn inline_flattened(config: &Config) -> String {
        UserInputShape::inline_flattened(config)
    }

    fn decl(config: &Config) -> String {
        UserInputShape::decl(config)
    }

    fn decl_concrete(config: &Config) -> String {
        UserInputShape::decl_concrete(config)
    }

    fn visit_dependencies(visitor: &mut impl TypeVisitor) {
        UserInputShape::visit_dependencies(visitor);
    }

    fn output_path() -> Option<PathBuf> {
        UserInputShape::output_path()
    }
}
