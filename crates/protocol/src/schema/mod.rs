//! Generated bindings of the protocol (feature `schema`): JSON Schema (draft-07, schemars) and
//! TypeScript (ts-rs) of every message and type, derived from the same serde types that carry
//! the wire, so that a binding cannot say something the codec does not do.
//!
//! Both generators describe the *canonical* wire form: what Tandem sends and what a conforming
//! client should send (schemars' serialize contract). Every member that Tandem always sends is
//! required, nullable ones included; members that may be omitted are optional. Where the server
//! accepts more on input than it sends, the type's description says so; `docs/protocol/README.md`
//! lists those places and the layout of the output.
//!
//! Without `experimental`, the experimental methods, fields and notifications of
//! [`crate::EXPERIMENTAL_CLIENT_METHODS`], [`crate::EXPERIMENTAL_FIELDS`] and
//! [`crate::EXPERIMENTAL_NOTIFICATION_METHODS`] are left out, together with every type that only
//! they use. The output is deterministic: sorted file lists and object keys, `\n` line ends, a
//! trailing newline, and no timestamps or paths of the machine that generated it.
//!
//! ```
//! # fn main() -> Result<(), tandem_protocol::schema::GenerateError> {
//! let files = tandem_protocol::schema::json_schema_files(false)?;
//! let bundle = files
//!     .iter()
//!     .find(|file| file.path == "tandem_protocol.schema.json")
//!     .unwrap();
//! assert!(bundle.contents.contains("\"thread/start\""));
//! assert!(!bundle.contents.contains("\"process/spawn\""));
//! # Ok(())
//! # }
//! ```

use std::io;
use std::path::{Path, PathBuf};

use schemars::{JsonSchema, Schema, SchemaGenerator};
use ts_rs::TS;

mod json;
pub(crate) mod shapes;
mod typescript;

pub use json::BUNDLE_FILE_NAME;

/// One generated file: its path relative to the output directory (`/`-separated, no
/// directories today) and its full contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Path relative to the output directory, e.g. `ThreadStartParams.json`.
    pub path: String,
    /// The file's contents, ending in a newline.
    pub contents: String,
}

/// Why the bindings could not be generated or written.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// Creating, listing, writing or removing a file of the output failed.
    #[error("could not update {}: {source}", path.display())]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// [`crate::EXPERIMENTAL_FIELDS`] names a method or field that the types do not have, so the
    /// non-experimental bindings cannot leave it out.
    #[error(
        "EXPERIMENTAL_FIELDS names {method}.{field}, but the params of {method} have no member \
         {field}; fix the constant in crates/protocol/src/messages.rs or the params type"
    )]
    UnknownExperimentalField {
        /// The method named in the constant.
        method: String,
        /// The field named in the constant.
        field: String,
    },
}

/// The JSON Schema files: [`BUNDLE_FILE_NAME`] (every type under `definitions`, the root
/// accepting any one message) and one self-contained `<Type>.json` per type.
pub fn json_schema_files(experimental: bool) -> Result<Vec<GeneratedFile>, GenerateError> {
    json::files(experimental)
}

/// The TypeScript files: one `<Type>.ts` per type, importing what it references, and
/// `index.ts` re-exporting them all.
pub fn typescript_files(experimental: bool) -> Result<Vec<GeneratedFile>, GenerateError> {
    typescript::files(experimental)
}

/// Writes [`json_schema_files`] into `out_dir` (created if missing) and returns the paths
/// written, sorted. Other files already in `out_dir` are left alone. This is what
/// `tandem app-server generate-json-schema --out DIR [--experimental]` does.
pub fn write_json_schema(
    out_dir: &Path,
    experimental: bool,
) -> Result<Vec<PathBuf>, GenerateError> {
    write_files(out_dir, &json_schema_files(experimental)?)
}

/// Writes [`typescript_files`] into `out_dir` (created if missing) and returns the paths
/// written, sorted. Other files already in `out_dir` are left alone. This is what
/// `tandem app-server generate-ts --out DIR [--experimental]` does.
pub fn write_typescript(out_dir: &Path, experimental: bool) -> Result<Vec<PathBuf>, GenerateError> {
    write_files(out_dir, &typescript_files(experimental)?)
}

/// Which generator a [`BindingSet`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingKind {
    /// [`json_schema_files`].
    JsonSchema,
    /// [`typescript_files`].
    TypeScript,
}

