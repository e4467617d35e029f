#!/usr/bin/env bash
# Cost of discovery (unrecognised errors, agent/discover/) on the common path: `faultline scan`
# with the shipped pack on the generated benchmark log, discovery on (the default) and off
# (--no-discover), in the same run.
#
# What it does:
#   - generates the benchmark log of SIZE (default 200M, ../shared/bench/gen_log.py, seed 42)
#     once under FAULTLINE_BENCH_DIR (the same cache as run.sh);
#   - runs, ROUNDS times each (default 5), interleaved so that machine noise hits both alike:
#       on:   faultline scan --rules rules --format json LOG
#       off:  faultline scan --rules rules --format json --no-discover LOG
#   - checks that both report the same findings (discovery must never change them) and prints
#     the unrecognised templates found;
#   - prints for each the best and median wall time, CPU time (user + system), MB/s and lines/s
#     (of the best wall time), and on/off ratios of the medians.
#
# How to run it (needs the release build and python3):
#   cmake --preset release && cmake --build --preset release
#   tests/bench/discover.sh
# Knobs: FAULTLINE_BIN (default build/release/faultline), FAULTLINE_BENCH_DIR (default
# /tmp/faultline-bench), FAULTLINE_BENCH_SIZE (200M), FAULTLINE_DISCOVER_ROUNDS (5).
# Exit status: 0 when it ran and the findings agreed; 1 when they did not; 2 when it could not run.
set -uo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "$0")/../.." && pwd)
shared=$repo/../shared/bench
bin=${FAULTLINE_BIN:-$repo/build/release/faultline}
work=${FAULTLINE_BENCH_DIR:-/tmp/faultline-bench}
size=${FAULTLINE_BENCH_SIZE:-200M}
rounds=${FAULTLINE_DISCOVER_ROUNDS:-5}

note() { printf '%s\n' "$*" >&2; }
[ -x "$bin" ] || { note "discover.sh: no $bin (cmake --preset release && cmake --build --preset release)"; exit 2; }
command -v python3 >/dev/null || { note "discover.sh: python3 is needed"; exit 2; }
mkdir -p "$work" || exit 2

log=$work/log_$size.log
if [ ! -s "$log" ]; then
  note "generating $log ..."
  python3 "$shared/gen_log.py" --size "$size" --seed 42 -o "$log.tmp" && mv "$log.tmp" "$log" ||
    { rm -f "$log.tmp"; note "discover.sh: cannot generate the log"; exit 2; }
fi
bytes=$(stat -c %s "$log")
lines=$(wc -l < "$log")
cat "$log" > /dev/null  # into the page cache

# Runs "$@" under bash's `time` and prints "wall cpu" (cpu: user + system).
measure() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" ; } 2>&1 >/dev/null | tail -1 | awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }'
}
run_on() { "$bin" scan --rules "$repo/rules" --format json "$log" > "$work/discover_on.json"; }
run_off() { "$bin" scan --rules "$repo/rules" --format json --no-discover "$log" > "$work/discover_off.json"; }

declare -A walls cpus
for ((r = 1; r <= rounds; r++)); do
  for kind in on off; do
    read -r wall cpu < <(measure "run_$kind")
    note "round $r discovery $kind: ${wall} s wall, ${cpu} s CPU"
    walls[$kind]+="$wall "
    cpus[$kind]+="$cpu "
  done
done

python3 - "$work/discover_on.json" "$work/discover_off.json" <<'EOF' || exit 1
import json, sys
on, off = (json.load(open(p)) for p in sys.argv[1:3])
strip = lambda doc: [f for f in doc.get("findings", [])]
if strip(on) != strip(off):
    print("discover.sh: findings differ with discovery on and off", file=sys.stderr)
    sys.exit(1)
print(f"findings: {len(strip(on))} (the same with discovery off)")
unrecognised = on.get("unrecognised", [])
print(f"unrecognised templates: {len(unrecognised)}")
for t in unrecognised:
    print(f"  {t['count']:>6}  {t['template'][:100]}")
EOF

python3 - "$bytes" "$lines" "${walls[on]}" "${cpus[on]}" "${walls[off]}" "${cpus[off]}" <<'EOF'
import statistics, sys
size, lines = int(sys.argv[1]), int(sys.argv[2])
runs = {k: (list(map(float, w.split())), list(map(float, c.split())))
        for k, w, c in (("on", sys.argv[3], sys.argv[4]), ("off", sys.argv[5], sys.argv[6]))}
print(f"log: {size / 2**20:.0f} MiB, {lines} lines; {len(runs['on'][0])} rounds each, interleaved")
print(f"{'discovery':<10} {'best s':>8} {'median s':>9} {'median cpu s':>13} {'MB/s':>8} {'lines/s':>11}")
med = {}
for k, (w, c) in runs.items():
    best = min(w)
    med[k] = (statistics.median(w), statistics.median(c))
    print(f"{k:<10} {best:>8.3f} {med[k][0]:>9.3f} {med[k][1]:>13.3f} "
          f"{size / 2**20 / best:>8.1f} {lines / best:>11.0f}")
print(f"on/off, median wall: {med['on'][0] / med['off'][0]:.3f}; median CPU: "
      f"{med['on'][1] / med['off'][1]:.3f}")
EOF
