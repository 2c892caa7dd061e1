//! The integration tests, one binary with modules.

mod analytic;
mod bad_input;
mod cli;
mod common;
mod determinism;
mod docs;
mod reliability;
mod stacks;
mod validation;
