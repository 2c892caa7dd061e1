//! A [`Row`]'s line of `trajectories.csv`, written by hand: exactly the bytes
//! the `csv` crate's writer (default settings: `,`, `"` doubled, quotes only
//! where necessary, `\n`) writes for the row serialised with serde, which
//! every row of a sweep paid for (a writer, its buffer and serde's walk over
//! the fields) where a few appends do. The tests compare the two over rows of
//! every shape and field contents that need quoting.

use crate::rows::{Row, row_check};

/// One row as its line of `trajectories.csv`, newline included: `trial` adds
/// the column after `seed`, and the row's checksum ([`row_check`] of the line
/// without `trial`, so that trial 0 is the row of the plain sweep, byte for
/// byte, but for the `trial` column) is the last column.
pub fn csv_line(row: &Row, trial: Option<u32>) -> Vec<u8> {
    let mut fields = Fields { line: Vec::with_capacity(256) };
    fields.line.extend_from_slice(itoa::Buffer::new().format(row.seed).as_bytes());
    // Where `trial` goes, if any: after the seed's comma.
    let after_seed = fields.line.len() + 1;
    fields.after_seed(row);
    let mut line = fields.line;
    let check = row_check(&line);
    if let Some(trial) = trial {
        let mut number = itoa::Buffer::new();
        let trial = number.format(trial).as_bytes();
        line.splice(after_seed..after_seed, trial.iter().copied().chain([b',']));
    }
    line.push(b',');
    line.extend_from_slice(check.as_bytes());
    line.push(b'\n');
    line
}

/// A line being written, field by field.
struct Fields {
    line: Vec<u8>,
}

impl Fields {
    /// The fields after `seed`, each after its comma, in [`Row`]'s order (its
    /// serde order, which the header follows).
    fn after_seed(&mut self, row: &Row) {
        self.text(row.outcome);
        self.number(u64::from(row.success));
        self.number(u64::from(row.turns));
        self.number(u64::from(row.tool_calls));
        self.number(u64::from(row.failed_calls));
        self.number(u64::from(row.faults_seen));
        self.number(u64::from(row.recovered));
        self.number(u64::from(row.violations));
        self.number(row.tokens);
        self.text(&row.cost_usd);
        self.number(row.virtual_ms);
        self.text(row.milestone);
        self.text(&row.fault_kinds);
        self.text(&row.minefields);
        match row.told_accurately {
            Some(told) => self.number(u64::from(told)),
            None => self.text(""),
        }
        self.number(u64::from(row.rejected_calls));
        self.text(&row.decisions);
        self.text(&row.digest);
        // The optional columns: absent when `None` (`skip_serializing_if`).
        for column in
            [&row.swarm, &row.task, &row.state_hash, &row.checks, &row.log_weight, &row.sessions].into_iter().flatten()
        {
            self.text(column);
        }
    }

    /// A number after a comma.
    fn number(&mut self, n: u64) {
        self.line.push(b',');
        self.line.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    }

