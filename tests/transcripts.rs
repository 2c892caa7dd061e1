//! Every command shown in the documentation is run, and its shown output is
//! compared with what agentsim prints: a change that moves a number fails here
//! until the docs move with it.
//!
//! The rules, for whoever writes docs (the README says it in one sentence):
//! - A `console` block is a transcript: each line starting with `$ ` is a
//!   command (a line ending in `\` continues it), the lines up to the next
//!   command are what it prints, stdout and stderr interleaved as a terminal
//!   shows them. A command shown without output is still run and must exit 0.
//! - Two elisions, and only these: a line `...` stands for any number of lines,
//!   and `[..]` within a line for any text on that line. Timings and temporary
//!   paths are elided this way, in the doc, where a reader sees it; numbers never.
//! - `agentsim` is the binary under test, and so is `cargo run --release --`.
//!   The commands of one file run in order in one scratch folder, beside links to
//!   the repository's `seeds/`, `examples/` and `docs/`, so a later command can
//!   read what an earlier one wrote.
//! - A block that cannot run here (it needs data or tools this repository does
//!   not hold, or minutes of a debug build) is preceded by the line
//!   `<!-- transcript: not run: REASON -->`; the test prints each such block
//!   with its reason, so what is not checked stays visible.
//!
//! `AGENTSIM_BLESS=1 cargo test --test integration transcripts` writes the actual
//! output into the docs for commands whose shown output has no elision, and
//! still fails on the others.

use std::path::{Path, PathBuf};
use std::process::Command;

const NOT_RUN: &str = "<!-- transcript: not run:";

/// One command of a transcript and the output the doc shows for it.
struct Shown {
    /// Line (from 1) of the `$ ` in the doc.
    line: usize,
    command: String,
    /// The shown output's lines and where they sit in the doc (line indices
    /// from 0, end excluded), for blessing.
    expected: Vec<String>,
    expected_lines: std::ops::Range<usize>,
}

/// A `console` block: its commands, or the reason it is not run.
struct Block {
    /// Line (from 1) of the opening fence.
    line: usize,
    not_run: Option<String>,
    commands: Vec<Shown>,
}

fn blocks(markdown: &str) -> Vec<Block> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() != "```console" {
            i += 1;
            continue;
        }
        let not_run = i
            .checked_sub(1)
            .and_then(|p| lines[p].trim().strip_prefix(NOT_RUN))
            .map(|r| r.trim_end_matches("-->").trim().to_string());
        let end = (i + 1..lines.len()).find(|&j| lines[j].trim_end() == "```").expect("a console block is closed");
        found.push(Block { line: i + 1, not_run, commands: commands(&lines, i + 1..end) });
        i = end + 1;
    }
    found
}

fn commands(lines: &[&str], body: std::ops::Range<usize>) -> Vec<Shown> {
    let mut shown: Vec<Shown> = Vec::new();
    let mut j = body.start;
    while j < body.end {
        let Some(first) = lines[j].strip_prefix("$ ") else {
            assert!(shown.is_empty() || lines[j].is_empty(), "line {}: output before any command", j + 1);
            j += 1;
            continue;
        };
        let line = j + 1;
        let mut command = first.to_string();
        while command.ends_with('\\') && j + 1 < body.end {
            command.pop();
            j += 1;
            command.push('\n');
            command.push_str(lines[j]);
        }
        j += 1;
        let start = j;
        while j < body.end && !lines[j].starts_with("$ ") {
            j += 1;
        }
        let mut end = j;
        while end > start && lines[end - 1].trim().is_empty() {
            end -= 1;
        }
        let expected = lines[start..end].iter().map(|l| l.trim_end().to_string()).collect();
        shown.push(Shown { line, command, expected, expected_lines: start..end });
    }
    shown
}

/// Does `actual` match `pattern`, where `[..]` stands for any text?
fn line_matches(pattern: &str, actual: &str) -> bool {
    let mut parts = pattern.split("[..]");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = actual.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    for (k, part) in parts.iter().enumerate() {
        if k + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Does `actual` match `expected`, where a line `...` stands for any lines?
fn lines_match(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..])),
        Some((first, rest)) => {
            actual.split_first().is_some_and(|(a, more)| line_matches(first, a) && lines_match(rest, more))
        }
    }
}

/// The scratch folder of one doc: links to what its commands read, and a `bin/`
/// whose `agentsim` is the binary under test.
fn scratch(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("agentsim-transcript-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    for linked in ["seeds", "examples", "docs"] {
        std::os::unix::fs::symlink(root.join(linked), dir.join(linked)).unwrap();
    }
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_agentsim"), dir.join("bin/agentsim")).unwrap();
    dir
}

