//! The integration tests, one binary with modules.

mod analytic;
mod bad_files;
mod bad_input;
mod bounds;
mod cli;
mod common;
mod determinism;
mod docs;
mod external;
mod flight_booking;
mod fuzz_regressions;
mod incidents;
mod layer_cases;
mod mcp;
mod newsroom;
mod properties;
mod reliability;
mod resume;
mod shards;
mod stack_files;
mod stacks;
mod support_desk;
mod swarm;
mod validation;
mod weather_dining;
mod world_kit;
