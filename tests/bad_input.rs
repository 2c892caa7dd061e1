//! Data-driven: every file in `tests/bad_scenarios/` is a scenario that must be
//! refused with exit 2 and a message naming its line, column and the field. The
//! file's first line says what the message must contain:
//! `// expect: LINE:COLUMN: TEXT` (TEXT is matched as a substring).

use std::path::Path;

use crate::common::{agentsim, text};

#[test]
fn every_bad_scenario_is_refused_with_its_position() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_scenarios");
    let mut cases: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    cases.sort();
    assert!(cases.len() >= 5, "the corpus is in {}", dir.display());
    let work = tempfile::tempdir().unwrap();
    for case in cases {
        let source = std::fs::read_to_string(&case).unwrap();
        let expect = source
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("// expect: "))
            .unwrap_or_else(|| panic!("{} starts with `// expect: LINE:COLUMN: TEXT`", case.display()));
        let (position, needle) = expect.split_once(": ").expect("expect line has a position and a text");
        let path = case.to_string_lossy().into_owned();
        let output = agentsim(work.path(), &["run", &path], &[]);
        assert_eq!(output.status.code(), Some(2), "{}: {}", case.display(), text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let located = format!("{path}:{position}:");
        assert!(stderr.contains(&located), "{}: expected `{located}` in {stderr}", case.display());
        assert!(stderr.contains(needle), "{}: expected `{needle}` in {stderr}", case.display());
        assert!(!stderr.contains("panicked"), "{}: {stderr}", case.display());
    }
}
