#!/usr/bin/env bash
# Quick start 2: install what is missing, build (debug, -Werror), and run every test: unit tests,
# integration tests against the real binary, the rule pack's examples, and the corpus evaluation
# (which reads ../shared/corpus when it exists). Pass "asan" or "tsan" to use that preset instead.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-debug}"
scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
ctest --preset "$preset" -j"$(nproc)"
