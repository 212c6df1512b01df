//! The JSON Schema generator: one schemars generator over every message, the experimental
//! parts removed by the constants of [`crate::messages`], unreachable definitions pruned, then
//! written as one bundle and one self-contained file per type.

use std::collections::{BTreeMap, BTreeSet};

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use super::{GenerateError, GeneratedFile, MessageUnion, UnionKind};
use crate::jsonrpc::{
    JSONRPCError, JSONRPCErrorError, JSONRPCMessage, JSONRPCNotification, JSONRPCRequest,
    JSONRPCResponse, RequestId,
};

/// The bundle: every type under `definitions`; the root accepts any one typed message.
pub const BUNDLE_FILE_NAME: &str = "tandem_protocol.schema.json";

const DRAFT_07: &str = "http://json-schema.org/draft-07/schema#";
const DEFINITIONS_PREFIX: &str = "#/definitions/";

/// The envelope types, emitted beside the typed messages.
fn envelope_definitions(generator: &mut SchemaGenerator) -> Vec<&'static str> {
    fn add<T: JsonSchema>(generator: &mut SchemaGenerator, name: &'static str) -> &'static str {
        generator.subschema_for::<T>();
        name
    }
    vec![
        add::<JSONRPCMessage>(generator, "JSONRPCMessage"),
        add::<JSONRPCRequest>(generator, "JSONRPCRequest"),
        add::<JSONRPCNotification>(generator, "JSONRPCNotification"),
        add::<JSONRPCResponse>(generator, "JSONRPCResponse"),
        add::<JSONRPCError>(generator, "JSONRPCError"),
        add::<JSONRPCErrorError>(generator, "JSONRPCErrorError"),
        add::<RequestId>(generator, "RequestId"),
    ]
}

