#!/usr/bin/env bash
# The benchmarks of docs/benchmarks.md: builds release binaries, then runs the fleet benchmark
# (cold start, memory per object, page latency, SSE delivery, kubectl comparison) and the
# history-writer throughput benchmark. Each prints a Markdown table; the fleet benchmark also
# writes target/bench/bench.json. `--quick` runs a small version (a smoke test of the bench);
# `--pages-only` only the one-cluster page latencies (the history benchmark still runs);
# `--soak MINUTES` only the soak (churn; RSS, heap and descriptors must stay flat);
# `--probe` only the probe's round over 10,000 hosts × 2 families; `--access` only what asking
# the clusters who sees what costs (docs/benchmarks.md).
# Needs kubectl on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --bin lookout --example bench --example history_throughput
target/release/examples/bench "$@"
case " $* " in *" --soak "* | *" --probe "* | *" --access "*) exit 0 ;; esac
echo
target/release/examples/history_throughput
