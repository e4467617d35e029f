#!/usr/bin/env bash
# Pass-through cost of `faultline watch -- CMD`: wall and CPU time to pass a command's output on
# while matching it, beside tee(1), the usual way to keep a copy of a command's output, and
# beside the command alone, in the same run.
#
# What it does:
#   - generates a build-like log of MB megabytes (default 500; 100-byte lines, one in 1,000 a
#     line the shipped pack matches) once under FAULTLINE_BENCH_DIR;
#   - runs, ROUNDS times each (default 3), interleaved, with output to files:
#       alone:  cat LOG > out
#       tee:    cat LOG | tee copy > out
#       watch:  faultline watch -- cat LOG > out 2> report
#   - checks that watch's stdout is byte-identical to the log and that its report counts every
#     line; prints the best wall time and the CPU time (user + system of the whole pipeline) of
#     each, and MB/s.
#
# How to run it (needs the release build):
#   cmake --preset release && cmake --build --preset release
#   tests/bench/watch.sh
# Knobs: FAULTLINE_BIN (default build/release/faultline), FAULTLINE_BENCH_DIR (default
# /tmp/faultline-watch), FAULTLINE_WATCH_MB (500), FAULTLINE_WATCH_ROUNDS (3).
# Exit status: 0 when it ran and watch's output was exact; 1 when it was not; 2 when faultline is
# missing.
set -uo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${FAULTLINE_BIN:-$repo/build/release/faultline}
work=${FAULTLINE_BENCH_DIR:-/tmp/faultline-watch}
mb=${FAULTLINE_WATCH_MB:-500}
rounds=${FAULTLINE_WATCH_ROUNDS:-3}
note() { printf '%s\n' "$*" >&2; }

[[ -x $bin ]] || { note "no faultline at $bin (build the release preset first)"; exit 2; }
mkdir -p "$work"
log=$work/build-$mb.log
lines=$((mb * 10000))
if [[ ! -s $log ]]; then
  note "generating $log ($lines lines)"
  awk -v n="$lines" 'BEGIN {
    hit = "LINK : fatal error LNK1181: cannot open input file '\''aio.lib'\''";
    while (length(hit) < 99) hit = hit " ";
    for (i = 1; i <= n; i++) {
      if (i % 1000 == 0) { print hit } else { printf "[%8d/%8d] Building CXX object src/module_%06d.cc.o %s\n", i, n, i % 999983, "xxxxxxxxxxxxxx" }
    }
  }' > "$log"
fi
bytes=$(stat -c %s "$log")

# Runs "$@" under bash's `time` (wall, user+sys of every process) and prints "wall cpu".
measure() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" ; } 2>&1 >/dev/null | tail -1 | awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }'
}
run_alone() { cat "$log" > "$work/out"; }
run_tee() { cat "$log" | tee "$work/copy" > "$work/out"; }
run_watch() { "$bin" watch -- cat "$log" > "$work/out" 2> "$work/report"; }

declare -A best_wall best_cpu
for kind in alone tee watch; do best_wall[$kind]=999999; best_cpu[$kind]=999999; done
for ((r = 1; r <= rounds; r++)); do
  for kind in alone tee watch; do
    read -r wall cpu < <(measure "run_$kind")
    note "round $r $kind: ${wall} s wall, ${cpu} s CPU"
    awk -v a="$wall" -v b="${best_wall[$kind]}" 'BEGIN { exit !(a < b) }' && best_wall[$kind]=$wall
    awk -v a="$cpu" -v b="${best_cpu[$kind]}" 'BEGIN { exit !(a < b) }' && best_cpu[$kind]=$cpu
    if [[ $kind == watch ]]; then
      cmp -s "$log" "$work/out" || { note "watch: stdout differs from the log"; exit 1; }
      grep -q "($lines lines)" "$work/report" || { note "watch: report does not count $lines lines"; cat "$work/report" >&2; exit 1; }
    fi
  done
done
printf '%-6s %10s %10s %10s\n' "" "wall s" "CPU s" "MB/s"
for kind in alone tee watch; do
  awk -v k="$kind" -v w="${best_wall[$kind]}" -v c="${best_cpu[$kind]}" -v b="$bytes" \
    'BEGIN { printf "%-6s %10.3f %10.3f %10.0f\n", k, w, c, b / 1e6 / w }'
done
grep -m1 "signature:" "$work/report" >&2
