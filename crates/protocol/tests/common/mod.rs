//! Typed sample values shared by the integration tests: one non-trivial params value and one
//! result value per method, so that `round_trip` and `wire_examples` check the same data.
//! By protocol section: `values` (7), `client_requests` (3, 4), `server_requests` (5),
//! `notifications` (6), and `extensions`, the methods added since.

#![allow(dead_code)] // each test binary uses a different subset

pub(crate) mod wire_json;

use serde_json::{Map, Value};

pub(crate) const THREAD_ID: &str = "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e";
pub(crate) const FORK_ID: &str = "0190f3a2-9000-7abc-8def-0123456789ab";
pub(crate) const TURN_ID: &str = "0190f3a2-8000-7000-8000-000000000001";
pub(crate) const TURN_ID_2: &str = "0190f3a2-8000-7000-8000-000000000002";
pub(crate) const CWD: &str = "/home/dev/project";

pub(crate) fn s(text: &str) -> String {
    text.to_owned()
}

pub(crate) fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

mod client_requests;
mod extensions;
mod fs;
// mcp30:
mod mcp;
// apply29:
mod file_changes;
mod notifications;
mod search_shell;
// reason29:
mod plan_reasoning;
mod server_requests;
mod values;

#[allow(unused_imports)] // as dead_code above
pub(crate) use client_requests::*;
#[allow(unused_imports)] // as dead_code above
pub(crate) use extensions::*;
#[allow(unused_imports)] // as dead_code above
pub(crate) use file_changes::*;
#[allow(unused_imports)] // as dead_code above
pub(crate) use fs::*;
pub(crate) use mcp::*;
#[allow(unused_imports)] // as dead_code above
pub(crate) use notifications::*;
#[allow(unused_imports)] // as dead_code above
pub(crate) use plan_reasoning::*;
#[allow(unused_imports)] // as dead_code above
pub(crate) use search_shell::*;
#[allow(unused_imports)] // as dead_code above
pub(crate) use server_requests::*;
#[allow(unused_imports)] // as dead_code above
pub(crate) use values::*;
