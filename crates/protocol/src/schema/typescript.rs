//! The TypeScript generator: ts-rs declarations of every type reachable from the messages,
//! the message unions and result tables built from the method tables, the experimental parts
//! removed by the constants of [`crate::messages`], one file per type with its imports.

use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet, HashSet};

use ts_rs::{Config, TS, TypeVisitor};

use super::{GenerateError, GeneratedFile, MessageUnion, UnionKind};
use crate::jsonrpc::{
    JSONRPCError, JSONRPCErrorError, JSONRPCMessage, JSONRPCNotification, JSONRPCRequest,
    JSONRPCResponse, RequestId,
};

const HEADER: &str = "// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with \
                      `cargo xtask codegen`.\n";

/// The ts-rs configuration of every declaration: integers are `number`, as `JSON.parse`
/// yields them.
fn config() -> Config {
    Config::new().with_large_int("number")
}

/// Declarations by TypeScript name: JSDoc, then `export type Name = ...;`.
pub(crate) struct Declarations {
    config: Config,
    seen: HashSet<TypeId>,
    declarations: BTreeMap<String, String>,
}

impl Declarations {
    fn new(config: Config) -> Self {
        Self {
            config,
            seen: HashSet::new(),
            declarations: BTreeMap::new(),
        }
    }

    /// Declares `T` and, recursively, every type it references; built-in types (those ts-rs
    /// would not export, like `string` or `Array<T>`) only pass their arguments on.
    pub(crate) fn declare<T: TS + ?Sized + 'static>(&mut self) {
        if <T as TS>::output_path().is_none() || !self.seen.insert(TypeId::of::<T>()) {
            return;
        }
        let mut text = <T as TS>::docs().unwrap_or_default();
        text.push_str("export ");
        text.push_str(&<T as TS>::decl(&self.config));
        self.declarations
            .insert(<T as TS>::ident(&self.config), text);
        <T as TS>::visit_dependencies(self);
    }
}

impl TypeVisitor for Declarations {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        self.declare::<T>();
    }
}

