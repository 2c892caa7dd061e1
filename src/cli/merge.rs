//! `agentsim merge`: shard outputs into the files one single run would have written.

use std::path::PathBuf;
use std::process::ExitCode;

use super::Failure;
use super::output::{errln, outln};

/// Arguments of `agentsim merge`.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The shard directories (each written by `sweep --shard K/N`), in any order.
    #[arg(required = true, value_name = "DIR")]
    shards: Vec<PathBuf>,
    /// Where to write the merged trajectories.csv, summary.json and failures/.
    #[arg(short = 'o', long, value_name = "DIR")]
    out: PathBuf,
}

/// Merges the shards.
pub fn merge(args: &MergeArgs) -> Result<ExitCode, Failure> {
    let summary = agentsim::sweep::merge(&args.shards, &args.out)?;
    let shards = &args.shards;
    outln!(
        "merged {} shards: {} trajectories of seeds {}..{}, digest {}",
        shards.len(),
        summary.trajectories,
        summary.seed_start,
        summary.seed_end,
        summary.digest
    )?;
    errln!("wrote {}/trajectories.csv and {}/summary.json", args.out.display(), args.out.display());
    Ok(ExitCode::SUCCESS)
}