/// One directory of generated bindings: a generator, with or without the experimental API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindingSet {
    /// The generator.
    pub kind: BindingKind,
    /// Whether the experimental methods, fields and notifications are included.
    pub experimental: bool,
    /// The directory's name under `docs/protocol/`.
    pub dir: &'static str,
}

impl BindingSet {
    /// The four sets checked in under `docs/protocol/`.
    pub const CHECKED_IN: [BindingSet; 4] = [
        BindingSet {
            kind: BindingKind::JsonSchema,
            experimental: false,
            dir: "json-schema",
        },
        BindingSet {
            kind: BindingKind::JsonSchema,
            experimental: true,
            dir: "json-schema-experimental",
        },
        BindingSet {
            kind: BindingKind::TypeScript,
            experimental: false,
            dir: "typescript",
        },
        BindingSet {
            kind: BindingKind::TypeScript,
            experimental: true,
            dir: "typescript-experimental",
        },
    ];

    /// The extension of every file of this set, without the dot.
    pub fn extension(&self) -> &'static str {
        match self.kind {
            BindingKind::JsonSchema => "json",
            BindingKind::TypeScript => "ts",
        }
    }

    /// The generated files of this set.
    pub fn files(&self) -> Result<Vec<GeneratedFile>, GenerateError> {
        match self.kind {
            BindingKind::JsonSchema => json_schema_files(self.experimental),
            BindingKind::TypeScript => typescript_files(self.experimental),
        }
    }

    /// Makes `dir` hold exactly this set: writes every file and removes the files with this
    /// set's extension that it no longer generates (a renamed or removed type). Returns the
    /// paths written, sorted.
    pub fn replace_dir(&self, dir: &Path) -> Result<Vec<PathBuf>, GenerateError> {
        let files = self.files()?;
        let written = write_files(dir, &files)?;
        let io_error = |source| GenerateError::Io {
            path: dir.to_owned(),
            source,
        };
        for entry in std::fs::read_dir(dir).map_err(io_error)? {
            let path = entry.map_err(io_error)?.path();
            let generated_kind = path.extension().is_some_and(|ext| ext == self.extension());
            if generated_kind && !written.contains(&path) {
                std::fs::remove_file(&path).map_err(|source| GenerateError::Io { path, source })?;
            }
        }
        Ok(written)
    }
}

fn write_files(out_dir: &Path, files: &[GeneratedFile]) -> Result<Vec<PathBuf>, GenerateError> {
    std::fs::create_dir_all(out_dir).map_err(|source| GenerateError::Io {
        path: out_dir.to_owned(),
        source,
    })?;
    files
        .iter()
        .map(|file| {
            let path = out_dir.join(&file.path);
            std::fs::write(&path, &file.contents)
                .map(|()| path.clone())
                .map_err(|source| GenerateError::Io { path, source })
        })
        .collect()
}

/// Which of the four message enums a union describes; decides the members of each variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnionKind {
    /// `{id, method, params}`.
    Request,
    /// `{method, params}`.
    ClientNotification,
    /// `{method, params, emittedAtMs?}`.
    ServerNotification,
}

/// A type as both generators need it, captured from the generic `T` so that the method tables
/// of the message enums can be plain values.
pub(crate) struct TypeBinding {
    /// Adds `T` to the generator's definitions and returns its `$ref`.
    pub(crate) json_schema: fn(&mut SchemaGenerator) -> Schema,
    /// `T`'s TypeScript name.
    pub(crate) ts_name: fn(&ts_rs::Config) -> String,
    /// Declares `T` and everything it references.
    pub(crate) ts_declare: fn(&mut typescript::Declarations),
}

impl TypeBinding {
    pub(crate) fn of<T: JsonSchema + TS + 'static>() -> Self {
        Self {
            json_schema: SchemaGenerator::subschema_for::<T>,
            ts_name: <T as TS>::name,
            ts_declare: typescript::Declarations::declare::<T>,
        }
    }
}

/// One method of a message enum: its wire name, the enum variant (for titles), its params and,
/// for requests, its result.
pub(crate) struct MethodBinding {
    pub(crate) method: &'static str,
    pub(crate) variant: &'static str,
    pub(crate) params: TypeBinding,
    pub(crate) response: Option<TypeBinding>,
}

impl MethodBinding {
    pub(crate) fn request<P, R>(method: &'static str, variant: &'static str) -> Self
    where
        P: JsonSchema + TS + 'static,
        R: JsonSchema + TS + 'static,
    {
        Self {
            method,
            variant,
            params: TypeBinding::of::<P>(),
            response: Some(TypeBinding::of::<R>()),
        }
    }

