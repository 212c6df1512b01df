//! End-to-end tests spanning Tandem crates live in `tests/`; this library is empty on purpose.
