//! The `supervisor` command. Everything lives in the `supervisor` crate;
//! this shim sits in the root package so that `cargo test` builds the
//! binary for the integration tests in `tests/`.

fn main() {
    std::process::exit(supervisor::main());
}
