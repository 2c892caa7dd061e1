//! The rows of `trajectories.csv` and what the summary needs of each: a
//! [`Row`] written from a trajectory, its `check` checksum, and a [`Record`]
//! made from a trajectory or read back from a row (to merge shards or resume),
//! with the same result either way. Its own home, so that the summary and the
//! importance estimates both read records without importing each other.

use serde::Serialize;

use agentsim_engine::{Digest, Outcome, Trajectory};

/// One row of `trajectories.csv`.
#[derive(Debug, Serialize)]
pub struct Row {
    /// Seed.
    pub seed: u64,
    /// Outcome name.
    pub outcome: &'static str,
    /// 1 for success.
    pub success: u8,
    /// Planner turns.
    pub turns: u32,
    /// Tool calls, retries included.
    pub tool_calls: u32,
    /// Calls that did not return a well-formed success.
    pub failed_calls: u32,
    /// Calls that met an injected fault.
    pub faults_seen: u32,
    /// 1 when faults were met and the run still ended safely.
    pub recovered: u8,
    /// Minefields fired.
    pub violations: u32,
    /// Prompt plus completion tokens.
    pub tokens: u64,
    /// Model cost, US dollars, 6 decimals.
    pub cost_usd: String,
    /// Virtual time at the end.
    pub virtual_ms: u64,
    /// Last milestone reached.
    pub milestone: &'static str,
    /// Kinds of fault met, `;`-separated.
    pub fault_kinds: String,
    /// Minefields that fired, `;`-separated.
    pub minefields: String,
    /// Whether what the agent told the user matched the world: 1, 0, or empty when
    /// it told nothing (or the world does not measure it).
    pub told_accurately: Option<u8>,
    /// Calls the world refused with a 4xx that was not an injected fault.
    pub rejected_calls: u32,
    /// Planner and layer decisions taken, `source.what=times;...`, sorted.
    pub decisions: String,
    /// Trajectory digest.
    pub digest: String,
    /// In swarm mode, the fault parameters this seed drew (`name=value;...`);
    /// the column is absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm: Option<String>,
    /// In a world with named tasks (a scripted world), the task this seed ran;
    /// the column is absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// In a world that declares a state hash (an imported tau2-bench domain),
    /// the hash of the final state; the column is absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_hash: Option<String>,
    /// In a world that reports checks (a task's reward basis, see
    /// [`crate::checks`]), each check's result; the column is absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<String>,
    /// In an importance-sampling sweep (`--importance`), the natural log of the
    /// trajectory's likelihood ratio, nominal over sampled, written so that it
    /// reads back exactly; the column is absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_weight: Option<String>,
    /// In a run of many sessions, their counts
    /// ([`crate::sessions::SessionCounts::to_column`]); the column is absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<String>,
}

impl Row {
    /// The row of one trajectory.
    pub fn of(t: &Trajectory) -> Row {
        Row {
            seed: t.seed,
            outcome: t.outcome.name(),
            success: u8::from(t.outcome == Outcome::Success),
            turns: t.metrics.turns,
            tool_calls: t.metrics.tool_calls,
            failed_calls: t.metrics.failed_calls,
            faults_seen: t.metrics.faults_seen,
            recovered: u8::from(t.recovered()),
            violations: t.metrics.violations,
            tokens: t.metrics.tokens(),
            cost_usd: usd(t.metrics.cost_micro_usd),
            virtual_ms: t.metrics.virtual_ms,
            milestone: t.verdict.milestone,
            fault_kinds: fault_kinds_column(&t.fault_kinds),
            minefields: t.minefields.join(";"),
            told_accurately: t.verdict.told_accurately.map(u8::from),
            rejected_calls: t.metrics.rejected_calls,
            decisions: decisions_column(&t.decisions),
            // `Digest`'s `Display`, without the formatter.
            digest: agentsim_engine::hex::hex(&t.digest.0),
            swarm: None,
            task: None,
            state_hash: t.state_hash.clone(),
            checks: (!t.checks.is_empty()).then(|| crate::checks::column(&t.checks)),
            log_weight: None,
            sessions: crate::sessions::SessionCounts::of(&t.sessions).map(|c| c.to_column()),
        }
    }
}

/// The name of the last column of `trajectories.csv`: a checksum of the row's
/// other fields, so that a row edited by hand (an outcome, a cost) is refused when
/// `merge` or `--resume` reads it back, instead of counted.
pub const CHECK_COLUMN: &str = "check";

