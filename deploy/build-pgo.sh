#!/usr/bin/env bash
# Builds agentsim with profile-guided optimisation (PGO): the `dist` profile,
# compiled once with counters, trained on a set of sweeps (every built-in world,
# the presets, a scripted world, the text channel, a run of many sessions),
# then compiled again with what the counters saw, so the compiler lays out and
# inlines the hot path as sweeps use it. A sweep costs about a tenth to a fifth
# less CPU than with `dist` alone (BENCHMARKS.md, "Profile-guided
# optimisation"); every output is the same, bit for bit (checked at the end).
#
#   bash deploy/build-pgo.sh            # binary: target/pgo/dist/agentsim
#   bash deploy/build-pgo.sh --peer     # also the peer bench's binary (benches/peer/run.py --profile pgo)
#   bash deploy/build-pgo.sh --train-only BIN_DIR [--seeds N]
#                                       # only run the training sweeps with BIN_DIR/agentsim
#                                       # (the test suite checks they still run)
#
# Two full builds of the `dist` profile (fat LTO): about twice as long as
# `cargo build --profile dist`. Needs rustup's `llvm-tools` component for
# `llvm-profdata` (added here when missing). RUSTFLAGS already set are kept.
set -euo pipefail

seeds=2000
peer=false
train_only=""
while [ $# -gt 0 ]; do
    case "$1" in
        --peer) peer=true ;;
        --train-only) train_only="${2:?--train-only needs a directory}"; shift ;;
        --seeds) seeds="${2:?--seeds needs a number}"; shift ;;
        *) echo "build-pgo.sh: unknown argument \`$1\` (--peer, --train-only DIR, --seeds N)" >&2; exit 2 ;;
    esac
    shift
done
# BIN_DIR as the caller named it, then everything else from the repository's root.
if [ -n "$train_only" ]; then
    named="$train_only"
    train_only=$(cd "$named" 2>/dev/null && pwd) ||
        { echo "build-pgo.sh: --train-only: no folder \`$named\`" >&2; exit 2; }
fi
cd "$(dirname "$0")/.."

# The training workload: what users run, in proportion enough for the compiler
# to see which branches are hot. Each sweep writes to a scratch folder; a sweep
# that fails prints what it said and stops the build.
train() {
    local bin="$1" scratch
    scratch=$(mktemp -d)
    quietly() {
        "$@" >"$scratch/said" 2>&1 || { cat "$scratch/said" >&2; rm -rf "$scratch"; echo "build-pgo.sh: failed: $*" >&2; exit 1; }
    }
    local sweep=("$bin/agentsim" sweep --seeds "0..$seeds" --out "$scratch/out" --quiet --failures 0)
    for agent in oracle naive backoff resilient resilient_text; do
        quietly "${sweep[@]}" support_desk --agent "$agent"
    done
    for world in flight_booking newsroom weather_dining; do
        quietly "${sweep[@]}" "$world" --agent resilient
    done
    quietly "${sweep[@]}" examples/worlds/support_desk/support_desk.ron --agent resilient
    quietly "${sweep[@]}" benches/peer/ten_calls/ten_calls.ron --agent benches/peer/ten_calls/stack.ron
    quietly "$bin/agentsim" sweep seeds/support_desk_load.ron --agent resilient --seeds "0..$((seeds / 100 + 1))" \
        --out "$scratch/out" --quiet --failures 0
    if [ -x "$bin/peer-ten-calls" ]; then
        quietly "$bin/peer-ten-calls" rust "$seeds"
    fi
    rm -rf "$scratch"
}

if [ -n "$train_only" ]; then
    train "$train_only"
    echo "the training sweeps ran with $train_only/agentsim"
    exit 0
fi

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
    echo "== adding rustup's llvm-tools component (llvm-profdata)"
    rustup component add llvm-tools
fi

packages=(-p agentsim-cli)
if $peer; then packages+=(-p agentsim-peer); fi
data="$PWD/target/pgo-data"
rm -rf "$data"

echo "== 1/3 building with counters (target/pgo-train)"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$data" \
    cargo build --profile dist "${packages[@]}" --target-dir target/pgo-train
echo "== 2/3 training: sweeps of $seeds seeds"
train target/pgo-train/dist
"$profdata" merge -o "$data/merged.profdata" "$data"
echo "== 3/3 building with the profile (target/pgo)"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$data/merged.profdata" \
    cargo build --profile dist "${packages[@]}" --target-dir target/pgo

# The same outputs as the build with counters (the plain `dist` code): PGO
# moves code, never what it computes.
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
for build in pgo-train pgo; do
    "target/$build/dist/agentsim" sweep --seeds 0..1000 --out "$check/$build" --quiet --failures 0 >/dev/null
done
if ! cmp -s "$check/pgo-train/trajectories.csv" "$check/pgo/trajectories.csv"; then
    echo "build-pgo.sh: the PGO build's trajectories differ from the plain build's: do not use it" >&2
    exit 1
fi
echo "built target/pgo/dist/agentsim (its default sweep's rows are those of the plain build)"
