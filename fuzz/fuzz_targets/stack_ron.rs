//! Any text given as a stack file: a located error or a stack, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = agentsim::spec::parse_stack(text, "fuzz.ron");
    }
});