/// The `check` column of a row: 16 hex digits of the 64-bit fingerprint (fixed by
/// `agentsim_engine::fingerprint`) of the row's other fields exactly as written,
/// one CSV line without its end. It detects edits and corruption, not a forger
/// who recomputes it: the files are still agentsim's own output (README, Security).
pub fn row_check(line_without_check: &[u8]) -> String {
    let mut check = String::with_capacity(16);
    agentsim_engine::hex::push_hex(
        &mut check,
        &agentsim_engine::fingerprint::fingerprint(line_without_check).to_be_bytes(),
    );
    check
}

/// Appends the `check` column to one CSV line (ending in `\n`) of the other fields.
pub fn append_check(line: &mut Vec<u8>) {
    let end = line.len() - usize::from(line.last() == Some(&b'\n'));
    let check = row_check(&line[..end]);
    line.truncate(end);
    line.push(b',');
    line.extend_from_slice(check.as_bytes());
    line.push(b'\n');
}

/// Checks a row read back against its `check` column: the other fields (but
/// `trial`, which the order of the rows checks), written again as agentsim writes
/// them, must give the same checksum.
fn verify_check(header: &csv::StringRecord, row: &csv::StringRecord) -> Result<(), ColumnError> {
    let at = header.iter().position(|h| h == CHECK_COLUMN).ok_or_else(|| {
        ColumnError::new(
            CHECK_COLUMN,
            ColumnErrorKind::NoColumn,
            format!("no column `{CHECK_COLUMN}` (a file from an older agentsim? run the sweep again)"),
        )
    })?;
    let stated = row.get(at).ok_or_else(|| ColumnError::missing_in_row(CHECK_COLUMN))?;
    if row.len() != header.len() {
        return Err(ColumnError::new(
            "",
            ColumnErrorKind::Width,
            format!("expected {} columns, found {}", header.len(), row.len()),
        ));
    }
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
    let trial = header.iter().position(|h| h == "trial");
    w.write_record(row.iter().enumerate().filter(|(i, _)| *i != at && Some(*i) != trial).map(|(_, f)| f))
        .map_err(|e| ColumnError::new("", ColumnErrorKind::Encode, format!("cannot encode the row: {e}")))?;
    let mut line = w
        .into_inner()
        .map_err(|e| ColumnError::new("", ColumnErrorKind::Encode, format!("cannot encode the row: {e}")))?;
    line.pop();
    if row_check(&line) != stated {
        return Err(ColumnError::new(
            CHECK_COLUMN,
            ColumnErrorKind::Checksum,
            format!(
                "column `{CHECK_COLUMN}`: the row's fields do not match its checksum `{stated}` (edited after agentsim wrote it?)"
            ),
        ));
    }
    Ok(())
}

/// The `fault_kinds` column: the kinds' names, `;`-separated.
fn fault_kinds_column(kinds: &[agentsim_engine::FaultTag]) -> String {
    let mut column = String::new();
    for (i, kind) in kinds.iter().enumerate() {
        if i > 0 {
            column.push(';');
        }
        kind.push_name(&mut column);
    }
    column
}

/// The `decisions` column: `source.what=times`, `;`-separated, in the
/// trajectory's (sorted) order. Built by hand: it is rendered for every row.
fn decisions_column(decisions: &[(&'static str, &'static str, u32)]) -> String {
    let mut column = String::with_capacity(decisions.len() * 32);
    for (i, (source, what, times)) in decisions.iter().enumerate() {
        if i > 0 {
            column.push(';');
        }
        column.push_str(source);
        column.push('.');
        column.push_str(what);
        column.push('=');
        column.push_str(itoa::Buffer::new().format(*times));
    }
    column
}

