#!/usr/bin/env bash
# Regenerates docs/operators.md from the op registry (tests/test_exporter.cpp fails while they differ).
# usage: scripts/gen-operators-doc.sh [BUILD_DIR]   (default: build; builds the paraproof target first)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
cmake --build "$build" --target paraproof
"$build/app/paraproof" ops --markdown > "$root/docs/operators.md.tmp"
mv "$root/docs/operators.md.tmp" "$root/docs/operators.md"
echo "wrote docs/operators.md"
