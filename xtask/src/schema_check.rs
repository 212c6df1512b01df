//! `cargo xtask schema-check`: is every message Tandem sends valid under the reference
//! app-server's own JSON Schema? (issue 15, point 6)
//!
//! It generates the schema with the reference's `app-server generate-json-schema`, runs the
//! conformance suite with its message capture on (`TANDEM_CONFORMANCE_CAPTURE`, see
//! `tests/tests/conformance/session.rs`), and validates each captured server message: a
//! notification's or server request's `params` against the definition the reference's
//! `ServerNotification` / `ServerRequest` names for its method, a result against the
//! `<Request>Response` of the method it answers, an error against `JSONRPCErrorError`.
//! Invalid messages are printed grouped by method; methods the reference does not have are
//! listed apart. It needs the reference, so it is not part of CI.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use serde_json::{Value, json};

/// The reference binary when `--reference` is not given.
const DEFAULT_REFERENCE: &str = "codex";

/// The bundle `generate-json-schema` writes with every definition.
const BUNDLE: &str = "codex_app_server_protocol.schemas.json";

/// How many examples of one failure are printed.
const EXAMPLES: usize = 2;

/// Why the check could not run.
#[derive(Debug, thiserror::Error)]
enum SchemaCheckError {
    #[error("{0}\nusage: cargo xtask schema-check [--reference BIN]")]
    Usage(String),
    #[error("could not run `{command}`: {source}; is the reference installed (--reference BIN)?")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("`{0}` failed; see its output above")]
    Failed(String),
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not the JSON expected: {why}")]
    Malformed { path: PathBuf, why: String },
}

/// `cargo xtask schema-check ARGS`.
pub(crate) fn run(args: &[String]) -> ExitCode {
    crate::steps::exit_code("schema-check", run_checked(args))
}