/// What the summary needs of one trajectory: made from a trajectory while it runs,
/// or read back from its row in `trajectories.csv` (to merge shards or resume an
/// interrupted sweep), with the same result either way.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Seed.
    pub seed: u64,
    /// Outcome.
    pub outcome: Outcome,
    /// Calls that met an injected fault.
    pub faults_seen: u32,
    /// Faults met and still a safe end.
    pub recovered: bool,
    /// Minefields fired.
    pub violations: u32,
    /// Distinct minefields fired.
    pub minefields: Vec<String>,
    /// Decisions as (`source.what`, times), sorted.
    pub decisions: Vec<(String, u64)>,
    /// Turns.
    pub turns: u64,
    /// Tool calls.
    pub tool_calls: u64,
    /// Cost in millionths of a dollar.
    pub cost_micro_usd: u64,
    /// Virtual time at the end.
    pub virtual_ms: u64,
    /// Tokens.
    pub tokens: u64,
    /// The trajectory digest.
    pub digest: Digest,
    /// Contextual accuracy, when measured.
    pub told_accurately: Option<bool>,
    /// Calls refused with a 4xx not injected.
    pub rejected_calls: u64,
    /// Names of the fault kinds met.
    pub fault_kinds: Vec<String>,
    /// The log likelihood ratio (0 outside importance sampling).
    pub log_weight: f64,
    /// The task it ran, in a world with named tasks (when known).
    pub task: Option<String>,
    /// The world's checks (empty for a world that reports none).
    pub checks: Vec<crate::checks::RowCheck>,
    /// In a run of many sessions, their counts.
    pub sessions: Option<crate::sessions::SessionCounts>,
}

impl Record {
    /// The record of a trajectory.
    pub fn of(t: &Trajectory) -> Record {
        Record {
            seed: t.seed,
            outcome: t.outcome,
            faults_seen: t.metrics.faults_seen,
            recovered: t.recovered(),
            violations: t.metrics.violations,
            minefields: t.minefields.iter().map(|m| m.to_string()).collect(),
            decisions: t.decisions.iter().map(|(s, w, n)| ([*s, ".", w].concat(), u64::from(*n))).collect(),
            turns: u64::from(t.metrics.turns),
            tool_calls: u64::from(t.metrics.tool_calls),
            cost_micro_usd: t.metrics.cost_micro_usd,
            virtual_ms: t.metrics.virtual_ms,
            tokens: t.metrics.tokens(),
            digest: t.digest,
            told_accurately: t.verdict.told_accurately,
            rejected_calls: u64::from(t.metrics.rejected_calls),
            fault_kinds: t.fault_kinds.iter().map(|f| f.name()).collect(),
            log_weight: t.log_weight,
            task: None,
            checks: t.checks.iter().map(crate::checks::RowCheck::of).collect(),
            sessions: crate::sessions::SessionCounts::of(&t.sessions),
        }
    }

    /// The record of one `trajectories.csv` row, given the header; an error names
    /// the column.
    pub fn from_csv(header: &csv::StringRecord, row: &csv::StringRecord) -> Result<Record, ColumnError> {
        verify_check(header, row)?;
        let field = |name: &str| -> Result<&str, ColumnError> {
            let i = header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| ColumnError::new(name, ColumnErrorKind::NoColumn, format!("no column `{name}`")))?;
            row.get(i).ok_or_else(|| ColumnError::missing_in_row(name))
        };
        let number = |name: &str| -> Result<u64, ColumnError> {
            let text = field(name)?;
            text.parse().map_err(|_| {
                ColumnError::malformed(
                    name,
                    format!("column `{name}`: expected a non-negative integer, found `{text}`"),
                )
            })
        };
        let list = |name: &str| -> Result<Vec<String>, ColumnError> {
            Ok(field(name)?.split(';').filter(|p| !p.is_empty()).map(str::to_string).collect())
        };
        let outcome_name = field("outcome")?;
        let outcome = Outcome::ALL.into_iter().find(|o| o.name() == outcome_name).ok_or_else(|| {
            ColumnError::malformed("outcome", format!("column `outcome`: unknown outcome `{outcome_name}`"))
        })?;
        let (success, recovered, faults_seen, violations) =
            (number("success")?, number("recovered")?, number("faults_seen")?, number("violations")?);
        agree_with_outcome(outcome, success, recovered, faults_seen, violations)?;
        let cost = field("cost_usd")?;
        let cost_micro_usd = parse_usd(cost).ok_or_else(|| {
            ColumnError::malformed(
                "cost_usd",
                format!("column `cost_usd`: expected dollars like 0.012345, found `{cost}`"),
            )
        })?;
        let digest_text = field("digest")?;
        let digest = Digest::from_hex(digest_text).ok_or_else(|| {
            ColumnError::malformed("digest", format!("column `digest`: expected 32 hex digits, found `{digest_text}`"))
        })?;
        let told_accurately = told_accurately(field("told_accurately")?)?;
        let decisions = list("decisions")?.iter().map(|d| decision(d)).collect::<Result<Vec<_>, ColumnError>>()?;
        Ok(Record {
            seed: number("seed")?,
            outcome,
            faults_seen: u32::try_from(faults_seen).map_err(|_| ColumnError::too_large("faults_seen"))?,
            recovered: recovered == 1,
            violations: u32::try_from(violations).map_err(|_| ColumnError::too_large("violations"))?,
            minefields: list("minefields")?,
            decisions,
            turns: number("turns")?,
            tool_calls: number("tool_calls")?,
            cost_micro_usd,
            virtual_ms: number("virtual_ms")?,
            tokens: number("tokens")?,
            digest,
            told_accurately,
            rejected_calls: number("rejected_calls")?,
            fault_kinds: list("fault_kinds")?,
            log_weight: log_weight(header, row)?,
            task: optional(header, row, "task")?.map(str::to_string),
            checks: crate::checks::parse_column(optional(header, row, "checks")?.unwrap_or_default())
                .map_err(|message| ColumnError::malformed("checks", message))?,
            sessions: crate::sessions::SessionCounts::parse_column(
                optional(header, row, "sessions")?.unwrap_or_default(),
            )
            .map_err(|message| ColumnError::malformed("sessions", message))?,
        })
    }
}

