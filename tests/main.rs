//! The integration tests, one binary with modules.

mod analytic;
mod bad_input;
mod cli;
mod common;
mod determinism;
mod docs;
mod flight_booking;
mod newsroom;
mod stacks;
mod support_desk;
mod swarm;
mod weather_dining;
mod world_kit;
