#!/usr/bin/env bash
# The README's test command: install deps, build, run every test with CTest (offscreen Qt); then build
# again with AddressSanitizer + UndefinedBehaviorSanitizer (no inspector, to fit CI's budget) and run the
# suite there too: any memory error, leak or undefined behaviour fails (docs/hardening.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export QT_QPA_PLATFORM=offscreen
# Qt Test stops a test function after 300 s by default; a catalog row of test_microbatch_fold on a ZeRO x
# expert plan is checked at every size point, folded, unfolded and compact, and takes longer on 2 cores.
QTEST_FUNCTION_TIMEOUT=900000 ctest --test-dir build --output-on-failure --timeout 1800 --parallel "$(nproc)"

echo "test: sanitizer build (build-asan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARAPROOF_WITH_UI=OFF \
  -DPARAPROOF_SANITIZE=ON >/dev/null
cmake --build build-asan --parallel "$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Qt Test stops a test function after 300 s; under the sanitizers the heaviest functions need longer.
export QTEST_FUNCTION_TIMEOUT=1800000
# The mutation sweep, test_gen_verify, test_fold, test_microbatch_fold and test_mpi run in the plain build
# only (tests/CMakeLists.txt, PARAPROOF_PLAIN_ONLY_TESTS says why), so the sanitizer build leaves them out.
ctest --test-dir build-asan --output-on-failure --timeout 2400 --parallel "$(nproc)"
