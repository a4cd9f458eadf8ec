#!/usr/bin/env bash
# The README's main job: install deps, build, verify a bundled example plan, and open it in the inspector
# when a display is available.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
PLAN=${1:-resources/examples/linear-dp2.json}
set +e
build/app/paraproof verify "$PLAN" --json build/demo-report.json
code=$?
set -e
echo "paraproof verify exited with $code (0 equivalent, 1 not equivalent, 2 invalid, 3 inconclusive)"
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" && -x build/app/paraproof-inspector ]]; then
  build/app/paraproof-inspector "$PLAN" &
fi
exit "$code"
