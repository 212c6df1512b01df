//! Canonical shapes of the types whose serde impls are hand-written, so that their bindings
//! can still be derived: each shape is what the type's `Serialize` emits, and the real type
//! hands both traits over to it.

use std::borrow::Cow;
use std::path::PathBuf;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;
use ts_rs::{Config, TS, TypeVisitor};

use crate::{ImageDetail, UserInput};

/// One piece of user input, tagged on `type`: `text`, `image` (a `data:` URL) or `localImage`.
///
/// On input the server also recognises the other input types of existing clients (`audio`,
/// `localAudio`, `skill`, `mention`, an `image` by `fileId`) and answers them with -32602
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
    /// An image inline. A URL that is not a `data:` URL is refused (-32600).
    Image {
        /// The `data:` URL.
        url: String,
        /// How closely the model should look; `null` leaves it to the model.
        detail: Option<ImageDetail>,
    },
    /// An image file on the server's machine, read when the turn is sent to a model.
    LocalImage {
        /// The file's path.
        path: String,
        /// How closely the model should look; `null` leaves it to the model.
        detail: Option<ImageDetail>,
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
