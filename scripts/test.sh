#!/usr/bin/env bash
# The README's test command: install deps, build, run every test with CTest (offscreen Qt).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export QT_QPA_PLATFORM=offscreen
ctest --test-dir build --output-on-failure --timeout 1200
