//! End-to-end tests spanning Tandem crates live in `tests/tests/`; this library only anchors the package.
