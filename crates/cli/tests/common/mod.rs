//! Harness of the binary-level tests of `tandem app-server`: starts the real binary with a
//! fresh `TANDEM_HOME`, keeps its stderr with the time each line appeared, and speaks JSON-RPC
//! to it over stdio or websocket, every wait under a deadline so a regression fails instead of
//! hanging the suite.
//!
//! Processes are found in `/proc` by an environment variable unique to each server: the binary
//! carries it and every child it starts inherits it.

// Each test binary includes this module and uses its own part of it.
#![allow(dead_code)]

pub(crate) mod bad_input;
pub(crate) mod client;
pub(crate) mod http;
pub(crate) mod postgres;
pub(crate) mod raw_ws;
pub(crate) mod sandbox;
pub(crate) mod server;

use std::time::Duration;

/// Upper bound for anything that should happen promptly; generous because the machine running
/// the suite may be busy building other crates.
pub(crate) const PROMPT: Duration = Duration::from_secs(20);

/// How long the binary may take to exit after stdin EOF, SIGTERM or SIGINT (issue 8).
pub(crate) const SHUTDOWN_LIMIT: Duration = Duration::from_secs(5);

pub(crate) use tandem_test_support::within;