/// Runs one shown command in `dir`; its output as the terminal shows it.
fn run(dir: &Path, command: &str) -> (bool, String) {
    let command = command.replace("cargo run --release --", "agentsim");
    let path = format!("{}:{}", dir.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!("exec 2>&1; {command}"))
        .current_dir(dir)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("AGENTSIM_BLESS")
        .output()
        .expect("sh runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.success(), text)
}

/// Runs every transcript of `doc` (a path from the repository's root); panics
/// with every mismatch at once.
fn check_doc(doc: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join(doc);
    let markdown = std::fs::read_to_string(&path).unwrap();
    let dir = scratch(&doc.replace('/', "_"));
    let bless = std::env::var_os("AGENTSIM_BLESS").is_some();
    let mut failures = Vec::new();
    let mut blessed: Vec<(std::ops::Range<usize>, Vec<String>)> = Vec::new();
    for block in blocks(&markdown) {
        if let Some(reason) = &block.not_run {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "transcript not run: {doc}:{}: {reason}", block.line);
            continue;
        }
        for shown in &block.commands {
            let (ok, output) = run(&dir, &shown.command);
            let actual: Vec<&str> = output.lines().map(str::trim_end).collect();
            let mut actual_trimmed = actual.as_slice();
            while let Some((last, rest)) = actual_trimmed.split_last() {
                if !last.is_empty() {
                    break;
                }
                actual_trimmed = rest;
            }
            let matched = shown.expected.is_empty() || lines_match(&shown.expected, actual_trimmed);
            let elided = shown.expected.iter().any(|l| l == "..." || l.contains("[..]"));
            if ok && !matched && bless && !elided {
                blessed.push((shown.expected_lines.clone(), actual_trimmed.iter().map(|s| s.to_string()).collect()));
            } else if !ok || !matched {
                failures.push(format!(
                    "{doc}:{}: $ {}\n{}--- shown:\n{}\n--- printed:\n{}",
                    shown.line,
                    shown.command,
                    if ok { "" } else { "(exit status not 0)\n" },
                    shown.expected.join("\n"),
                    actual_trimmed.join("\n")
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if !blessed.is_empty() {
        write_blessed(&path, &markdown, blessed);
    }
    assert!(failures.is_empty(), "{} transcript(s) differ from the docs:\n\n{}", failures.len(), failures.join("\n\n"));
}

/// Replaces the shown outputs at `ranges` (line indices) with what was printed.
fn write_blessed(path: &Path, markdown: &str, mut blessed: Vec<(std::ops::Range<usize>, Vec<String>)>) {
    let mut lines: Vec<String> = markdown.lines().map(str::to_string).collect();
    blessed.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
    for (range, actual) in blessed {
        lines.splice(range, actual);
    }
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
    eprintln!("blessed {}", path.display());
}

#[test]
fn readme() {
    check_doc("README.md");
}

#[test]
fn docs_worlds() {
    check_doc("docs/worlds.md");
}

#[test]
fn docs_mcp() {
    check_doc("docs/mcp.md");
}

#[test]
fn docs_protocol() {
    check_doc("docs/protocol.md");
}

#[test]
fn docs_python() {
    check_doc("docs/python.md");
}

#[test]
fn docs_tau2() {
    check_doc("docs/tau2.md");
}

#[test]
fn docs_conversation() {
    check_doc("docs/conversation.md");
}

#[test]
fn docs_sessions() {
    check_doc("docs/sessions.md");
}

#[test]
fn docs_llm() {
    check_doc("docs/llm.md");
}

#[test]
fn docs_traces() {
    check_doc("docs/traces.md");
}

#[test]
fn seeds_readme() {
    check_doc("seeds/README.md");
}

/// Every markdown file with a transcript is checked by a test above.
#[test]
fn every_doc_with_a_transcript_is_checked() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let checked = [
        "README.md",
        "docs/worlds.md",
        "docs/conversation.md",
        "docs/mcp.md",
        "docs/protocol.md",
        "docs/python.md",
        "docs/tau2.md",
        "docs/traces.md",
        "docs/llm.md",
        "docs/sessions.md",
        "seeds/README.md",
    ];
    // BENCHMARKS.md's commands are measurements (timings), not transcripts.
    let mut docs: Vec<String> = ["README.md", "seeds/README.md"].map(String::from).to_vec();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        docs.push(format!("docs/{}", entry.unwrap().file_name().to_string_lossy()));
    }
    for doc in docs {
        let markdown = std::fs::read_to_string(root.join(&doc)).unwrap();
        if !blocks(&markdown).is_empty() {
            assert!(checked.contains(&doc.as_str()), "{doc} has console blocks but no transcript test");
        }
    }
}

#[test]
fn the_matcher_elides_only_where_told() {
    let e = |s: &[&str]| s.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(lines_match(&e(&["a", "...", "d"]), &["a", "b", "c", "d"]));
    assert!(lines_match(&e(&["a", "...", "b"]), &["a", "b"]));
    assert!(!lines_match(&e(&["a", "d"]), &["a", "b", "d"]));
    assert!(lines_match(&e(&["x [..] s"]), &["x 0.59 s"]));
    assert!(!lines_match(&e(&["x [..] s"]), &["x 0.59 ms!"]));
    assert!(!lines_match(&e(&["99.4%"]), &["99.5%"]));
    assert!(line_matches("[..]", "anything"));
    assert!(line_matches("a[..]b[..]c", "a1b2c"));
    assert!(!line_matches("a[..]b[..]c", "a1c2b"));
}
