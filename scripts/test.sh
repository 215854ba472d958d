#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, unit tests, and the integration tests
# (kubesim driven by kube-rs and kubectl; lookout against kubesim; the lookout binary).
# Needs: the Rust toolchain and kubectl on PATH (under CI=true a missing kubectl fails).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy -D warnings"
cargo clippy --locked --all-targets -- -D warnings

echo "== cargo test"
cargo test --locked --workspace
