#!/usr/bin/env bash
# Quick start 1: install what is missing, build (release), and run the agent on the bundled config:
# it reads the example logs in examples/logs/ and serves http://127.0.0.1:9464/metrics until
# Ctrl-C. No external service is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target faultline
echo
build/release/faultline scan examples/logs/*.log || true
echo
echo "faultline run: metrics at http://127.0.0.1:9464/metrics (Ctrl-C to stop)"
exec build/release/faultline run -c config/faultline.yaml
