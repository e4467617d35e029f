#!/usr/bin/env bash
# Builds the fuzz preset (clang++-14, libFuzzer, ASan and UBSan) and runs every fuzz target listed
# in build/fuzz/fuzz/targets.tsv for FUZZ_SECONDS each (default 30), starting from its checked-in
# corpus in tests/fuzz/corpus/<target>/. Fails if any target crashes, leaks, trips a sanitizer,
# spends over 10 s on one input or goes over 2 GiB. The input at fault is left in
# build/fuzz/artifacts/<target>/: once the bug is fixed, copy it into the target's corpus folder,
# where every build replays it as a test. Inputs that only add coverage go to build/fuzz/work/,
# never into the source tree. CI (.ci/run) calls this after scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${FUZZ_SECONDS:-30}"

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

# One target per core at a time: the fuzzing each target gets is the same, the wall time is
# divided by the cores (CI's budget is the whole run's wall time).
jobs="${FUZZ_JOBS:-$(nproc)}"
fuzz_one() {
  local name="$1" binary="$2" corpus="$3" max_len="$4"
  local work="build/fuzz/work/$name" artifacts="build/fuzz/artifacts/$name" log="build/fuzz/$name.log"
  mkdir -p "$work" "$artifacts"
  if "$binary" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$artifacts/" -print_final_stats=1 "$work" "$corpus" >"$log" 2>&1; then
    echo "fuzz: $name ran ${seconds}s (max_len $max_len): $(grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log" | tr '\n' ' ')"
  else
    tail -n 60 "$log"
    echo "fuzz: $name FAILED; input in $artifacts/, full log in $log"
    return 1
  fi
}

declare -A running=()
failed=()
reap() {
  local pid
  wait -n -p pid "${!running[@]}" || failed+=("${running[$pid]}")
  unset "running[$pid]"
}
while IFS=$'\t' read -r name binary corpus max_len; do
  [ "${#running[@]}" -ge "$jobs" ] && reap
  fuzz_one "$name" "$binary" "$corpus" "$max_len" &
  running[$!]="$name"
done <build/fuzz/fuzz/targets.tsv
while [ "${#running[@]}" -gt 0 ]; do reap; done

if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: every target ran ${seconds}s clean"
