//! Reading `trajectories.csv` back: the one path from a sweep's rows to its
//! records, shared by everything that rebuilds a summary from rows (`agentsim
//! check` verifying a summary, `--resume` reading the rows done, `merge`
//! joining shards). Each row is parsed by [`Record::from_csv`], checked against
//! its `check` column, and, where the caller asks, against the order a sweep
//! writes rows in ([`SeedOrder`]); the first failing seeds of each mode are
//! kept by [`FirstFailures`], the same rule a running sweep applies.

use std::fmt;
use std::ops::Range;

use agentsim_engine::Outcome;

use crate::rows::{ColumnError, Record};

/// A row file that could not be read back: where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowsError {
    /// The file, as shown to the user.
    pub origin: String,
    /// The 1-based line of the row, where one is at fault.
    pub line: Option<u64>,
    /// What is wrong.
    pub kind: RowsErrorKind,
}

/// What is wrong with a row file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowsErrorKind {
    /// The first line is not a CSV header (the CSV reader's reason).
    Header(String),
    /// A line is not CSV (the CSV reader's reason).
    Csv(String),
    /// A column of a row is wrong; the error names the column.
    Column(ColumnError),
    /// The file does not end with a newline: its last row was cut off.
    CutOff,
    /// A row's seed is not the next one.
    SeedOrder {
        /// The seed the row should have had.
        expected: u64,
        /// The seed it has.
        found: u64,
        /// The seeds the file must hold, in order.
        seeds: Range<u64>,
        /// The file is a shard's (the wording names the shard).
        shard: bool,
    },
    /// The file ends inside a seed: fewer rows than its trials.
    PartialSeed {
        /// The seed.
        seed: u64,
        /// Its rows in the file.
        rows: u32,
        /// Trials per seed.
        trials: u32,
    },
    /// A shard ends before its last seed.
    Short {
        /// The first seed it does not hold.
        next_seed: u64,
        /// The seeds it must hold.
        seeds: Range<u64>,
    },
}

impl fmt::Display for RowsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let origin = &self.origin;
        let line = self.line.unwrap_or(0);
        match &self.kind {
            RowsErrorKind::Header(e) => write!(f, "{origin}:1: not a CSV header: {e}"),
            RowsErrorKind::Csv(e) => write!(f, "{origin}: {e}"),
            RowsErrorKind::Column(e) => write!(f, "{origin}:{line}: {e}"),
            RowsErrorKind::CutOff => write!(f, "{origin}: the last row is cut off (not written by agentsim?)"),
            RowsErrorKind::SeedOrder { expected, found, seeds, shard: false } => write!(
                f,
                "{origin}:{line}: expected seed {expected}, found {found} (the rows must be the seeds {}..{} in order)",
                seeds.start, seeds.end
            ),
            RowsErrorKind::SeedOrder { expected, found, seeds, shard: true } => write!(
                f,
                "{origin}:{line}: expected seed {expected}, found {found} (a shard must hold its seeds {}..{} in order)",
                seeds.start, seeds.end
            ),
            RowsErrorKind::PartialSeed { seed, rows, trials } => write!(
                f,
                "{origin}: seed {seed} has {rows} of its {trials} trials (rows are written whole seeds at a time)"
            ),
            RowsErrorKind::Short { next_seed, seeds } => write!(
                f,
                "{origin}: holds seeds up to {next_seed}, expected {}..{} (an interrupted shard?)",
                seeds.start, seeds.end
            ),
        }
    }
}

impl std::error::Error for RowsError {}

/// The order a sweep writes rows in: the seeds of `seeds` from the first, each
/// with `trials` rows (trial 0 first).
#[derive(Clone, Debug)]
pub struct SeedOrder {
    seeds: Range<u64>,
    trials: u32,
    next_seed: u64,
    trial_of_seed: u32,
    shard: bool,
}

impl SeedOrder {
    /// Rows of the seeds `seeds`, `trials` rows each; `shard` words the errors
    /// for a shard's file.
    pub fn new(seeds: Range<u64>, trials: u32, shard: bool) -> SeedOrder {
        assert!(trials >= 1, "a sweep runs at least one trial per seed");
        SeedOrder { next_seed: seeds.start, seeds, trials, trial_of_seed: 0, shard }
    }

    /// Admits the next row's seed: its trial, or why it is out of order.
    fn admit(&mut self, seed: u64) -> Result<u32, RowsErrorKind> {
        if seed != self.next_seed || self.next_seed >= self.seeds.end {
            return Err(RowsErrorKind::SeedOrder {
                expected: self.next_seed,
                found: seed,
                seeds: self.seeds.clone(),
                shard: self.shard,
            });
        }
        let trial = self.trial_of_seed;
        self.trial_of_seed += 1;
        if self.trial_of_seed == self.trials {
            self.trial_of_seed = 0;
            self.next_seed += 1;
        }
        Ok(trial)
    }

    /// The first seed not yet read (all the rows read are whole seeds).
    pub fn next_seed(&self) -> u64 {
        self.next_seed
    }

    /// Ends the file: its rows must be whole seeds and, when `to_the_end`,
    /// every seed of the range.
    fn finish(&self, to_the_end: bool) -> Result<(), RowsErrorKind> {
        if to_the_end && (self.next_seed != self.seeds.end || self.trial_of_seed != 0) {
            return Err(RowsErrorKind::Short { next_seed: self.next_seed, seeds: self.seeds.clone() });
        }
        if self.trial_of_seed != 0 {
            return Err(RowsErrorKind::PartialSeed {
                seed: self.next_seed,
                rows: self.trial_of_seed,
                trials: self.trials,
            });
        }
        Ok(())
    }
}