    /// A text field after a comma, quoted as the csv writer quotes: when it
    /// holds the delimiter, a quote or a line end (`\n` or `\r`), with each
    /// quote doubled.
    fn text(&mut self, text: &str) {
        self.line.push(b',');
        let bytes = text.as_bytes();
        if !bytes.iter().any(|&b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
            self.line.extend_from_slice(bytes);
            return;
        }
        self.line.push(b'"');
        for &b in bytes {
            if b == b'"' {
                self.line.push(b'"');
            }
            self.line.push(b);
        }
        self.line.push(b'"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::append_check;
    use proptest::prelude::*;

    /// The line as the `csv` crate writes it: the row serialised with serde by
    /// one writer, its check appended, and for a trial the record read back,
    /// the trial inserted and written again (what `csv_line` did before it was
    /// written by hand).
    fn by_the_csv_crate(row: &Row, trial: Option<u32>) -> Vec<u8> {
        let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
        w.serialize(row).unwrap();
        let mut line = w.into_inner().unwrap();
        append_check(&mut line);
        let Some(trial) = trial else { return line };
        let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(line.as_slice());
        let mut record: Vec<String> = reader.records().next().unwrap().unwrap().iter().map(str::to_string).collect();
        record.insert(1, trial.to_string());
        let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
        w.write_record(&record).unwrap();
        w.into_inner().unwrap()
    }

    /// Field contents the csv writer quotes, or nearly does.
    const TRICKY: [&str; 20] = [
        "",
        "plain",
        "a,b",
        ",",
        "\"",
        "\"\"",
        "say \"hi\", then go",
        "line\nbreak",
        "carriage\rreturn",
        "\r\n",
        "trailing,",
        ",leading",
        "é✓ unicode ✓",
        "「引用」, 全角",
        " spaced ",
        "#hash",
        "'single'",
        "a;b;c=1",
        "tab\there",
        "nul\u{0}byte",
    ];

    fn tricky(i: usize) -> String {
        TRICKY[i % TRICKY.len()].to_string()
    }

    /// A row of `outcome` and `milestone` whose other fields come from
    /// `text` and `n` (numbers, the seed first); `shape`'s bits choose which
    /// optional fields are present.
    fn row(
        (outcome, milestone): (&'static str, &'static str),
        text: &mut impl FnMut() -> String,
        n: &mut impl FnMut() -> u64,
        shape: u32,
    ) -> Row {
        let some = |bit: u32, value: String| (shape & (1 << bit) != 0).then_some(value);
        Row {
            seed: n(),
            outcome,
            success: n() as u8,
            turns: n() as u32,
            tool_calls: n() as u32,
            failed_calls: n() as u32,
            faults_seen: n() as u32,
            recovered: n() as u8,
            violations: n() as u32,
            tokens: n(),
            cost_usd: text(),
            virtual_ms: n(),
            milestone,
            fault_kinds: text(),
            minefields: text(),
            told_accurately: [None, Some(0), Some(1)][(shape >> 6) as usize % 3],
            rejected_calls: n() as u32,
            decisions: text(),
            digest: text(),
            swarm: some(0, text()),
            task: some(1, text()),
            state_hash: some(2, text()),
            checks: some(3, text()),
            log_weight: some(4, text()),
            sessions: some(5, text()),
        }
    }

    #[test]
    fn hand_written_lines_are_the_csv_crate_s_over_tricky_fields() {
        let mut state = 0usize;
        let mut pick = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        let numbers = [0, 1, 9, 10, 255, 65_535, u64::from(u32::MAX), u64::MAX];
        let mut k = 0usize;
        let mut n = || {
            k += 1;
            numbers[k % numbers.len()].wrapping_add(k as u64 % 3)
        };
        for case in 0..3_000u32 {
            let shape = case % 192;
            let names = (TRICKY[pick() % TRICKY.len()], TRICKY[pick() % TRICKY.len()]);
            let row = row(names, &mut || tricky(pick()), &mut n, shape);
            for trial in [None, Some(0), Some(1), Some(63), Some(u32::MAX)] {
                let ours = csv_line(&row, trial);
                let theirs = by_the_csv_crate(&row, trial);
                assert_eq!(
                    String::from_utf8_lossy(&ours),
                    String::from_utf8_lossy(&theirs),
                    "case {case}, trial {trial:?}, row {row:?}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn hand_written_lines_are_the_csv_crate_s_for_any_text(
            texts in proptest::collection::vec("[a-c,\"\n\r é✓#;=.]{0,10}", 12),
            seed in any::<u64>(),
            shape in 0u32..192,
            trial in proptest::option::of(any::<u32>()),
        ) {
            let mut i = 0;
            let mut text = || { i += 1; texts[i % texts.len()].clone() };
            let mut j = 0u64;
            let mut n = || { j += 1; if j == 1 { seed } else { seed.rotate_left(j as u32 * 7) % (1 << (j % 40)) } };
            let row = row(("success", "refunded"), &mut text, &mut n, shape);
            prop_assert_eq!(csv_line(&row, trial), by_the_csv_crate(&row, trial));
        }
    }
}
