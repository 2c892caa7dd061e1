//! The text reader against a corpus of agent messages (`tests/conversation/*.txt`),
//! each with the reading a person would give it.
//!
//! A corpus file declares the user's facts and the world's known names, then one
//! message a line with its expected reading:
//!
//! ```text
//! @fact order_id id A1002 | order reference
//! @fact amount money 8900 | price
//! @known item monitor
//! propose | | order_id amount | | Shall I refund order A1002, $89.00?
//! ```
//!
//! The columns: the intent; the facts a question asks for; the facts stated
//! rightly; the facts stated wrongly (a fact may be in both: `$89.00 plus
//! $10.00`); the message (`\n` for a new line). The reader must never read a
//! value it was not written as: every value it places must be expected, with
//! the expected rightness, it must ask for no fact it was not asked for
//! (precision 100%), and its intent must be the expected one. Recall (expected
//! values and asked facts it found) is printed, and must not fall below the
//! floor BENCHMARKS.md reports.

use std::path::Path;

use agentsim_worlds::talk::{self, Fact, FactValue, Lexicon};

/// Recall of stated values may not fall below this (BENCHMARKS.md, "Conversation").
const RECALL_MIN: f64 = 0.9;

struct Case {
    line: usize,
    intent: String,
    asked: Vec<String>,
    right: Vec<String>,
    wrong: Vec<String>,
    message: String,
}

struct Corpus {
    facts: Vec<Fact>,
    lexicon: Lexicon,
    cases: Vec<Case>,
}

fn fact_of(line: usize, spec: &str) -> Fact {
    let (main, aliases) = spec.split_once('|').unwrap_or((spec, ""));
    let mut parts = main.split_whitespace();
    let (Some(name), Some(kind)) = (parts.next(), parts.next()) else { panic!("line {line}: @fact NAME KIND VALUE") };
    let value: Vec<&str> = parts.collect();
    let value = value.join(" ");
    let value = match kind {
        "id" => FactValue::Id(value),
        "name" => FactValue::Name(value),
        "money" => FactValue::Money(value.parse().unwrap_or_else(|_| panic!("line {line}: cents"))),
        "date" => {
            let (y, m, d) = talk::scan::iso_date(&value).unwrap_or_else(|| panic!("line {line}: YYYY-MM-DD"));
            FactValue::Date { year: y, month: m, day: d }
        }
        other => panic!("line {line}: unknown fact kind {other}"),
    };
    aliases.split(',').fold(Fact::new(name, value), |f, a| f.alias(a))
}

fn words_of(column: &str) -> Vec<String> {
    column.split_whitespace().map(str::to_string).collect()
}

fn parse(path: &Path) -> Corpus {
    let text = std::fs::read_to_string(path).expect("the corpus is readable");
    let mut corpus = Corpus { facts: Vec::new(), lexicon: Lexicon::new(), cases: Vec::new() };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let raw = raw.trim_end();
        if raw.trim().is_empty() || raw.starts_with('#') {
            continue;
        }
        if let Some(spec) = raw.strip_prefix("@fact ") {
            corpus.facts.push(fact_of(line, spec));
            continue;
        }
        if let Some(spec) = raw.strip_prefix("@known ") {
            let (fact, name) = spec.split_once(' ').unwrap_or_else(|| panic!("line {line}: @known FACT NAME"));
            corpus.lexicon.add(fact, name);
            continue;
        }
        let columns: Vec<&str> = raw.splitn(5, '|').collect();
        let [intent, asked, right, wrong, message] = columns[..] else {
            panic!("{}:{line}: expected `intent | asked | right | wrong | message`", path.display())
        };
        // One space after the last bar separates it from the message.
        let message = message.strip_prefix(' ').unwrap_or(message);
        corpus.cases.push(Case {
            line,
            intent: intent.trim().to_string(),
            asked: words_of(asked),
            right: words_of(right),
            wrong: words_of(wrong),
            message: message.replace("\\n", "\n"),
        });
    }
    corpus
}

/// (problems, values expected, values found).
fn check(path: &Path, corpus: &Corpus) -> (Vec<String>, usize, usize) {
    let mut problems = Vec::new();
    let (mut expected, mut found) = (0, 0);
    for case in &corpus.cases {
        let reading = talk::read(&case.message, &corpus.facts, &corpus.lexicon);
        let at = format!("{}:{}", path.display(), case.line);
        if reading.intent.name() != case.intent {
            problems.push(format!(
                "{at}: read as {}, expected {}: {:?}",
                reading.intent.name(),
                case.intent,
                case.message
            ));
        }
        // A fact asked for that was not is a misreading; one missed is recall.
        let asked: Vec<String> = reading.asked.iter().map(|&i| corpus.facts[i].name.clone()).collect();
        if let Some(extra) = asked.iter().find(|a| !case.asked.contains(a)) {
            problems.push(format!("{at}: asks for {extra} (expected {:?}): {:?}", case.asked, case.message));
        }
        expected += case.asked.len();
        found += case.asked.iter().filter(|a| asked.contains(a)).count();
        for s in &reading.stated {
            let name = &corpus.facts[s.fact].name;
            let (want, other) = if s.right { (&case.right, "right") } else { (&case.wrong, "wrong") };
            if !want.contains(name) {
                problems
                    .push(format!("{at}: read {name} = {:?} as {other}, not expected: {:?}", s.written, case.message));
            }
        }
        for name in case.right.iter().chain(&case.wrong) {
            expected += 1;
            let right = case.right.contains(name);
            let i = corpus.facts.iter().position(|f| &f.name == name).unwrap_or_else(|| panic!("{at}: no fact {name}"));
            if reading.stated.iter().any(|s| s.fact == i && s.right == right) {
                found += 1;
            }
        }
    }
    (problems, expected, found)
}

#[test]
fn the_reader_never_reads_a_wrong_value_in_the_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conversation");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("tests/conversation").flatten().map(|e| e.path()).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "txt"));
    files.sort();
    let (mut problems, mut expected, mut found, mut messages) = (Vec::new(), 0, 0, 0);
    for path in &files {
        let corpus = parse(path);
        messages += corpus.cases.len();
        let (p, e, f) = check(path, &corpus);
        problems.extend(p);
        expected += e;
        found += f;
    }
    let recall = found as f64 / expected.max(1) as f64;
    println!(
        "corpus: {messages} messages, {expected} stated values, recall {:.1}% ({found}/{expected})",
        recall * 100.0
    );
    assert!(problems.is_empty(), "{} misreadings:\n{}", problems.len(), problems.join("\n"));
    assert!(messages >= 300, "the corpus holds {messages} messages; it should hold at least 300");
    assert!(recall >= RECALL_MIN, "recall {recall:.3} under {RECALL_MIN}");
}