/// The `told_accurately` column: 1, 0 or nothing (not measured).
fn told_accurately(text: &str) -> Result<Option<bool>, ColumnError> {
    match text {
        "" => Ok(None),
        "1" => Ok(Some(true)),
        "0" => Ok(Some(false)),
        other => Err(ColumnError::malformed(
            "told_accurately",
            format!("column `told_accurately`: expected 1, 0 or nothing, found `{other}`"),
        )),
    }
}

/// One `name=times` of the `decisions` column.
fn decision(d: &str) -> Result<(String, u64), ColumnError> {
    let bad = || ColumnError::malformed("decisions", format!("column `decisions`: `{d}` is not name=times"));
    let (name, times) = d.split_once('=').ok_or_else(bad)?;
    let times = times.parse().map_err(|_| bad())?;
    Ok((name.to_string(), times))
}

/// Columns that state the same fact twice must agree: a row that says both
/// would be counted both ways.
fn agree_with_outcome(
    outcome: Outcome,
    success: u64,
    recovered: u64,
    faults_seen: u64,
    violations: u64,
) -> Result<(), ColumnError> {
    let name = outcome.name();
    let contradiction =
        |column: &str, message: String| ColumnError::new(column, ColumnErrorKind::Contradiction, message);
    if success != u64::from(outcome == Outcome::Success) {
        return Err(contradiction("success", format!("column `success`: {success} contradicts the outcome `{name}`")));
    }
    if recovered != u64::from(faults_seen > 0 && outcome.is_safe_end()) {
        return Err(contradiction(
            "recovered",
            format!("column `recovered`: {recovered} contradicts the outcome `{name}` with {faults_seen} faults seen"),
        ));
    }
    if (violations > 0) != (outcome == Outcome::Violation) {
        return Err(contradiction(
            "violations",
            format!("column `violations`: {violations} contradicts the outcome `{name}`"),
        ));
    }
    Ok(())
}

/// An optional column of a row: `None` when the file has no such column.
fn optional<'r>(
    header: &csv::StringRecord,
    row: &'r csv::StringRecord,
    name: &str,
) -> Result<Option<&'r str>, ColumnError> {
    let Some(i) = header.iter().position(|h| h == name) else { return Ok(None) };
    row.get(i).map(Some).ok_or_else(|| ColumnError::missing_in_row(name))
}

/// The `log_weight` column of a row, 0 when the file has none (a sweep without
/// `--importance`). Rust's float display is the shortest text that reads back to
/// the same number, so the weight read is the weight written.
fn log_weight(header: &csv::StringRecord, row: &csv::StringRecord) -> Result<f64, ColumnError> {
    let Some(i) = header.iter().position(|h| h == "log_weight") else { return Ok(0.0) };
    let text = row.get(i).ok_or_else(|| ColumnError::missing_in_row("log_weight"))?;
    match text.parse::<f64>() {
        Ok(w) if !w.is_nan() && w != f64::INFINITY => Ok(w),
        _ => Err(ColumnError::malformed(
            "log_weight",
            format!("column `log_weight`: expected a number or -inf, found `{text}`"),
        )),
    }
}

