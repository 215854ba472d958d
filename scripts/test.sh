#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, unit tests, the integration tests
# (kubesim driven by kube-rs and kubectl; lookout against kubesim; sign-in against a real
# OpenID Connect provider; the lookout binary) and the browser journeys (end2end/).
#
# On a fresh machine it first installs what the tests need and is missing: kubectl
# (Debian's kubernetes-client), umoci (the image test), promtool (Debian's prometheus: the
# alerts' unit tests), PostgreSQL (Debian's postgresql: the tests start their own server
# from its programs, no system service) and Chromium (Debian's chromium) through apt, and the npm packages of
# end2end/ (the OpenID Connect provider, Playwright, axe-core) from their lock
# file, without downloading a browser. Installing needs root (or sudo) and Debian's
# registry; when it cannot be done the script says so, and under CI=true it fails rather
# than skip anything.
set -euo pipefail
cd "$(dirname "$0")/.."

ci() { [ "${CI:-}" = "true" ]; }

# apt-get as root, or through sudo when there is one; false when neither is possible.
apt_install() {
  local runner=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || return 1
    runner=(sudo)
  fi
  if [ -z "${APT_UPDATED:-}" ]; then
    "${runner[@]}" apt-get update -qq || return 1
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive "${runner[@]}" apt-get install -y -qq "$@"
}

if ! command -v kubectl >/dev/null 2>&1; then
  echo "== kubectl not found; installing Debian's kubernetes-client"
  apt_install kubernetes-client || echo "could not install kubectl (needs root or sudo and apt)" >&2
fi

if ! command -v umoci >/dev/null 2>&1; then
  echo "== umoci not found; installing Debian's umoci (the image test builds an OCI image)"
  apt_install umoci || echo "could not install umoci (needs root or sudo and apt)" >&2
fi

if ! command -v promtool >/dev/null 2>&1; then
  echo "== promtool not found; installing Debian's prometheus (promtool evaluates the alerts)"
  apt_install --no-install-recommends prometheus || echo "could not install promtool (needs root or sudo and apt)" >&2
fi

if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && [ -z "${LOOKOUT_PG_BIN:-}" ]; then
  echo "== PostgreSQL not found; installing Debian's postgresql (the store's tests run on both engines)"
  apt_install --no-install-recommends postgresql || echo "could not install postgresql (needs root or sudo and apt)" >&2
fi

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then
  echo "== Chromium not found at $CHROMIUM; installing Debian's chromium"
  apt_install chromium || echo "could not install chromium (needs root or sudo and apt)" >&2
fi

if [ ! -d end2end/node_modules ] && command -v npm >/dev/null 2>&1; then
  echo "== npm ci (end2end)"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix end2end --no-audit --no-fund
fi

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy -D warnings"
cargo clippy --locked --all-targets -- -D warnings

echo "== cargo test"
# Under CI=true the kubectl tests fail when kubectl is missing instead of skipping.
cargo test --locked --workspace

echo "== benchmark smoke run (bench --quick, history_throughput)"
# The benchmark command must keep completing: every step is bounded and fails with its
# reason (a refused stream, a step that hangs). No timing target is asserted here — these
# are debug builds; docs/benchmarks.md holds release numbers from scripts/bench.sh.
cargo test --locked --workspace --no-run --quiet
target/debug/examples/bench --quick --lookout target/debug/lookout --json target/bench/quick.json >target/bench-quick.log 2>&1 || {
  cat target/bench-quick.log >&2
  echo "the quick benchmark failed (its output above)" >&2
  exit 1
}
echo "bench --quick completed: $(grep -c '^| ' target/bench-quick.log) table rows (target/bench-quick.log)"
target/debug/examples/bench --access --quick --lookout target/debug/lookout >target/bench-access.log 2>&1 || {
  cat target/bench-access.log >&2
  echo "the quick access-review benchmark failed (its output above)" >&2
  exit 1
}
echo "bench --access --quick completed: $(grep -c '^| ' target/bench-access.log) table rows"
# The fleet-of-hundreds bench, small, against itself as the baseline (both paths run).
target/debug/examples/bench --hundreds --quick --lookout target/debug/lookout --baseline target/debug/lookout --json target/bench/quick.json >target/bench-hundreds.log 2>&1 || {
  cat target/bench-hundreds.log >&2
  echo "the quick fleet-of-hundreds benchmark failed (its output above)" >&2
  exit 1
}
echo "bench --hundreds --quick completed: $(grep -c '^| ' target/bench-hundreds.log) table rows, plot $(test -s target/bench/hundreds.svg && echo written)"
target/debug/examples/history_throughput 5000

echo "== browser journeys (Playwright + Chromium, end2end/)"
if [ -x "$CHROMIUM" ] && [ -d end2end/node_modules ]; then
  # The binary `cargo test` built above (same features as the tests): a plain `cargo build`
  # would resolve features without the dev-dependencies and compile much of the tree again.
  cargo test --locked --workspace --no-run --quiet
  (cd end2end && npx playwright test)
elif ci; then
  echo "Chromium ($CHROMIUM) or end2end/node_modules is missing" >&2
  exit 1
else
  echo "skipped: Chromium or the npm packages could not be installed (see above)"
fi