pub(super) fn files(experimental: bool) -> Result<Vec<GeneratedFile>, GenerateError> {
    let config = config();
    let mut declarations = Declarations::new(self::config());
    let unions = MessageUnion::all();
    let mut roots: Vec<String> = Vec::new();
    for union in &unions {
        for binding in union.methods(experimental) {
            (binding.params.ts_declare)(&mut declarations);
            if let Some(response) = &binding.response {
                (response.ts_declare)(&mut declarations);
            }
        }
        let text = format!(
            "{}export type {} = {};",
            union_docs(union),
            union.name,
            union_body(union, experimental, &config)
        );
        declarations
            .declarations
            .insert(union.name.to_owned(), text);
        roots.push(union.name.to_owned());
        if let Some(name) = union.responses_name() {
            let text = responses_declaration(union, &name, experimental, &config);
            declarations.declarations.insert(name.clone(), text);
            roots.push(name);
        }
    }
    declarations.declare::<JSONRPCMessage>();
    declarations.declare::<JSONRPCRequest>();
    declarations.declare::<JSONRPCNotification>();
    declarations.declare::<JSONRPCResponse>();
    declarations.declare::<JSONRPCError>();
    declarations.declare::<JSONRPCErrorError>();
    declarations.declare::<RequestId>();
    roots.extend(
        [
            "JSONRPCMessage",
            "JSONRPCRequest",
            "JSONRPCNotification",
            "JSONRPCResponse",
            "JSONRPCError",
            "JSONRPCErrorError",
            "RequestId",
        ]
        .map(str::to_owned),
    );
    let mut declarations = declarations.declarations;
    if !experimental {
        remove_experimental_fields(&mut declarations, &unions, &config)?;
    }
    let names: BTreeSet<String> = declarations.keys().cloned().collect();
    let reachable = reachable_from(&declarations, &names, roots);
    declarations.retain(|name, _| reachable.contains(name));

    let names: BTreeSet<String> = declarations.keys().cloned().collect();
    let mut files: Vec<GeneratedFile> = declarations
        .iter()
        .map(|(name, text)| GeneratedFile {
            path: format!("{name}.ts"),
            contents: file_contents(name, text, &names),
        })
        .collect();
    let mut index = HEADER.to_owned();
    for name in &names {
        index.push_str(&format!("export type {{ {name} }} from \"./{name}\";\n"));
    }
    files.push(GeneratedFile {
        path: "index.ts".to_owned(),
        contents: index,
    });
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

fn union_docs(union: &MessageUnion) -> String {
    format!("/**\n * {}\n */\n", union.description)
}

/// The union of one object per method, each line a member.
fn union_body(union: &MessageUnion, experimental: bool, config: &Config) -> String {
    let mut body = String::new();
    for binding in union.methods(experimental) {
        let params = (binding.params.ts_name)(config);
        let method = binding.method;
        let member = match union.kind {
            UnionKind::Request => {
                format!("{{ id: RequestId, method: \"{method}\", params: {params}, }}")
            }
            UnionKind::ClientNotification => {
                format!("{{ method: \"{method}\", params: {params}, }}")
            }
            UnionKind::ServerNotification => {
                format!(
                    "{{ method: \"{method}\", params: {params}, emittedAtMs?: number, cursor?: EventCursor, }}"
                )
            }
        };
        body.push_str("\n  | ");
        body.push_str(&member);
    }
    if body.is_empty() {
        body.push_str("never");
    }
    body
}

fn responses_declaration(
    union: &MessageUnion,
    name: &str,
    experimental: bool,
    config: &Config,
) -> String {
    let mut text = format!(
        "/**\n * The result type of each {} method, by method name: the `result` of a \
         successful response to that request. A lookup table, not a message.\n */\n\
         export type {name} = {{",
        union.name
    );
    for binding in union.methods(experimental) {
        let response = binding
            .response
            .as_ref()
            .expect("request unions have a result type per method");
        text.push_str(&format!(
            "\n  \"{}\": {},",
            binding.method,
            (response.ts_name)(config)
        ));
    }
    text.push_str("\n};");
    text
}

/// The TypeScript of a message union with every method, for its `TS` impl.
pub(crate) fn union_inline(name: &str, config: &Config) -> String {
    let union = find_union(name);
    union_body(&union, true, config)
}

/// The JSDoc of a message union, for its `TS` impl.
pub(crate) fn union_jsdoc(name: &str) -> String {
    union_docs(&find_union(name))
}

fn find_union(name: &str) -> MessageUnion {
    MessageUnion::all()
        .into_iter()
        .find(|union| union.name == name)
        .expect("called from the message enums' own impls")
}

/// Removes each `(method, field)` of [`crate::EXPERIMENTAL_FIELDS`] from the declaration of
/// the params type of `method`.
fn remove_experimental_fields(
    declarations: &mut BTreeMap<String, String>,
    unions: &[MessageUnion],
    config: &Config,
) -> Result<(), GenerateError> {
    for &(method, field) in crate::EXPERIMENTAL_FIELDS {
        let unknown = || GenerateError::UnknownExperimentalField {
            method: method.to_owned(),
            field: field.to_owned(),
        };
        let (union, binding) = unions
            .iter()
            .find_map(|union| {
                union
                    .methods
                    .iter()
                    .find(|binding| binding.method == method)
                    .map(|binding| (union, binding))
            })
            .ok_or_else(unknown)?;
        if union.experimental_methods().contains(&method) {
            continue;
        }
        let params = (binding.params.ts_name)(config);
        let declaration = declarations.get_mut(&params).ok_or_else(unknown)?;
        *declaration = remove_member(declaration, field).ok_or_else(unknown)?;
    }
    Ok(())
}

/// `declaration` without the member `field` (and its JSDoc) of its outermost object type, or
/// `None` if that object has no such member.
fn remove_member(declaration: &str, field: &str) -> Option<String> {
    // The JSDoc before `export type` may itself contain braces; the body starts after `=`.
    let body_start = declaration.find("export type ")?;
    let body_start = body_start + declaration[body_start..].find('=')?;
    let bytes = declaration.as_bytes();
    let mut depth = 0usize;
    let mut member_start = None;
    let mut at = body_start;
    while at < bytes.len() {
        if let Some(skipped) = skip_comment_or_string(&declaration[at..]) {
            at += skipped;
            continue;
        }
        match bytes[at] {
            b'{' | b'[' | b'(' | b'<' => {
                depth += 1;
                if depth == 1 {
                    member_start = Some(at + 1);
                }
            }
            b'}' | b']' | b')' | b'>' => {
                if depth == 1
                    && let Some(start) = member_start
                    && member_key(&declaration[start..at]) == Some(field)
                {
                    return Some(format!("{}{}", &declaration[..start], &declaration[at..]));
                }
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return None; // only the outermost object is searched
                }
            }
            b',' if depth == 1 => {
                if let Some(start) = member_start
                    && member_key(&declaration[start..at]) == Some(field)
                {
                    return Some(format!(
                        "{}{}",
                        &declaration[..start],
                        &declaration[at + 1..]
                    ));
                }
                member_start = Some(at + 1);
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// The key of one object member (`/** docs */ name?: T`), quoted or not.
fn member_key(member: &str) -> Option<&str> {
    let mut rest = member.trim_start();
    while rest.starts_with("/*") {
        rest = rest[rest.find("*/")? + 2..].trim_start();
    }
    let key = match rest.strip_prefix('"') {
        Some(quoted) => &quoted[..quoted.find('"')?],
        None => {
            let end = rest
                .bytes()
                .position(|byte| !is_identifier_continue(byte))
                .unwrap_or(rest.len());
            &rest[..end]
        }
    };
    (!key.is_empty()).then_some(key)
}

/// The length of the comment or string literal at the start of `text`, if one starts there.
fn skip_comment_or_string(text: &str) -> Option<usize> {
    if text.starts_with("/*") {
        return Some(text.find("*/").map_or(text.len(), |end| end + 2));
    }
    if text.starts_with("//") {
        return Some(text.find('\n').unwrap_or(text.len()));
    }
    if text.starts_with('"') {
        let bytes = text.as_bytes();
        let mut at = 1;
        while at < bytes.len() && bytes[at] != b'"' {
            at += if bytes[at] == b'\\' { 2 } else { 1 };
        }
        return Some((at + 1).min(text.len()));
    }
    None
}

/// Every declaration reachable from `roots` through the type names it mentions.
fn reachable_from(
    declarations: &BTreeMap<String, String>,
    names: &BTreeSet<String>,
    roots: Vec<String>,
) -> BTreeSet<String> {
    let mut reachable = BTreeSet::new();
    let mut pending = roots;
    while let Some(name) = pending.pop() {
        if !reachable.insert(name.clone()) {
            continue;
        }
        if let Some(text) = declarations.get(&name) {
            pending.extend(referenced_names(text, names));
        }
    }
    reachable
}

/// The known type names that `text` refers to, outside comments and string literals.
fn referenced_names(text: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if let Some(skipped) = skip_comment_or_string(&text[at..]) {
            at += skipped;
        } else if is_identifier_start(bytes[at]) {
            let start = at;
            while at < bytes.len() && is_identifier_continue(bytes[at]) {
                at += 1;
            }
            let word = &text[start..at];
            if names.contains(word) {
                found.insert(word.to_owned());
            }
        } else {
            at += 1;
        }
    }
    found
}

fn is_identifier_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_' || byte == b'$'
}

fn is_identifier_continue(byte: u8) -> bool {
    is_identifier_start(byte) || byte.is_ascii_digit()
}

fn file_contents(name: &str, text: &str, names: &BTreeSet<String>) -> String {
    let mut contents = HEADER.to_owned();
    let imports: Vec<String> = referenced_names(text, names)
        .into_iter()
        .filter(|referenced| referenced != name)
        .collect();
    for import in &imports {
        contents.push_str(&format!(
            "import type {{ {import} }} from \"./{import}\";\n"
        ));
    }
    contents.push('\n');
    // ts-rs leaves a space at the end of each member line.
    for line in super::plain_doc_links(text).lines() {
        contents.push_str(line.trim_end());
        contents.push('\n');
    }
    contents
}
