#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, unit tests, and the integration tests
# (kubesim driven by kube-rs and kubectl; lookout against kubesim; sign-in against a real
# OpenID Connect provider; the lookout binary).
# Needs: the Rust toolchain, kubectl and Node.js on PATH (under CI=true a missing one fails).
# The npm packages of end2end/ (the OpenID Connect provider) are installed from the lock file
# when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d end2end/node_modules ] && command -v npm >/dev/null 2>&1; then
  echo "== npm ci (end2end)"
  npm ci --prefix end2end --no-audit --no-fund
fi

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy -D warnings"
cargo clippy --locked --all-targets -- -D warnings

echo "== cargo test"
cargo test --locked --workspace
