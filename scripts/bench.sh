#!/usr/bin/env bash
# The benchmarks of docs/benchmarks.md: builds release binaries, then runs the fleet benchmark
# (cold start, memory per object, page latency, SSE delivery, kubectl comparison) and the
# history-writer throughput benchmark. Each prints a Markdown table; the fleet benchmark also
# writes target/bench/bench.json. `--quick` runs a small version (a smoke test of the bench);
# `--pages-only` only the one-cluster page latencies (the history benchmark still runs);
# `--soak MINUTES` only the soak (churn; RSS, heap and descriptors must stay flat);
# `--probe` only the probe's round over 10,000 hosts × 2 families; `--access` only what asking
# the clusters who sees what costs; `--hundreds` only fleets of 10 to 300 clusters (with
# `--baseline BINARY`, another lookout measured side by side; `--baseline-ref GIT_REF` builds
# that binary from a commit first) (docs/benchmarks.md).
# Needs kubectl on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --bin lookout --example bench --example history_throughput
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --baseline-ref)
      # A release build of another commit, in a worktree with its own target directory.
      ref="$2"
      shift 2
      tree="target/baseline-src"
      git worktree remove --force "$tree" 2>/dev/null || true
      git worktree add --detach "$tree" "$ref"
      (cd "$tree" && CARGO_TARGET_DIR="$PWD/../baseline-target" cargo build --release --locked --bin lookout)
      args+=(--baseline "target/baseline-target/release/lookout")
      ;;
    *)
      args+=("$1")
      shift
      ;;
  esac
done
target/release/examples/bench "${args[@]}"
case " ${args[*]} " in *" --soak "* | *" --probe "* | *" --access "* | *" --hundreds "*) exit 0 ;; esac
echo
target/release/examples/history_throughput