/// A row of `trajectories.csv` that cannot be read back: the column at fault
/// (empty when the fault is the row's, as a wrong number of fields), what is
/// wrong, and the text shown to the user, which names the column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnError {
    /// The column at fault, or empty for the row as a whole.
    pub column: String,
    /// What is wrong.
    pub kind: ColumnErrorKind,
    /// The text shown to the user.
    pub message: String,
}

/// What is wrong with a row's column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnErrorKind {
    /// The header has no such column.
    NoColumn,
    /// The header has it but this row has too few fields to reach it.
    MissingInRow,
    /// The row has a different number of fields than the header.
    Width,
    /// The field does not parse as the column's type.
    Malformed,
    /// The field is a number too large for the column.
    TooLarge,
    /// Two columns that state the same fact disagree.
    Contradiction,
    /// The fields do not match the row's `check` column.
    Checksum,
    /// The row could not be encoded again to verify its checksum.
    Encode,
}

impl ColumnError {
    /// An error of `kind` in `column`, shown as `message`.
    pub fn new(column: &str, kind: ColumnErrorKind, message: String) -> ColumnError {
        ColumnError { column: column.to_string(), kind, message }
    }

    fn malformed(column: &str, message: String) -> ColumnError {
        ColumnError::new(column, ColumnErrorKind::Malformed, message)
    }

    fn missing_in_row(column: &str) -> ColumnError {
        ColumnError::new(column, ColumnErrorKind::MissingInRow, format!("column `{column}` is missing in this row"))
    }

    fn too_large(column: &str) -> ColumnError {
        ColumnError::new(column, ColumnErrorKind::TooLarge, format!("column `{column}`: too large"))
    }
}

impl std::fmt::Display for ColumnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ColumnError {}

/// Millionths of a dollar from `usd`'s format (`12.000345`), exactly.
pub fn parse_usd(text: &str) -> Option<u64> {
    let (whole, micros) = text.split_once('.')?;
    if micros.len() != 6 || !micros.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    whole.parse::<u64>().ok()?.checked_mul(1_000_000)?.checked_add(micros.parse().ok()?)
}

/// Formats millionths of a dollar as dollars with six decimals, exactly.
pub fn usd(micro_usd: u64) -> String {
    // By hand rather than `format!`: it is rendered for every row.
    let mut text = String::with_capacity(24);
    text.push_str(itoa::Buffer::new().format(micro_usd / 1_000_000));
    text.push('.');
    let mut digits = itoa::Buffer::new();
    let micros = digits.format(micro_usd % 1_000_000);
    text.extend(std::iter::repeat_n('0', 6 - micros.len()));
    text.push_str(micros);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usd_is_the_formatted_figure() {
        let mut x = 1u64;
        let mut values = vec![0, 1, 9, 10, 999_999, 1_000_000, 1_000_001, 12_345_678, u64::MAX - 1, u64::MAX];
        for _ in 0..10_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            values.push(x >> (x % 64));
        }
        for v in values {
            assert_eq!(usd(v), format!("{}.{:06}", v / 1_000_000, v % 1_000_000), "{v}");
            assert_eq!(parse_usd(&usd(v)), Some(v), "{v} reads back");
        }
    }

    /// A row with a valid `check` whose other fields are `fields`.
    fn row(fields: &str) -> csv::StringRecord {
        let mut line = format!("{fields}\n").into_bytes();
        append_check(&mut line);
        let text = String::from_utf8(line).unwrap();
        csv::StringRecord::from(text.trim_end().split(',').collect::<Vec<_>>())
    }

    #[test]
    fn a_column_error_names_its_column_and_kind() {
        let header = csv::StringRecord::from(vec!["seed", "outcome", CHECK_COLUMN]);
        let err = Record::from_csv(&header, &row("5,bogus")).unwrap_err();
        assert_eq!((err.column.as_str(), err.kind), ("outcome", ColumnErrorKind::Malformed));
        assert_eq!(err.to_string(), "column `outcome`: unknown outcome `bogus`");

        let err =
            Record::from_csv(&csv::StringRecord::from(vec!["seed"]), &csv::StringRecord::from(vec!["5"])).unwrap_err();
        assert_eq!((err.column.as_str(), err.kind), (CHECK_COLUMN, ColumnErrorKind::NoColumn));

        let mut edited = row("5,bogus");
        edited = csv::StringRecord::from(vec!["6", "bogus", edited.get(2).unwrap()]);
        let err = Record::from_csv(&header, &edited).unwrap_err();
        assert_eq!(err.kind, ColumnErrorKind::Checksum);
    }
}
