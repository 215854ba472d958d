#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, unit tests, the integration tests
# (kubesim driven by kube-rs and kubectl; lookout against kubesim; sign-in against a real
# OpenID Connect provider; the lookout binary) and the browser journeys (end2end/).
# Needs: the Rust toolchain, kubectl, Node.js and Debian's chromium (under CI=true a missing
# one fails; otherwise the journeys are skipped with a note).
# The npm packages of end2end/ (the OpenID Connect provider) are installed from the lock file
# when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d end2end/node_modules ] && command -v npm >/dev/null 2>&1; then
  echo "== npm ci (end2end)"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix end2end --no-audit --no-fund
fi

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy -D warnings"
cargo clippy --locked --all-targets -- -D warnings

echo "== cargo test"
cargo test --locked --workspace

echo "== browser journeys (Playwright + Chromium, end2end/)"
if [ -x "${CHROMIUM:-/usr/bin/chromium}" ] && [ -d end2end/node_modules ]; then
  # The binary `cargo test` built above (same features as the tests): a plain `cargo build`
  # would resolve features without the dev-dependencies and compile much of the tree again.
  cargo test --locked --workspace --no-run --quiet
  (cd end2end && npx playwright test)
elif [ -n "${CI:-}" ]; then
  echo "Chromium (/usr/bin/chromium) or end2end/node_modules is missing" >&2
  exit 1
else
  echo "skipped: install Debian's chromium package (and npm) to run them"
fi
