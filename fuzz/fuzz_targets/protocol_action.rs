//! Any bytes an external agent may write: an action or an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let prepared = agentsim_property::builtin("support_desk");
    let _ = agentsim_agents::external::protocol::parse_action(data, &prepared.catalog);
});
