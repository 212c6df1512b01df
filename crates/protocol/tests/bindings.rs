//! The bindings checked in under `docs/protocol/` are exactly what the generators produce, the
//! output is deterministic, and the non-experimental sets leave out what the experimental
//! constants name (and only that).

#![cfg(feature = "schema")]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tandem_protocol::schema::{BUNDLE_FILE_NAME, BindingKind, BindingSet, GeneratedFile};
use tandem_protocol::{
    EXPERIMENTAL_CLIENT_METHODS, EXPERIMENTAL_FIELDS, EXPERIMENTAL_NOTIFICATION_METHODS,
};

const REGENERATE: &str = "regenerate with `cargo xtask codegen` and commit docs/protocol/";

fn docs_protocol() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocol")
}

/// A fresh directory for this test process under cargo's target tmpdir.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bindings-{}", std::process::id()))
        .join(name);
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn read_dir(dir: &Path) -> BTreeMap<String, String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .map(|entry| {
            let path = entry.expect("list directory").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let contents = fs::read_to_string(&path)
                .unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
            (name, contents)
        })
        .collect()
}

/// The first way in which `actual` (checked in) differs from `expected` (generated), by file
/// name order: a missing file, a file no longer generated, or the first differing line.
fn first_difference(
    expected: &BTreeMap<String, String>,
    actual: &BTreeMap<String, String>,
) -> Option<String> {
    let mut names: Vec<&String> = expected.keys().chain(actual.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .find_map(|name| match (expected.get(name), actual.get(name)) {
            (Some(_), None) => Some(format!("{name} is missing")),
            (None, Some(_)) => Some(format!("{name} is no longer generated")),
            (Some(want), Some(have)) if want != have => {
                let line = want
                    .lines()
                    .zip(have.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or_else(|| want.lines().count().min(have.lines().count()));
                Some(format!(
                    "{name} differs from the generated file at line {}",
                    line + 1
                ))
            }
            _ => None,
        })
}

#[test]
fn checked_in_bindings_are_current() {
    for set in BindingSet::CHECKED_IN {
        let fresh = scratch(set.dir);
        let written = set.replace_dir(&fresh).expect("generate into a temp dir");
        assert!(!written.is_empty(), "{} generated no file", set.dir);
        let checked_in = docs_protocol().join(set.dir);
        if let Some(difference) = first_difference(&read_dir(&fresh), &read_dir(&checked_in)) {
            panic!(
                "docs/protocol/{} is stale: {difference}; {REGENERATE}",
                set.dir
            );
        }
        let _ = fs::remove_dir_all(&fresh);
    }
}

#[test]
fn a_stale_copy_is_named_by_its_first_difference() {
    let set = BindingSet::CHECKED_IN[0];
    let dir = scratch("stale");
    set.replace_dir(&dir).unwrap();
    let generated = read_dir(&dir);
    assert_eq!(first_difference(&generated, &generated), None);

    let mut edited = generated.clone();
    let thread = edited.get_mut("Thread.json").unwrap();
    *thread = thread.replacen("\"sessionId\"", "\"sessionID\"", 1);
    let difference = first_difference(&generated, &edited).unwrap();
    assert!(
        difference.starts_with("Thread.json differs"),
        "{difference}"
    );

    let mut missing = generated.clone();
    missing.remove("Turn.json");
    assert_eq!(
        first_difference(&generated, &missing).as_deref(),
        Some("Turn.json is missing")
    );

    let mut extra = generated.clone();
    extra.insert("Obsolete.json".to_owned(), "{}\n".to_owned());
    assert_eq!(
        first_difference(&generated, &extra).as_deref(),
        Some("Obsolete.json is no longer generated")
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn replacing_a_directory_removes_files_no_longer_generated_and_keeps_others() {
    let set = BindingSet::CHECKED_IN[2];
    let dir = scratch("replace");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("Obsolete.ts"), "export type Obsolete = never;\n").unwrap();
    fs::write(dir.join("notes.md"), "kept\n").unwrap();
    let written = set.replace_dir(&dir).unwrap();
    let names = read_dir(&dir);
    assert!(!names.contains_key("Obsolete.ts"));
    assert_eq!(names["notes.md"], "kept\n");
    assert_eq!(names.len(), written.len() + 1);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn output_is_deterministic_and_machine_independent() {
    let workspace = fs::canonicalize(docs_protocol().join("../..")).unwrap();
    let workspace = workspace.to_string_lossy();
    for set in BindingSet::CHECKED_IN {
        let first = set.files().unwrap();
        assert_eq!(
            first,
            set.files().unwrap(),
            "{} differs between runs",
            set.dir
        );
        let mut paths: Vec<&str> = first.iter().map(|file| file.path.as_str()).collect();
        let listed = paths.clone();
        paths.sort_unstable();
        assert_eq!(paths, listed, "{}: files are not sorted", set.dir);
        for GeneratedFile { path, contents } in &first {
            assert!(
                contents.ends_with('\n'),
                "{}/{path}: no trailing newline",
                set.dir
            );
            assert!(
                !contents.contains('\r'),
                "{}/{path}: carriage return",
                set.dir
            );
            assert!(
                !contents.contains(workspace.as_ref()),
                "{}/{path}: local path",
                set.dir
            );
            assert!(
                contents.lines().all(|line| line == line.trim_end()),
                "{}/{path}: trailing whitespace",
                set.dir
            );
            if set.kind == BindingKind::JsonSchema {
                let value: Value = serde_json::from_str(contents).unwrap();
                assert_eq!(
                    value["$schema"], "http://json-schema.org/draft-07/schema#",
                    "{}/{path}",
                    set.dir
                );
            }
        }
    }
}

fn files_of(kind: BindingKind, experimental: bool) -> BTreeMap<String, String> {
    let set = BindingSet::CHECKED_IN
        .into_iter()
        .find(|set| set.kind == kind && set.experimental == experimental)
        .unwrap();
    set.files()
        .unwrap()
        .into_iter()
        .map(|file| (file.path, file.contents))
        .collect()
}

/// The params type of each client request method, read from the experimental schema.
fn params_types() -> BTreeMap<String, String> {
    let bundle: Value =
        serde_json::from_str(&files_of(BindingKind::JsonSchema, true)[BUNDLE_FILE_NAME]).unwrap();
    bundle["definitions"]["ClientRequest"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variant| {
            let method = variant["properties"]["method"]["const"].as_str().unwrap();
            let reference = variant["properties"]["params"]["$ref"].as_str().unwrap();
            let name = reference.strip_prefix("#/definitions/").unwrap();
            (method.to_owned(), name.to_owned())
        })
        .collect()
}

#[test]
fn experimental_methods_and_notifications_appear_only_in_the_experimental_sets() {
    let experimental_methods = EXPERIMENTAL_CLIENT_METHODS
        .iter()
        .chain(EXPERIMENTAL_NOTIFICATION_METHODS);
    for kind in [BindingKind::JsonSchema, BindingKind::TypeScript] {
        let stable = files_of(kind, false);
        let experimental = files_of(kind, true);
        for method in experimental_methods.clone() {
            let quoted = format!("\"{method}\"");
            let mentions = |files: &BTreeMap<String, String>| {
                files
                    .iter()
                    .filter(|(_, contents)| contents.contains(&quoted))
                    .map(|(name, _)| name.clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(mentions(&stable), Vec::<String>::new(), "{kind:?} {method}");
            assert!(
                !mentions(&experimental).is_empty(),
                "{kind:?} lacks {method}"
            );
        }
    }
}

#[test]
fn types_used_only_by_experimental_methods_are_left_out() {
    let params = params_types();
    let stable_params: Vec<&String> = params
        .iter()
        .filter(|(method, _)| !EXPERIMENTAL_CLIENT_METHODS.contains(&method.as_str()))
        .map(|(_, name)| name)
        .collect();
    for (kind, extension) in [
        (BindingKind::JsonSchema, "json"),
        (BindingKind::TypeScript, "ts"),
    ] {
        let stable = files_of(kind, false);
        let experimental = files_of(kind, true);
        for method in EXPERIMENTAL_CLIENT_METHODS {
            let name = &params[*method];
            let file = format!("{name}.{extension}");
            assert!(experimental.contains_key(&file), "{kind:?}: {file}");
            if !stable_params.contains(&name) {
                assert!(!stable.contains_key(&file), "{kind:?}: {file} is stable");
            }
        }
        // Not `PtySize` nor `ProcessOutputStream`: the stable `command/exec` uses them too.
        for file in [
            "ProcessOutputDeltaNotification",
            "ProcessExitedNotification",
        ] {
            let file = format!("{file}.{extension}");
            assert!(experimental.contains_key(&file), "{kind:?}: {file}");
            assert!(!stable.contains_key(&file), "{kind:?}: {file} is stable");
        }
    }
}

#[test]
fn experimental_fields_appear_only_in_the_experimental_sets() {
    let params = params_types();
    assert!(!EXPERIMENTAL_FIELDS.is_empty());
    for (method, field) in EXPERIMENTAL_FIELDS {
        let name = &params[*method];

        let member = |files: &BTreeMap<String, String>| {
            let schema: Value = serde_json::from_str(&files[&format!("{name}.json")]).unwrap();
            schema["properties"].get(*field).is_some()
        };
        assert!(
            member(&files_of(BindingKind::JsonSchema, true)),
            "{method}.{field}"
        );
        assert!(
            !member(&files_of(BindingKind::JsonSchema, false)),
            "{method}.{field}"
        );

        let declared = |files: &BTreeMap<String, String>| {
            let text = &files[&format!("{name}.ts")];
            text.contains(&format!("\n{field}?:")) || text.contains(&format!("\n{field}:"))
        };
        assert!(
            declared(&files_of(BindingKind::TypeScript, true)),
            "{method}.{field}"
        );
        assert!(
            !declared(&files_of(BindingKind::TypeScript, false)),
            "{method}.{field}"
        );
    }
}

#[test]
fn every_import_and_reference_resolves_within_its_set() {
    for set in BindingSet::CHECKED_IN {
        let files: BTreeMap<String, String> = set
            .files()
            .unwrap()
            .into_iter()
            .map(|file| (file.path, file.contents))
            .collect();
        for (name, contents) in &files {
            match set.kind {
                BindingKind::TypeScript => {
                    for line in contents.lines().filter(|line| line.starts_with("import ")) {
                        let target = line.split('"').nth(1).unwrap();
                        let file = format!("{}.ts", target.trim_start_matches("./"));
                        assert!(files.contains_key(&file), "{}/{name}: {line}", set.dir);
                    }
                }
                BindingKind::JsonSchema => {
                    // Building a validator resolves every `$ref` and checks the file against
                    // the draft-07 meta-schema.
                    let schema: Value = serde_json::from_str(contents).unwrap();
                    if let Err(err) = jsonschema::draft7::new(&schema) {
                        panic!("{}/{name} is not a usable draft-07 schema: {err}", set.dir);
                    }
                }
            }
        }
        let index = files.get("index.ts");
        if set.kind == BindingKind::TypeScript {
            let index = index.expect("index.ts");
            for name in files.keys().filter(|name| name.as_str() != "index.ts") {
                let stem = name.trim_end_matches(".ts");
                assert!(
                    index.contains(&format!("export type {{ {stem} }} from \"./{stem}\";")),
                    "{}: index.ts does not export {stem}",
                    set.dir
                );
            }
        }
    }
}

#[test]
fn message_enums_implement_both_traits_with_every_method() {
    use ts_rs::TS as _;

    fn schema_methods(schema: &Value) -> Vec<String> {
        schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|variant| {
                variant["properties"]["method"]["const"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }

    let config = ts_rs::Config::new();
    let cases: [(Value, String, &[&str]); 4] = [
        (
            schemars::schema_for!(tandem_protocol::ClientRequest).to_value(),
            tandem_protocol::ClientRequest::decl(&config),
            tandem_protocol::ClientRequest::METHODS,
        ),
        (
            schemars::schema_for!(tandem_protocol::ServerRequest).to_value(),
            tandem_protocol::ServerRequest::decl(&config),
            tandem_protocol::ServerRequest::METHODS,
        ),
        (
            schemars::schema_for!(tandem_protocol::ClientNotification).to_value(),
            tandem_protocol::ClientNotification::decl(&config),
            tandem_protocol::ClientNotification::METHODS,
        ),
        (
            schemars::schema_for!(tandem_protocol::ServerNotification).to_value(),
            tandem_protocol::ServerNotification::decl(&config),
            tandem_protocol::ServerNotification::METHODS,
        ),
    ];
    for (schema, declaration, methods) in cases {
        // The traits describe the Rust enums, so the experimental methods are always there.
        assert_eq!(schema_methods(&schema), methods);
        for method in methods {
            assert!(
                declaration.contains(&format!("method: \"{method}\"")),
                "{method}"
            );
        }
    }
}
