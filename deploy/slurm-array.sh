#!/usr/bin/env bash
# A million-seed sweep split over 8 Slurm array tasks, then merged.
#
#   sweep=$(sbatch --parsable deploy/slurm-array.sh)
#   sbatch --dependency=afterok:"$sweep" --wrap \
#     'agentsim merge results/shard-* --out results/merged'
#
# Each task runs shard SLURM_ARRAY_TASK_ID (0..7) of the seed range into its own
# directory; the merge writes exactly the files one single run would have written,
# and refuses shards that do not belong together.
#SBATCH --job-name=agentsim-sweep
#SBATCH --array=0-7
#SBATCH --cpus-per-task=2
#SBATCH --mem=512M
#SBATCH --time=01:00:00
#SBATCH --output=results/slurm-%A_%a.log
set -euo pipefail
mkdir -p results
agentsim sweep support_desk --agent resilient \
  --seeds 0..1000000 --shard "${SLURM_ARRAY_TASK_ID}/8" \
  --out "results/shard-${SLURM_ARRAY_TASK_ID}" --quiet
