//! `agentsim merge`: shard outputs into the files one single run would have written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentsim::SummaryBuilder;
use agentsim::shard::{ShardManifest, shard_seeds};
use agentsim::summary::Record;
use agentsim_engine::Outcome;

use super::output::{io_failure, lock_dir, outln, write_atomic};
use super::{Failure, load};

/// Arguments of `agentsim merge`.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The shard directories (each written by `sweep --shard K/N`), in any order.
    #[arg(required = true, value_name = "DIR")]
    shards: Vec<PathBuf>,
    /// Where to write the merged trajectories.csv, summary.json and failures/.
    #[arg(long)]
    out: PathBuf,
}

struct Shard {
    dir: PathBuf,
    manifest: ShardManifest,
}

fn load_shard(dir: &Path) -> Result<Shard, Failure> {
    let path = dir.join("shard.json");
    let text = load::read_text(&path.to_string_lossy(), "shard manifest").map_err(|_| {
        Failure::input(format!("{}: not a shard directory (no shard.json; run `sweep --shard K/N`)", dir.display()))
    })?;
    let manifest: ShardManifest = serde_json::from_str(&text)
        .map_err(|e| Failure::input(format!("{}:{}:{}: {e}", path.display(), e.line(), e.column())))?;
    Ok(Shard { dir: dir.to_path_buf(), manifest })
}

/// Merges the shards.
pub fn merge(args: &MergeArgs) -> Result<ExitCode, Failure> {
    // Writing over a shard would replace the rows being merged.
    if let Ok(out) = args.out.canonicalize() {
        for dir in &args.shards {
            if dir.canonicalize().is_ok_and(|d| d == out) {
                return Err(Failure::input(format!(
                    "--out {}: that is one of the shards being merged; choose another directory",
                    args.out.display()
                )));
            }
        }
    }
    let mut shards: Vec<Shard> = args.shards.iter().map(|d| load_shard(d)).collect::<Result<_, _>>()?;
    shards.sort_by_key(|s| s.manifest.shard);
    let first = shards[0].manifest.clone();
    for s in &shards {
        if let Some((field, a, b)) = first.mismatch(&s.manifest) {
            return Err(Failure::input(format!(
                "{} does not belong with {}: field `{field}` is {b} there and {a} here",
                s.dir.display(),
                shards[0].dir.display()
            )));
        }
    }
    let indices: Vec<u32> = shards.iter().map(|s| s.manifest.shard).collect();
    if indices != (0..first.shards).collect::<Vec<_>>() {
        return Err(Failure::input(format!(
            "expected shards 0..{} exactly once each, found {indices:?}",
            first.shards
        )));
    }

    // Rows in shard order; each shard's rows must be exactly its seeds, in order.
    let mut csv_bytes: Vec<u8> = Vec::new();
    let mut header_line: Option<String> = None;
    let mut builder = SummaryBuilder::with_trials(first.trials);
    let mut failing: Vec<(Outcome, u64, PathBuf)> = Vec::new();
    let seeds = first.seed_start..first.seed_end;
    for s in &shards {
        let path = s.dir.join("trajectories.csv");
        let text = load::read_bounded(&path.to_string_lossy(), "trajectories", None)?;
        let mut lines = text.lines();
        let header = lines.next().ok_or_else(|| Failure::input(format!("{}: empty", path.display())))?;
        match &header_line {
            None => {
                csv_bytes.extend_from_slice(header.as_bytes());
                csv_bytes.push(b'\n');
                header_line = Some(header.to_string());
            }
            Some(h) if h == header => {}
            Some(_) => {
                return Err(Failure::input(format!("{}: its columns differ from the other shards'", path.display())));
            }
        }
        let header_record = csv::StringRecord::from(header.split(',').collect::<Vec<_>>());
        let expected = shard_seeds(&seeds, s.manifest.shard, s.manifest.shards);
        let mut next_seed = expected.start;
        let mut trial_of_seed = 0u32;
        for (i, line) in lines.enumerate() {
            let row_number = i + 2;
            let row = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(line.as_bytes())
                .records()
                .next()
                .and_then(Result::ok)
                .ok_or_else(|| Failure::input(format!("{}:{row_number}: not a CSV row", path.display())))?;
            let record = Record::from_csv(&header_record, &row)
                .map_err(|e| Failure::input(format!("{}:{row_number}: {e}", path.display())))?;
            if record.seed != next_seed {
                return Err(Failure::input(format!(
                    "{}:{row_number}: expected seed {next_seed}, found {} (a shard must hold its seeds {}..{} in order)",
                    path.display(),
                    record.seed,
                    expected.start,
                    expected.end
                )));
            }
            if trial_of_seed == 0
                && record.outcome != Outcome::Success
                && failing.iter().filter(|(o, _, _)| *o == record.outcome).count() < first.failures
            {
                failing.push((record.outcome, record.seed, s.dir.clone()));
            }
            trial_of_seed += 1;
            if trial_of_seed == first.trials {
                trial_of_seed = 0;
                next_seed += 1;
            }
            builder.add_record(&record);
            csv_bytes.extend_from_slice(line.as_bytes());
            csv_bytes.push(b'\n');
        }
        if next_seed != expected.end || trial_of_seed != 0 {
            return Err(Failure::input(format!(
                "{}: holds seeds up to {next_seed}, expected {}..{} (an interrupted shard?)",
                path.display(),
                expected.start,
                expected.end
            )));
        }
    }
    let mut summary = builder.finish(&first.scenario, &first.agent, seeds, first.fault_scale);
    let _lock = lock_dir(&args.out, true)?;
    for (outcome, seed, dir) in &failing {
        let name = format!("failures/{outcome}_seed{seed}.ron");
        let bytes = std::fs::read(dir.join(&name))
            .map_err(|e| Failure::input(format!("{}: missing incident `{name}`: {e}", dir.display())))?;
        std::fs::create_dir_all(args.out.join("failures")).map_err(|e| io_failure(&args.out, &e))?;
        write_atomic(&args.out.join(&name), &bytes)?;
        summary.failures.push(name);
    }
    write_atomic(&args.out.join("trajectories.csv"), &csv_bytes)?;
    let json = serde_json::to_string_pretty(&summary).expect("a summary is plain data") + "\n";
    write_atomic(&args.out.join("summary.json"), json.as_bytes())?;
    outln!(
        "merged {} shards: {} trajectories of seeds {}..{}, digest {}",
        shards.len(),
        summary.trajectories,
        summary.seed_start,
        summary.seed_end,
        summary.digest
    )?;
    outln!("wrote {}/trajectories.csv and {}/summary.json", args.out.display(), args.out.display())?;
    Ok(ExitCode::SUCCESS)
}