    pub(crate) fn notification<P: JsonSchema + TS + 'static>(
        method: &'static str,
        variant: &'static str,
    ) -> Self {
        Self {
            method,
            variant,
            params: TypeBinding::of::<P>(),
            response: None,
        }
    }
}

/// A message enum as the generators see it: its name, shape, description and typed methods.
/// The `Custom` variant is deliberately absent: an embedder's own methods are not part of the
/// protocol, and leaving them out lets a validator reject an unknown `method`.
pub(crate) struct MessageUnion {
    pub(crate) name: &'static str,
    pub(crate) kind: UnionKind,
    pub(crate) description: &'static str,
    pub(crate) methods: Vec<MethodBinding>,
}

impl MessageUnion {
    /// The four message enums, in docs/protocol.md order.
    pub(crate) fn all() -> Vec<MessageUnion> {
        vec![
            MessageUnion {
                name: "ClientRequest",
                kind: UnionKind::Request,
                description: "A request from client to server: one object per method, \
                              discriminated by `method`.",
                methods: crate::ClientRequest::bindings(),
            },
            MessageUnion {
                name: "ClientNotification",
                kind: UnionKind::ClientNotification,
                description: "A notification from client to server.",
                methods: crate::ClientNotification::bindings(),
            },
            MessageUnion {
                name: "ServerRequest",
                kind: UnionKind::Request,
                description: "A request from server to client; the client must answer each \
                              with a result or an error.",
                methods: crate::ServerRequest::bindings(),
            },
            MessageUnion {
                name: "ServerNotification",
                kind: UnionKind::ServerNotification,
                description: "A notification from server to client. Transports stamp \
                              `emittedAtMs` (unix milliseconds) beside `method`.",
                methods: crate::ServerNotification::bindings(),
            },
        ]
    }

    /// The experimental methods of this union, from the constants of [`crate::messages`].
    pub(crate) fn experimental_methods(&self) -> &'static [&'static str] {
        match self.name {
            "ClientRequest" => crate::EXPERIMENTAL_CLIENT_METHODS,
            "ServerNotification" => crate::EXPERIMENTAL_NOTIFICATION_METHODS,
            _ => &[],
        }
    }

    /// The methods to emit: all of them, or only the stable ones.
    pub(crate) fn methods(&self, experimental: bool) -> impl Iterator<Item = &MethodBinding> {
        let left_out = if experimental {
            &[][..]
        } else {
            self.experimental_methods()
        };
        self.methods
            .iter()
            .filter(move |binding| !left_out.contains(&binding.method))
    }

    /// The title of one variant, e.g. `ThreadStartClientRequest`; unique across the protocol
    /// so that code generators can name the variant classes.
    pub(crate) fn variant_title(&self, binding: &MethodBinding) -> String {
        format!("{}{}", binding.variant, self.name)
    }

    /// Name of the type mapping each method to its result type, for request unions.
    pub(crate) fn responses_name(&self) -> Option<String> {
        (self.kind == UnionKind::Request).then(|| format!("{}Responses", self.name))
    }
}

/// The JSON Schema of a message enum with every method, experimental ones included, for its
/// `JsonSchema` impl (the enums describe the Rust types, which have them all). The generators
/// build the unions themselves, filtered.
pub(crate) fn union_json_schema(generator: &mut SchemaGenerator, name: &str) -> Schema {
    let union = MessageUnion::all()
        .into_iter()
        .find(|union| union.name == name)
        .expect("union_json_schema is called from the message enums' own impls");
    json::union_schema(generator, &union, true)
}

/// The TypeScript of a message enum with every method, for its `TS` impl.
pub(crate) fn union_typescript(name: &str, config: &ts_rs::Config) -> String {
    typescript::union_inline(name, config)
}

/// The JSDoc of a message enum, for its `TS` impl.
pub(crate) fn union_typescript_docs(name: &str) -> Option<String> {
    Some(typescript::union_jsdoc(name))
}

/// Rustdoc's intra-doc links (`` [`Type::member`] ``) mean nothing outside Rust: the bindings
/// keep the code span and drop the brackets.
pub(crate) fn plain_doc_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[`") {
        out.push_str(&rest[..start]);
        let span = &rest[start + 1..]; // "`X`]..."
        match span[1..].find("`]") {
            Some(end) if !span[1..=end].contains('\n') => {
                out.push_str(&span[..end + 2]);
                rest = &span[end + 3..];
            }
            _ => {
                out.push('[');
                rest = span;
            }
        }
    }
    out.push_str(rest);
    out
}
