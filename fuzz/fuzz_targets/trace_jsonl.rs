//! Any text given as a production trace: a located error or a trace, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let tools: Vec<String> =
            ["lookup_order", "issue_refund", "send_message"].iter().map(|s| s.to_string()).collect();
        let _ = agentsim::trace::parse(text, "fuzz.jsonl", &tools);
    }
});
