//! The library's errors carry a kind a caller can match and, where the error is
//! about a place in a file, that place: a Rust user need not parse messages.

use agentsim::{ErrorKind, Position};

#[test]
fn an_unknown_scenario_is_an_argument_error() {
    let err = agentsim::load::scenario("no_such_scenario_anywhere").err().expect("refused");
    assert_eq!(err.kind, ErrorKind::Argument, "{err}");
    assert_eq!(err.position, None);
}

#[test]
fn a_scenario_with_a_bad_field_is_a_content_error_at_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.ron");
    std::fs::write(&path, "(\n  name: \"x\",\n  world: SupportDesk(customers: 7),\n)\n").unwrap();
    let err = agentsim::load::scenario(path.to_str().unwrap()).err().expect("refused");
    assert_eq!(err.kind, ErrorKind::Content, "{err}");
    let Position { file, line, column, .. } = err.position.clone().expect("a place");
    assert_eq!(file, path.display().to_string());
    assert_eq!(line, 3, "{err}");
    assert!(column > 1, "{err}");
    assert!(err.message.starts_with(&format!("{}:3:", path.display())), "{err}");
}

#[test]
fn a_file_too_large_or_missing_is_a_read_error_and_a_directory_target_a_write_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.csv");
    let err = agentsim::files::read_bounded(missing.to_str().unwrap(), "rows", None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Read, "{err}");
    let err = agentsim::files::write_atomic(dir.path(), b"x").unwrap_err();
    assert_eq!(err.kind, ErrorKind::Write, "{err}");
}

#[test]
fn rows_that_are_not_a_sweeps_name_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let seeds = 0..3;
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("trajectories.csv"), "seed,outcome\n0,success\n").unwrap();
    let mut builder = agentsim::SummaryBuilder::with_trials(1);
    let err = agentsim::sweep::read_done(&out, &seeds, 1, 1, &mut builder).err().expect("refused");
    assert_eq!(err.kind, ErrorKind::Content, "{err}");
    assert_eq!(err.position.as_ref().map(|p| p.line), Some(2), "{err}");
}
