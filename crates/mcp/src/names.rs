//! The names the model sees for MCP tools: the reference's `mcp__SERVER__TOOL`, made to fit
//! what model APIs accept (1 to 64 characters of `A-Z a-z 0-9 _ -`) by a stable,
//! collision-free rule (docs/agents.md, "MCP servers"):
//!
//! 1. every character of the server's and the tool's name outside `A-Z a-z 0-9 _ -` becomes
//!    `_`, giving `mcp__SERVER__TOOL`;
//! 2. a name of at most 64 characters that no other tool's name became is used as it is;
//! 3. otherwise (too long, or shared with other tools after step 1) the name is cut to its
//!    first 55 characters followed by `_` and 8 hex digits of the SHA-256 of
//!    `SERVER` NUL `TOOL` (the names as the servers gave them). Among tools sharing a name,
//!    the first in the order (server, tool) keeps it if it fits, the others take the hashed
//!    form; should a hashed form collide too, the hash is taken again over the input with
//!    `NUL n` appended, n = 1, 2, ...
//!
//! The result depends only on the set of (server, tool) pairs, never on the order in which
//! servers started.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

/// The longest tool name model APIs accept.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// The prefix of every MCP tool's model name.
pub const MCP_TOOL_PREFIX: &str = "mcp__";

/// The separator between the server's and the tool's name.
pub const MCP_TOOL_SEPARATOR: &str = "__";

/// Characters kept of a name that must be cut, before `_` and the hash.
const CUT_KEEP_CHARS: usize = MAX_TOOL_NAME_CHARS - 1 - HASH_HEX_CHARS;
const HASH_HEX_CHARS: usize = 8;

/// `name` with every character outside `A-Z a-z 0-9 _ -` replaced by `_`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The model names of every (server, tool) pair, by the rule of this module's docs.
pub fn qualify_tool_names<'a>(
    tools: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> BTreeMap<(String, String), String> {
    let pairs: BTreeSet<(String, String)> = tools
        .into_iter()
        .map(|(server, tool)| (server.to_owned(), tool.to_owned()))
        .collect();
    let plain: Vec<((String, String), String)> = pairs
        .into_iter()
        .map(|(server, tool)| {
            let name = format!(
                "{MCP_TOOL_PREFIX}{}{MCP_TOOL_SEPARATOR}{}",
                sanitize(&server),
                sanitize(&tool)
            );
            ((server, tool), name)
        })
        .collect();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut names = BTreeMap::new();
    let mut needs_hash = Vec::new();
    // The plain names first, in (server, tool) order, so that the first of a collision keeps
    // it; the hashed ones after, so that none of them can take a plain name away.
    for (pair, name) in plain {
        if name.chars().count() <= MAX_TOOL_NAME_CHARS && taken.insert(name.clone()) {
            names.insert(pair, name);
        } else {
            needs_hash.push((pair, name));
        }
    }
    for ((server, tool), name) in needs_hash {
        let kept: String = name.chars().take(CUT_KEEP_CHARS).collect();
        let mut salt = 0u32;
        let hashed = loop {
            let candidate = format!("{kept}_{}", short_hash(&server, &tool, salt));
            if taken.insert(candidate.clone()) {
                break candidate;
            }
            salt += 1;
        };
        names.insert((server, tool), hashed);
    }
    names
}

/// 8 hex digits of SHA-256 over `server` NUL `tool`, with `NUL salt` appended when `salt > 0`.
fn short_hash(server: &str, tool: &str, salt: u32) -> String {
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(tool.as_bytes());
    if salt > 0 {
        hasher.update([0]);
        hasher.update(salt.to_string().as_bytes());
    }
    let digest = hasher.finalize();
    digest[..HASH_HEX_CHARS / 2]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        (1..=MAX_TOOL_NAME_CHARS).contains(&name.chars().count())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn short_names_are_the_references() {
        let names = qualify_tool_names([("docs", "search"), ("git-hub", "list.issues")]);
        assert_eq!(
            names[&("docs".into(), "search".into())],
            "mcp__docs__search"
        );
        assert_eq!(
            names[&("git-hub".into(), "list.issues".into())],
            "mcp__git-hub__list_issues"
        );
    }

    #[test]
    fn long_and_colliding_names_are_cut_distinct_and_stable() {
        let long = "a".repeat(80);
        let longer = format!("{long}b");
        let input = [
            ("s", long.as_str()),
            ("s", longer.as_str()),
            ("s", "x.y"),
            ("s", "x y"),
            ("s", "x_y"),
        ];
        let names = qualify_tool_names(input);
        let values: BTreeSet<&String> = names.values().collect();
        assert_eq!(values.len(), input.len(), "{names:?}");
        assert!(names.values().all(|name| valid(name)), "{names:?}");
        // `x y` sorts first, so it keeps the plain name; the others are hashed.
        assert_eq!(names[&("s".into(), "x y".into())], "mcp__s__x_y");
        assert_ne!(names[&("s".into(), "x_y".into())], "mcp__s__x_y");
        assert_eq!(names[&("s".into(), long.clone())].chars().count(), 64);
        // The same set in another order gives the same names.
        let mut reversed = input;
        reversed.reverse();
        assert_eq!(qualify_tool_names(reversed), names);
    }
}