pub(super) fn files(experimental: bool) -> Result<Vec<GeneratedFile>, GenerateError> {
    let mut generator = SchemaSettings::draft07().for_serialize().into_generator();
    let unions = MessageUnion::all();
    let mut roots: Vec<String> = Vec::new();
    for union in &unions {
        let schema = union_schema(&mut generator, union, experimental);
        generator
            .definitions_mut()
            .insert(union.name.to_owned(), schema.to_value());
        roots.push(union.name.to_owned());
        if let Some(name) = union.responses_name() {
            let schema = responses_schema(&mut generator, union, experimental);
            generator.definitions_mut().insert(name.clone(), schema);
            roots.push(name);
        }
    }
    roots.extend(
        envelope_definitions(&mut generator)
            .into_iter()
            .map(str::to_owned),
    );
    let mut definitions: BTreeMap<String, Value> =
        generator.take_definitions(true).into_iter().collect();
    if !experimental {
        remove_experimental_fields(&mut definitions, &unions)?;
    }
    let reachable = reachable_from(&definitions, roots.iter().map(String::as_str));
    definitions.retain(|name, _| reachable.contains(name));

    let mut files = Vec::with_capacity(definitions.len() + 1);
    files.push(GeneratedFile {
        path: BUNDLE_FILE_NAME.to_owned(),
        contents: render(&bundle(&definitions, experimental)),
    });
    for (name, schema) in &definitions {
        files.push(GeneratedFile {
            path: format!("{name}.json"),
            contents: render(&standalone(name, schema, &definitions)),
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// The schema of a message union: `oneOf` one closed-`method` object per emitted method.
pub(super) fn union_schema(
    generator: &mut SchemaGenerator,
    union: &MessageUnion,
    experimental: bool,
) -> Schema {
    let variants: Vec<Value> = union
        .methods(experimental)
        .map(|binding| {
            let mut properties = Map::new();
            let mut required = Vec::new();
            if union.kind == UnionKind::Request {
                properties.insert(
                    "id".to_owned(),
                    generator.subschema_for::<RequestId>().to_value(),
                );
                required.push("id");
            }
            properties.insert(
                "method".to_owned(),
                json!({"type": "string", "const": binding.method}),
            );
            properties.insert(
                "params".to_owned(),
                (binding.params.json_schema)(generator).to_value(),
            );
            required.extend(["method", "params"]);
            if union.kind == UnionKind::ServerNotification {
                properties.insert(
                    "emittedAtMs".to_owned(),
                    json!({
                        "description": "Unix milliseconds at which the server emitted the \
                                        notification; stamped by the stdio and websocket \
                                        transports.",
                        "type": "integer",
                        "format": "int64",
                    }),
                );
                // s-seq: the notification's place in its thread's event stream.
                properties.insert(
                    "cursor".to_owned(),
                    json!({
                        "description": "The notification's place in its thread's event \
                                        stream (notifications a thread's subscribers \
                                        receive): give the last one seen to `thread/resume` \
                                        to replay what followed.",
                        "$ref": "#/definitions/EventCursor",
                    }),
                );
            }
            json!({
                "title": union.variant_title(binding),
                "type": "object",
                "properties": properties,
                "required": required,
            })
        })
        .collect();
    Schema::try_from(json!({"description": union.description, "oneOf": variants}))
        .expect("a JSON object is a schema")
}

/// `{method: <result schema>}` for every emitted method of a request union: the lookup table
/// a client needs, because a response does not name its method.
fn responses_schema(
    generator: &mut SchemaGenerator,
    union: &MessageUnion,
    experimental: bool,
) -> Value {
    let mut properties = Map::new();
    for binding in union.methods(experimental) {
        let response = binding
            .response
            .as_ref()
            .expect("request unions have a result type per method");
        properties.insert(
            binding.method.to_owned(),
            (response.json_schema)(generator).to_value(),
        );
    }
    let required: Vec<&String> = properties.keys().collect();
    json!({
        "description": format!(
            "The result type of each {} method, by method name: the `result` of a \
             successful response to that request. A lookup table, not a message.",
            union.name
        ),
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Removes each `(method, field)` of [`crate::EXPERIMENTAL_FIELDS`] from the params of
/// `method`, found through the union variant of that method.
fn remove_experimental_fields(
    definitions: &mut BTreeMap<String, Value>,
    unions: &[MessageUnion],
) -> Result<(), GenerateError> {
    for &(method, field) in crate::EXPERIMENTAL_FIELDS {
        let unknown = || GenerateError::UnknownExperimentalField {
            method: method.to_owned(),
            field: field.to_owned(),
        };
        let union = unions
            .iter()
            .find(|union| union.methods.iter().any(|b| b.method == method))
            .ok_or_else(unknown)?;
        if union.experimental_methods().contains(&method) {
            continue; // the whole method is left out already
        }
        let params_name = definitions
            .get(union.name)
            .and_then(|schema| schema.get("oneOf"))
            .and_then(Value::as_array)
            .and_then(|variants| {
                variants.iter().find(|variant| {
                    variant.pointer("/properties/method/const") == Some(&json!(method))
                })
            })
            .and_then(|variant| variant.pointer("/properties/params/$ref"))
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix(DEFINITIONS_PREFIX))
            .ok_or_else(unknown)?
            .to_owned();
        let params = definitions
            .get_mut(&params_name)
            .and_then(Value::as_object_mut)
            .ok_or_else(unknown)?;
        params
            .get_mut("properties")
            .and_then(Value::as_object_mut)
            .and_then(|properties| properties.remove(field))
            .ok_or_else(unknown)?;
        if let Some(required) = params.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|name| name != field);
        }
    }
    Ok(())
}

/// Every definition name referenced from `roots`, transitively, roots included.
fn reachable_from<'a>(
    definitions: &BTreeMap<String, Value>,
    roots: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<String> {
    let mut reachable = BTreeSet::new();
    let mut pending: Vec<String> = roots.into_iter().map(str::to_owned).collect();
    while let Some(name) = pending.pop() {
        if !reachable.insert(name.clone()) {
            continue;
        }
        if let Some(schema) = definitions.get(&name) {
            collect_references(schema, &mut pending);
        }
    }
    reachable
}

fn collect_references(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, member) in map {
                match (key.as_str(), member) {
                    ("$ref", Value::String(reference)) => {
                        if let Some(name) = reference.strip_prefix(DEFINITIONS_PREFIX) {
                            out.push(name.to_owned());
                        }
                    }
                    _ => collect_references(member, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_references(item, out)),
        _ => {}
    }
}

fn bundle(definitions: &BTreeMap<String, Value>, experimental: bool) -> Value {
    let messages = [
        "ClientRequest",
        "ClientNotification",
        "ServerRequest",
        "ServerNotification",
        "JSONRPCResponse",
        "JSONRPCError",
    ];
    let variant = if experimental {
        "including the experimental methods, fields and notifications"
    } else {
        "without the experimental methods, fields and notifications"
    };
    json!({
        "$schema": DRAFT_07,
        "title": "TandemProtocol",
        "description": format!(
            "One message of the Tandem app-server protocol (v2), {variant}. Every type is \
             under `definitions`."
        ),
        "anyOf": messages
            .iter()
            .map(|name| json!({"$ref": format!("{DEFINITIONS_PREFIX}{name}")}))
            .collect::<Vec<_>>(),
        "definitions": definitions,
    })
}

/// One type as a file of its own, carrying the definitions it references.
fn standalone(name: &str, schema: &Value, definitions: &BTreeMap<String, Value>) -> Value {
    let mut references = Vec::new();
    collect_references(schema, &mut references);
    let needed = reachable_from(definitions, references.iter().map(String::as_str));
    let mut file = Map::new();
    file.insert("$schema".to_owned(), json!(DRAFT_07));
    file.insert("title".to_owned(), json!(name));
    match schema {
        Value::Object(members) => file.extend(members.clone()),
        // `true`: any value; keep it as the file's only constraint.
        other => {
            file.insert("allOf".to_owned(), json!([other]));
        }
    }
    if !needed.is_empty() {
        let referenced: Map<String, Value> = definitions
            .iter()
            .filter(|(name, _)| needed.contains(*name))
            .map(|(name, schema)| (name.clone(), schema.clone()))
            .collect();
        file.insert("definitions".to_owned(), Value::Object(referenced));
    }
    Value::Object(file)
}

/// Pretty JSON with sorted keys at every level, plain doc links and a trailing newline. Keys
/// are sorted here rather than trusted to `serde_json`'s map, whose order changes if any crate
/// in the build enables its `preserve_order` feature.
fn render(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(&sorted(value)).expect("a Value always encodes");
    text.push('\n');
    text
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let ordered: BTreeMap<&String, Value> = map
                .iter()
                .map(|(key, member)| (key, sorted(member)))
                .collect();
            Value::Object(
                ordered
                    .into_iter()
                    .map(|(key, member)| (key.clone(), member))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        Value::String(text) => Value::String(super::plain_doc_links(text)),
        other => other.clone(),
    }
}