/// A failing run a sweep keeps as an incident: its seed, the first of its
/// trials that failed, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kept {
    /// How it failed.
    pub outcome: Outcome,
    /// The seed.
    pub seed: u64,
    /// The trial (0: the seed's own run).
    pub trial: u32,
}

impl Kept {
    /// The incident's file under the sweep's output:
    /// `failures/OUTCOME_seedN.ron`, `..._seedN_trialK.ron` for a later trial.
    pub fn incident_name(&self) -> String {
        match self.trial {
            0 => format!("failures/{}_seed{}.ron", self.outcome, self.seed),
            k => format!("failures/{}_seed{}_trial{k}.ron", self.outcome, self.seed),
        }
    }
}

/// The first failing seeds of each failure mode, in seed order, each at the
/// first of its trials that failed: the runs a sweep keeps as incidents.
/// A seed whose own run passes is kept at a later trial that fails (another
/// attempt of the agents, or another schedule when the scenario explores
/// interleavings, where trial 0 is only the seeded one).
#[derive(Clone, Debug, Default)]
pub struct FirstFailures {
    per_mode: usize,
    /// The runs kept, in the order met.
    pub kept: Vec<Kept>,
}

impl FirstFailures {
    /// Keeps at most `per_mode` seeds of each failure mode, after `kept`.
    pub fn new(per_mode: usize, kept: Vec<Kept>) -> FirstFailures {
        FirstFailures { per_mode, kept }
    }

    /// Notes a row (rows come in (seed, trial) order); true when it is kept.
    pub fn note(&mut self, trial: u32, outcome: Outcome, seed: u64) -> bool {
        let seed_kept = self.kept.last().is_some_and(|k| k.seed == seed);
        let kept = outcome != Outcome::Success
            && !seed_kept
            && self.kept.iter().filter(|k| k.outcome == outcome).count() < self.per_mode;
        if kept {
            self.kept.push(Kept { outcome, seed, trial });
        }
        kept
    }
}

/// One row read back.
#[derive(Clone, Debug)]
pub struct RowAt<'t> {
    /// Its 1-based line.
    pub line: u64,
    /// Its text as written, with its newline.
    pub text: &'t str,
    /// Its trial (0 without a [`SeedOrder`]).
    pub trial: u32,
    /// What it records.
    pub record: Record,
}

/// Reads the rows of `text` (a `trajectories.csv` shown as `origin`), in
/// order, handing each to `each`: the header first, then every row parsed
/// and, with `order`, checked to be the next of the sweep's seeds. With
/// `order` the file must end with whole seeds (and, with `to_the_end`, every
/// seed); a file that does not end in a newline is refused as cut off. An
/// empty file has no rows.
pub fn read_rows<'t, E: From<RowsError>>(
    text: &'t str,
    origin: &str,
    mut order: Option<&mut SeedOrder>,
    to_the_end: bool,
    mut each: impl FnMut(RowAt<'t>) -> Result<(), E>,
) -> Result<(), E> {
    let error = |line: Option<u64>, kind: RowsErrorKind| RowsError { origin: origin.to_string(), line, kind };
    if order.is_some() && !text.is_empty() && !text.ends_with('\n') {
        return Err(error(None, RowsErrorKind::CutOff).into());
    }
    let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(text.as_bytes());
    let mut row = csv::StringRecord::new();
    let mut header = csv::StringRecord::new();
    let has_header = reader.read_record(&mut header).map_err(|e| error(None, RowsErrorKind::Header(e.to_string())))?;
    if has_header {
        loop {
            let start = reader.position().byte() as usize;
            if !reader.read_record(&mut row).map_err(|e| error(None, RowsErrorKind::Csv(e.to_string())))? {
                break;
            }
            let line = row.position().map_or(0, csv::Position::line);
            let record = Record::from_csv(&header, &row).map_err(|e| error(Some(line), RowsErrorKind::Column(e)))?;
            let trial = match order.as_deref_mut() {
                Some(order) => order.admit(record.seed).map_err(|kind| error(Some(line), kind))?,
                None => 0,
            };
            let end = reader.position().byte() as usize;
            each(RowAt { line, text: &text[start..end], trial, record })?;
        }
    }
    if let Some(order) = order {
        order.finish(to_the_end).map_err(|kind| error(None, kind))?;
    }
    Ok(())
}

/// The header line of `text` (with its newline), empty when there is none.
pub fn header_line(text: &str) -> &str {
    text.split_inclusive('\n').next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_is_kept_at_its_first_failing_trial_once() {
        let mut first = FirstFailures::new(2, Vec::new());
        // Seed 0: its own run passes, its second trial fails, its third too.
        assert!(!first.note(0, Outcome::Success, 0));
        assert!(first.note(1, Outcome::Violation, 0));
        assert!(!first.note(2, Outcome::Violation, 0));
        // Seed 1 fails at once; seed 2 would be the third violation.
        assert!(first.note(0, Outcome::Violation, 1));
        assert!(!first.note(0, Outcome::Violation, 2));
        assert!(first.note(1, Outcome::GaveUp, 2));
        let names: Vec<String> = first.kept.iter().map(Kept::incident_name).collect();
        assert_eq!(
            names,
            [
                "failures/violation_seed0_trial1.ron",
                "failures/violation_seed1.ron",
                "failures/gave_up_seed2_trial1.ron"
            ]
        );
    }
}