fn run_checked(args: &[String]) -> Result<bool, SchemaCheckError> {
    let reference = match args {
        [] => PathBuf::from(DEFAULT_REFERENCE),
        [flag, bin] if flag == "--reference" => PathBuf::from(bin),
        _ => return Err(SchemaCheckError::Usage("unexpected arguments".into())),
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let work = target.join("schema-check");
    let schema_dir = work.join("reference-schema");
    let codex_home = work.join("codex-home");
    for dir in [&schema_dir, &codex_home] {
        std::fs::create_dir_all(dir).map_err(|source| SchemaCheckError::Read {
            path: dir.clone(),
            source,
        })?;
    }
    let mut generate = Command::new(&reference);
    generate
        .args(["app-server", "generate-json-schema", "--out"])
        .arg(&schema_dir)
        .env("CODEX_HOME", &codex_home);
    run_step(&mut generate)?;

    let capture = work.join("messages.jsonl");
    let _ = std::fs::remove_file(&capture);
    let mut suite = Command::new(env!("CARGO"));
    suite
        .args(["test", "-p", "tandem-e2e", "--test", "conformance"])
        .env("TANDEM_CONFORMANCE_CAPTURE", &capture);
    if let Err(error) = run_step(&mut suite) {
        // Failing scenarios still sent messages worth checking; say so and go on.
        eprintln!("xtask schema-check: {error}; validating what was captured");
    }

    let bundle_path = schema_dir.join(BUNDLE);
    let bundle = read_json(&bundle_path)?;
    let messages = std::fs::read_to_string(&capture).map_err(|source| SchemaCheckError::Read {
        path: capture.clone(),
        source,
    })?;
    let mut checker = Checker::new(&bundle, &bundle_path)?;
    for line in messages.lines() {
        let entry: Value =
            serde_json::from_str(line).map_err(|error| SchemaCheckError::Malformed {
                path: capture.clone(),
                why: error.to_string(),
            })?;
        checker.check(&entry);
    }
    Ok(checker.report())
}

fn run_step(command: &mut Command) -> Result<(), SchemaCheckError> {
    crate::steps::run_step(
        "schema-check",
        command,
        |command, source| SchemaCheckError::Spawn { command, source },
        |command, _| SchemaCheckError::Failed(command),
    )
}

fn read_json(path: &Path) -> Result<Value, SchemaCheckError> {
    let text = std::fs::read_to_string(path).map_err(|source| SchemaCheckError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|error| SchemaCheckError::Malformed {
        path: path.to_path_buf(),
        why: error.to_string(),
    })
}

/// The reference's definitions and what was found so far.
struct Checker {
    definitions: Value,
    /// Method -> definition of its params, per message kind.
    notifications: HashMap<String, String>,
    server_requests: HashMap<String, String>,
    /// Client method -> definition of its result.
    responses: HashMap<String, String>,
    validators: HashMap<String, jsonschema::Validator>,
    checked: usize,
    /// `kind method` -> distinct error texts with an example each.
    invalid: BTreeMap<String, BTreeMap<String, String>>,
    /// `kind method` the reference does not define.
    unknown: BTreeMap<String, usize>,
    /// Replies to requests the suite sent raw (their method is not recorded).
    unattributed: usize,
}

/// `method` -> the definition named by `$ref` under `key` in each `oneOf` entry of `union`.
fn method_table(definitions: &Value, union: &str, key: &str) -> HashMap<String, String> {
    let mut table = HashMap::new();
    let entries = definitions[union]["oneOf"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for entry in entries {
        let method = entry["properties"]["method"]["enum"][0].as_str();
        let reference = entry["properties"][key]["$ref"].as_str();
        if let (Some(method), Some(reference)) = (method, reference) {
            let name = reference.trim_start_matches("#/definitions/").to_owned();
            table.insert(method.to_owned(), name);
        }
    }
    table
}

impl Checker {
    fn new(bundle: &Value, path: &Path) -> Result<Self, SchemaCheckError> {
        let definitions = bundle["definitions"].clone();
        if !definitions.is_object() {
            return Err(SchemaCheckError::Malformed {
                path: path.to_path_buf(),
                why: "no `definitions`".into(),
            });
        }
        let notifications = method_table(&definitions, "ServerNotification", "params");
        let server_requests = method_table(&definitions, "ServerRequest", "params");
        let responses = method_table(&definitions, "ClientRequest", "params")
            .into_iter()
            .filter_map(|(method, params)| {
                // Names may be nested (`v2/ThreadStartParams`): look them up as a pointer.
                let response = params.strip_suffix("Params")?.to_owned() + "Response";
                let pointer = format!("/{response}");
                definitions.pointer(&pointer).map(|_| (method, response))
            })
            .collect();
        Ok(Self {
            definitions,
            notifications,
            server_requests,
            responses,
            validators: HashMap::new(),
            checked: 0,
            invalid: BTreeMap::new(),
            unknown: BTreeMap::new(),
            unattributed: 0,
        })
    }

    fn validator(&mut self, name: &str) -> &jsonschema::Validator {
        let definitions = &self.definitions;
        self.validators.entry(name.to_owned()).or_insert_with(|| {
            let schema = json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "definitions": definitions,
                "$ref": format!("#/definitions/{name}"),
            });
            jsonschema::draft7::new(&schema)
                .unwrap_or_else(|error| panic!("the reference's {name} does not compile: {error}"))
        })
    }

    fn check(&mut self, entry: &Value) {
        let message = &entry["message"];
        let (label, definition, instance) = if let Some(method) = message["method"].as_str() {
            let is_request = message.get("id").is_some();
            let (kind, table) = if is_request {
                ("server request", &self.server_requests)
            } else {
                ("notification", &self.notifications)
            };
            let label = format!("{kind} {method}");
            (label, table.get(method).cloned(), &message["params"])
        } else if message.get("error").is_some() {
            (
                "error".to_owned(),
                Some("JSONRPCErrorError".to_owned()),
                &message["error"],
            )
        } else {
            let Some(method) = entry["requestMethod"].as_str() else {
                self.unattributed += 1;
                return;
            };
            let label = format!("result of {method}");
            (
                label,
                self.responses.get(method).cloned(),
                &message["result"],
            )
        };
        let Some(definition) = definition else {
            *self.unknown.entry(label).or_default() += 1;
            return;
        };
        let instance = instance.clone();
        self.checked += 1;
        let errors: Vec<String> = self
            .validator(&definition)
            .iter_errors(&instance)
            .map(|error| format!("{} at {}", error, error.instance_path()))
            .collect();
        if errors.is_empty() {
            return;
        }
        let reasons = self
            .invalid
            .entry(format!("{label} ({definition})"))
            .or_default();
        for error in errors {
            if reasons.len() < 20 {
                reasons
                    .entry(error)
                    .or_insert_with(|| truncate(&instance.to_string()));
            }
        }
    }

    /// Prints the findings; whether every message with a reference definition was valid.
    fn report(&self) -> bool {
        println!(
            "schema-check: {} messages validated against the reference's schema; {} groups invalid",
            self.checked,
            self.invalid.len()
        );
        for (label, reasons) in &self.invalid {
            println!("INVALID {label}");
            for (shown, (reason, example)) in reasons.iter().enumerate() {
                println!("  - {reason}");
                if shown < EXAMPLES {
                    println!("    e.g. {example}");
                }
            }
        }
        if !self.unknown.is_empty() {
            println!("not in the reference's schema (Tandem's own, or experimental upstream):");
            let methods: BTreeSet<_> = self.unknown.iter().collect();
            for (label, count) in methods {
                println!("  - {label} ({count} messages)");
            }
        }
        if self.unattributed > 0 {
            println!(
                "{} replies to requests the suite sent raw were not attributed to a method",
                self.unattributed
            );
        }
        self.invalid.is_empty()
    }
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(300) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundle shaped like the reference's: nested `v2` definitions, unions by method.
    fn bundle() -> Value {
        json!({"definitions": {
            "ClientRequest": {"oneOf": [{"properties": {
                "method": {"enum": ["initialize"]},
                "params": {"$ref": "#/definitions/InitializeParams"}}}]},
            "ServerNotification": {"oneOf": [{"properties": {
                "method": {"enum": ["thread/started"]},
                "params": {"$ref": "#/definitions/v2/ThreadStartedNotification"}}}]},
            "ServerRequest": {"oneOf": [{"type": "object"}]},
            "InitializeParams": {"type": "object"},
            "InitializeResponse": {"type": "object", "required": ["codexHome"],
                "properties": {"codexHome": {"type": "string"}}},
            "JSONRPCErrorError": {"type": "object", "required": ["code", "message"]},
            "v2": {"ThreadStartedNotification": {"type": "object", "required": ["thread"]}},
        }})
    }

    #[test]
    fn invalid_and_unknown_messages_are_reported_valid_ones_are_not() {
        let mut checker = Checker::new(&bundle(), Path::new("bundle.json")).expect("a bundle");
        let entries = [
            json!({"requestMethod": "initialize", "message": {"id": 1, "result": {"codexHome": "/h"}}}),
            json!({"requestMethod": "initialize", "message": {"id": 2, "result": {}}}),
            json!({"message": {"method": "thread/started", "params": {"thread": {}}}}),
            json!({"message": {"method": "thread/started", "params": {}}}),
            json!({"message": {"method": "tandem/own", "params": {}}}),
            json!({"message": {"id": 3, "error": {"code": -32600, "message": "x"}}}),
            json!({"requestMethod": null, "message": {"id": 4, "result": {}}}),
        ];
        for entry in &entries {
            checker.check(entry);
        }
        assert_eq!(checker.checked, 5);
        let invalid: Vec<&String> = checker.invalid.keys().collect();
        assert_eq!(
            invalid,
            [
                "notification thread/started (v2/ThreadStartedNotification)",
                "result of initialize (InitializeResponse)",
            ]
        );
        assert_eq!(
            checker.unknown.keys().collect::<Vec<_>>(),
            ["notification tandem/own"]
        );
        assert_eq!(checker.unattributed, 1);
        assert!(!checker.report());
    }
}
