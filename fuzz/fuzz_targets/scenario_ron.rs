//! Any text given as a scenario file: a located error or a scenario, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(scenario) = agentsim_worlds::Scenario::parse(text, "fuzz.ron")
    {
        // A scenario that parses must also prepare (catalog, key) without panicking.
        let _ = agentsim_worlds::Prepared::new(scenario);
    }
});
