//! Any text given as an incident file: a located error or an incident, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = agentsim::incident::Incident::parse(text, "fuzz.ron");
    }
});
