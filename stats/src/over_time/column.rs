//! A run's buckets as text, the `t=` part of the `sessions` column of
//! `trajectories.csv`, and read back:
//!
//! ```text
//! t=1:1.2.2.61000.41000.0.97+106/0/0.1.0.140000.140000.50.120/1/1
//! ```
//!
//! `t=W:` gives the buckets' width in minutes, then the buckets from time 0,
//! `/`-separated. A bucket where no session arrived is the number of sessions
//! in flight at its start; any other is `in_flight.arrived.succeeded.
//! latency_sum_ms.latency_max_ms.model_queue_ms.bins`, the bins `+`-separated
//! as `bin*count` (`bin` alone for a count of 1; see [`super::latency_bins`]).

use std::fmt::Write as _;

use super::latency_bins::{BINS, bin_of};
use super::{BUCKETS_MAX, Bucket, RunBuckets};

/// The widest bucket the column accepts, in minutes: the rule never needs more
/// for ten years of virtual time.
const WIDTH_MINUTES_MAX: u64 = 1 << 20;

impl RunBuckets {
    /// The column's text, without the leading `t=`.
    pub fn to_text(&self) -> String {
        let mut text = format!("{}:", self.width_minutes);
        for (i, b) in self.buckets.iter().enumerate() {
            if i > 0 {
                text.push('/');
            }
            if b.arrived == 0 {
                let _ = write!(text, "{}", b.in_flight);
                continue;
            }
            let _ = write!(
                text,
                "{}.{}.{}.{}.{}.{}.",
                b.in_flight, b.arrived, b.succeeded, b.latency_sum_ms, b.latency_max_ms, b.model_queue_ms
            );
            for (j, (bin, count)) in b.latency_bins.iter().enumerate() {
                if j > 0 {
                    text.push('+');
                }
                let _ = write!(text, "{bin}");
                if *count > 1 {
                    let _ = write!(text, "*{count}");
                }
            }
        }
        text
    }

    /// Reads [`RunBuckets::to_text`] back; the error says what is wrong.
    pub fn parse(text: &str) -> Result<RunBuckets, String> {
        let (width, buckets) =
            text.split_once(':').ok_or_else(|| format!("`t={text}`: expected `t=WIDTH:bucket/bucket/...`"))?;
        let width_minutes: u64 = integer(width, "the width in minutes")?;
        if !width_minutes.is_power_of_two() || width_minutes > WIDTH_MINUTES_MAX {
            return Err(format!("`t={width}:...`: the width must be a power of two of minutes, found {width}"));
        }
        let buckets = buckets.split('/').map(bucket).collect::<Result<Vec<_>, _>>()?;
        let count = buckets.len() as u64;
        if count > BUCKETS_MAX {
            return Err(format!("`t=`: {count} buckets, at most {BUCKETS_MAX}"));
        }
        // The rule takes the narrowest width that fits: a wider one than a
        // minute is only ever needed for more than 60 of its buckets.
        if width_minutes > 1 && count <= BUCKETS_MAX / 2 {
            return Err(format!("`t=`: {count} buckets of {width_minutes} minutes would fit narrower ones"));
        }
        Ok(RunBuckets { width_minutes, buckets })
    }
}

fn integer<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("`t=`: {what} must be a non-negative integer, found `{text}`"))
}

/// One bucket's text.
fn bucket(text: &str) -> Result<Bucket, String> {
    let fields: Vec<&str> = text.split('.').collect();
    let in_flight = integer(fields[0], "the sessions in flight")?;
    if fields.len() == 1 {
        return Ok(Bucket { in_flight, ..Bucket::default() });
    }
    let [_, arrived, succeeded, latency_sum_ms, latency_max_ms, model_queue_ms, bins] = fields[..] else {
        return Err(format!("`t=` bucket `{text}`: expected 1 or 7 `.`-separated fields, found {}", fields.len()));
    };
    let mut b = Bucket {
        arrived: integer(arrived, "arrived")?,
        succeeded: integer(succeeded, "succeeded")?,
        latency_sum_ms: integer(latency_sum_ms, "latency_sum_ms")?,
        latency_max_ms: integer(latency_max_ms, "latency_max_ms")?,
        model_queue_ms: integer(model_queue_ms, "model_queue_ms")?,
        in_flight,
        latency_bins: Default::default(),
    };
    for part in bins.split('+') {
        let (bin, count) = part.split_once('*').unwrap_or((part, "1"));
        let (bin, count): (u32, u64) = (integer(bin, "a latency bin")?, integer(count, "a bin's count")?);
        if bin >= BINS || count == 0 || b.latency_bins.last_key_value().is_some_and(|(last, _)| *last >= bin) {
            return Err(format!(
                "`t=` bucket `{text}`: latency bins must increase, each below {BINS}, counted at least once"
            ));
        }
        b.latency_bins.insert(bin, count);
    }
    let binned: u64 = b.latency_bins.values().sum();
    let top_bin = b.latency_bins.last_key_value().map(|(bin, _)| *bin);
    if b.arrived == 0 || b.succeeded > b.arrived || binned != b.arrived || top_bin != Some(bin_of(b.latency_max_ms)) {
        return Err(format!("`t=` bucket `{text}`: counts out of range"));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::super::tests::session;
    use super::*;

    #[test]
    fn the_text_reads_back_and_bad_text_is_refused() {
        let run = RunBuckets::of(&[
            session(0, 0, 41_000, true, 0),
            session(1, 10_000, 30_000, true, 0),
            session(2, 130_000, 270_000, false, 50),
        ]);
        let text = run.to_text();
        assert_eq!(text, "1:1.2.2.61000.41000.0.97+106/0/0.1.0.140000.140000.50.120/1/1");
        assert_eq!(RunBuckets::parse(&text).unwrap(), run);
        for (bad, needle) in [
            ("3:1", "power of two"),
            ("2:1", "narrower"),
            ("1:x", "non-negative integer"),
            ("1:1.2", "1 or 7"),
            ("1:1.2.2.5.5.0.1", "counts out of range"),
            ("1:1.1.2.5.5.0.5", "counts out of range"),
            ("1:1.1.1.5.5.0.6", "counts out of range"),
            ("1:1.2.1.5.5.0.5+5", "must increase"),
            ("1:1.1.1.5.5.0.999", "below"),
            ("1", "expected `t=WIDTH"),
        ] {
            let err = RunBuckets::parse(bad).unwrap_err();
            assert!(err.contains(needle), "{bad}: {err}");
        }
        let too_many = format!("1:{}", vec!["0"; 121].join("/"));
        assert!(RunBuckets::parse(&too_many).unwrap_err().contains("at most 120"));
    }
}
