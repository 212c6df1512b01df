//! End-to-end tests spanning Tandem crates live in `tests/tests/`; this library anchors the
//! package and runs the README's examples, which use every crate, as doctests.

/// The README's embedding examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
