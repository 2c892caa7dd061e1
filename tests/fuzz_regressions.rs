//! Data-driven: every input the fuzzers ever crashed on (kept under
//! `tests/fuzz_regressions/TARGET/`) now gets an answer from its loader, never a
//! panic. Adding a crasher file adds a test.

use std::path::Path;

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions").join(target);
    let mut files: Vec<_> = std::fs::read_dir(dir).map(|d| d.map(|e| e.unwrap().path()).collect()).unwrap_or_default();
    files.sort();
    files.into_iter().map(|p| (p.to_string_lossy().into_owned(), std::fs::read(&p).unwrap())).collect()
}

#[test]
fn every_kept_crasher_is_answered_without_a_panic() {
    let mut seen = 0;
    for (name, bytes) in inputs("scenario_ron") {
        let text = String::from_utf8_lossy(&bytes);
        let _ = agentsim_worlds::Scenario::parse(&text, &name);
        seen += 1;
    }
    for (name, bytes) in inputs("stack_ron") {
        let text = String::from_utf8_lossy(&bytes);
        let _ = agentsim::spec::parse_stack(&text, &name);
        seen += 1;
    }
    for (name, bytes) in inputs("incident_ron") {
        let text = String::from_utf8_lossy(&bytes);
        let _ = agentsim::incident::Incident::parse(&text, &name);
        seen += 1;
    }
    assert!(seen >= 2, "the crashers are in tests/fuzz_regressions/");
}

#[test]
fn a_field_name_is_found_before_a_multibyte_character() {
    // The fuzzer's first find: an error position just after a two-byte character.
    let text = "(\n  planner: Oracle,\n  lay\u{491}ers: [],\n)";
    let err = agentsim::spec::parse_stack(text, "x.ron").unwrap_err();
    assert!(err.line >= 1);
}
