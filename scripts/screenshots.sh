#!/usr/bin/env bash
# Regenerates the screenshots in docs/screenshots/ from a fresh `lookout demo` with Debian's
# Chromium: light and dark, desktop and phone width, the fix previewed and applied, and a
# customer's view. `bash scripts/screenshots.sh [DIR]` writes into DIR instead.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --bin lookout
if [ ! -d end2end/node_modules ]; then (cd end2end && npm ci --no-audit --no-fund); fi
node end2end/screenshots.mjs "$@"
