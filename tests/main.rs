//! The integration tests, one binary with modules.

mod analytic;
mod bad_input;
mod cli;
mod common;
mod determinism;
mod docs;
mod external;
mod incidents;
mod layer_cases;
mod properties;
mod stack_files;
mod stacks;
