#!/usr/bin/env bash
# Throughput benchmark: faultline scan vs ripgrep (rg -c -f) vs mtail --one_shot, on the same bytes
# and the same patterns (../shared/bench, see its README).
#
# What it measures, in one run:
#   - `faultline scan --rules DIR --format json LOG` with rule packs made from
#     ../shared/bench/patterns/patterns_N.txt (one rule per pattern, N = 50, 200, 1000),
#     and with the real bundled pack (`--rules rules`) on the same log;
#   - `rg -c -f patterns_N.txt LOG` (counts matching lines) on the same log;
#   - `mtail --one_shot ... --progs DIR --logs LOG` with prog_N.mtail on a 10M log (mtail runs at
#     ~0.5-2 MB/s; it is skipped for patterns above FAULTLINE_BENCH_MTAIL_MAX, default 200);
#   - faultline's start-up cost (load + compile the rules, scan an empty file) per pattern count,
#     for the bundled pack also with an empty database cache (a first start: "cold st" row),
#     and its steady-state rate: the same scan given the log FAULTLINE_BENCH_REPEAT times (default
#     3) in one process, so start-up cancels out of the difference.
#   Each measurement runs FAULTLINE_BENCH_RUNS times (default 3; mtail: FAULTLINE_BENCH_MTAIL_RUNS,
#   default 2) after the log was read once into the page cache; the table keeps the fastest run
#   (wall time, high-resolution clock) and the highest peak RSS seen (GNU time's %M).
#
# How to run it (from anywhere; needs the release build and python3; rg, mtail and GNU time are
# optional, `scripts/install-deps.sh` installs them):
#   cmake --preset release && cmake --build --preset release
#   tests/bench/run.sh                              # 200M log for faultline and rg, 10M for mtail
#   FAULTLINE_BENCH_SIZE=1G tests/bench/run.sh      # a bigger log
# Other knobs: FAULTLINE_BIN (default build/release/faultline), FAULTLINE_BENCH_DIR (logs, rule
# folders and outputs; default /tmp/faultline-bench; logs are generated once and reused),
# FAULTLINE_BENCH_PATTERNS ("50 200 1000"), FAULTLINE_BENCH_MTAIL_SIZE (10M),
# FAULTLINE_BENCH_MTAIL_MAX (200), FAULTLINE_BENCH_MTAIL_TIMEOUT (seconds per mtail run, 900),
# FAULTLINE_BENCH_RUNS (3), FAULTLINE_BENCH_MTAIL_RUNS (2), FAULTLINE_BENCH_REPEAT (3).
#
# What the figures mean:
#   MB/s        log bytes / best wall time, MB = 2^20 bytes (gen_log.py's M). End to end: includes
#               process start-up and, for faultline, loading and compiling the rules.
#   scan MB/s   faultline only: (REPEAT - 1) x log bytes / (best wall with the log REPEAT times -
#               best wall with it once): the steady-state matching rate without start-up, which is
#               what a long-running `faultline run` sees. The "startup" rows (an empty file) show
#               the start-up itself: loading the rules and compiling them (mostly Vectorscan).
#   lines/s     `wc -l` lines of the log / best wall time (faultline also splits at bare \r, so it
#               sees more lines than this; the same figure is used for every tool).
#   cpu s       user + system CPU seconds of the fastest run (GNU time). Much less than wall s means
#               the process waited for a CPU: the machine was busy, the wall figures are inflated.
#   peak RSS    maximum resident set size of the process, in MB (2^20 bytes). rg maps the log into
#               memory, so its RSS includes the mapped (page-cache) pages of the log.
#   ratios      faultline MB/s divided by rg's (same log) and by mtail's (mtail on the small log,
#               in steady state: its start-up is small next to its run time); also faultline's
#               scan MB/s divided by rg's MB/s. Machines are noisy: compare tools within one run,
#               as ratios, and expect +-20% between runs on a shared machine.
#   matches     sum of `count` over faultline's findings vs rg's matching-line count for the same
#               patterns. A line matching k patterns is 1 for rg and k for faultline, and faultline
#               also splits tqdm lines at \r, so faultline >= rg is expected; a large gap in the
#               other direction means a pattern is matched differently. Reported, never fatal.
# Exit status: 0 when the benchmark ran (missing rg, mtail or GNU time are reported and skipped);
# 2 when faultline or python3 is missing, or a log cannot be generated.
set -uo pipefail
export LC_ALL=C   # '.' in EPOCHREALTIME and printf, byte-oriented tools

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 2
note() { printf '%s\n' "$*" >&2; }
shared=$(cd "$repo/../shared/bench" 2>/dev/null && pwd) \
  || { note "run.sh: ../shared/bench not found beside the repo"; exit 2; }

bin=${FAULTLINE_BIN:-$repo/build/release/faultline}
work=${FAULTLINE_BENCH_DIR:-/tmp/faultline-bench}
size=${FAULTLINE_BENCH_SIZE:-200M}
mtail_size=${FAULTLINE_BENCH_MTAIL_SIZE:-10M}
counts=${FAULTLINE_BENCH_PATTERNS:-50 200 1000}
runs=${FAULTLINE_BENCH_RUNS:-3}
mtail_runs=${FAULTLINE_BENCH_MTAIL_RUNS:-2}
mtail_max=${FAULTLINE_BENCH_MTAIL_MAX:-200}
mtail_timeout=${FAULTLINE_BENCH_MTAIL_TIMEOUT:-900}
repeat=${FAULTLINE_BENCH_REPEAT:-3}

if [ ! -x "$bin" ]; then
  note "run.sh: $bin not found; build it: cmake --preset release && cmake --build --preset release"
  exit 2
fi
command -v python3 >/dev/null || { note "run.sh: python3 is needed (gen_log.py, rules)"; exit 2; }
have_rg=0; command -v rg >/dev/null && have_rg=1
have_mtail=0; command -v mtail >/dev/null && have_mtail=1
have_time=0; [ -x /usr/bin/time ] && /usr/bin/time -f '%M' true >/dev/null 2>&1 && have_time=1
[ $have_rg = 1 ] || note "run.sh: rg (ripgrep) not found: skipped (scripts/install-deps.sh has it)"
[ $have_mtail = 1 ] || note "run.sh: mtail not found: skipped (scripts/install-deps.sh has it)"
[ $have_time = 1 ] || note "run.sh: GNU time (/usr/bin/time) not found: no cpu s, no peak RSS"
mkdir -p "$work" || exit 2

# --- inputs ------------------------------------------------------------------------------------

# gen_log SIZE: prints the path of the cached log, generating it first when it is not there.
gen_log() {
  local f="$work/log_$1.log"
  if [ ! -s "$f" ]; then
    note "generating $f ..."
    if ! python3 "$shared/gen_log.py" --size "$1" --seed 42 -o "$f.tmp"; then
      rm -f "$f.tmp"; return 1
    fi
    mv "$f.tmp" "$f" || return 1
  fi
  printf '%s\n' "$f"
}

# make_rules N: one multi-document YAML file, one rule per pattern (bench.fp_0000 ... like mtail's
# counters), in $work/rules_N/.
make_rules() {
  local dir="$work/rules_$1"
  rm -rf "$dir" && mkdir -p "$dir"
  python3 - "$shared/patterns/patterns_$1.txt" "$dir/bench.yaml" <<'EOF'
import sys
src, dst = sys.argv[1], sys.argv[2]
pats = [l.rstrip("\n") for l in open(src, encoding="utf-8") if l.strip()]
q = lambda s: "'" + s.replace("'", "''") + "'"   # YAML single-quoted: backslashes stay literal
docs = []
for i, p in enumerate(pats):
    docs.append(f"id: bench.fp_{i:04d}\ntitle: {q('bench pattern fp_%04d' % i)}\nseverity: error\n"
                f"category: build\nmatch:\n  - {q(p)}\nroot_cause: benchmark pattern\nfix: none\n")
open(dst, "w", encoding="utf-8").write("---\n".join(docs))
EOF
}

log=$(gen_log "$size") || { note "run.sh: cannot generate the $size log"; exit 2; }
mlog=""
if [ $have_mtail = 1 ] && ! mlog=$(gen_log "$mtail_size"); then
  note "run.sh: cannot generate the $mtail_size log: skipping mtail"
  have_mtail=0; mlog=""
fi
empty="$work/empty.log"; : >"$empty"
bytes=$(stat -c %s "$log"); lines=$(wc -l <"$log")
[ -n "$mlog" ] && { mbytes=$(stat -c %s "$mlog"); mlines=$(wc -l <"$mlog"); }

# --- measuring ---------------------------------------------------------------------------------

now() { if [ -n "${EPOCHREALTIME:-}" ]; then printf '%s\n' "$EPOCHREALTIME"; else date +%s.%N; fi; }

# measure TAG N_RUNS OK_CODES CMD...: runs CMD N_RUNS times, stdout to $work/out/TAG.out (last run),
# stderr to TAG.err. Sets BEST (best wall seconds), CPU (user + sys seconds of that run, or ""),
# RSS (max peak RSS in KiB, or "") and OK (1 when every run exited with one of OK_CODES: "0 1").
measure() {
  local tag=$1 n=$2 okc=$3; shift 3
  local out="$work/out/$tag" t0 t1 rc i m d u s
  mkdir -p "$work/out"
  BEST=""; CPU=""; RSS=""; OK=1
  for ((i = 0; i < n; i++)); do
    t0=$(now)
    if [ $have_time = 1 ]; then
      /usr/bin/time -f '%M %U %S' -o "$out.time" "$@" >"$out.out" 2>"$out.err"; rc=$?
    else
      "$@" >"$out.out" 2>"$out.err"; rc=$?
    fi
    t1=$(now)
    case " $okc " in *" $rc "*) ;; *) OK=0; note "  $tag: exit $rc (see $out.err)"; return ;; esac
    d=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
    m=""; u=""; s=""
    # GNU time puts "Command exited with non-zero status N" first.
    [ $have_time = 1 ] && read -r m u s < <(tail -n 1 "$out.time")
    if [ -z "$BEST" ] || awk -v d="$d" -v b="$BEST" 'BEGIN { exit !(d < b) }'; then
      BEST=$d; CPU=""
      [ -n "$u" ] && CPU=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
    fi
    if [ -n "$m" ] && { [ -z "$RSS" ] || [ "$m" -gt "$RSS" ]; }; then RSS=$m; fi
  done
}

rows=()                # tool|patterns|log label|bytes|lines|best s|rss KiB|cpu s
declare -A mbps        # "tool:N" -> MB/s
declare -A rssof       # "tool:N" -> RSS KiB
declare -A scan_mbps   # N -> faultline's steady-state MB/s
declare -A fl_sum rg_lines fl_small_sum mtail_sum
add_row() {  # tool n loglabel bytes lines: from the last measure
  rows+=("$1|$2|$3|$4|$5|$BEST|$RSS|$CPU")
  mbps["$1:$2"]=$(awk -v b="$4" -v t="$BEST" 'BEGIN { printf "%.1f", b / 1048576 / t }')
  rssof["$1:$2"]=$RSS
}
repeated=(); for ((i = 0; i < repeat; i++)); do repeated+=("$log"); done
# steady N RULE_ARGS...: right after measuring faultline on the log once, measures it on the log
# REPEAT times and sets scan_mbps[N].
steady() {
  local n=$1 once=$BEST; shift
  [ "$repeat" -ge 2 ] || return
  measure "faultline_x${repeat}_${n//[^a-z0-9]/_}" "$runs" "0 1" \
    "$bin" scan "$@" --format json "${repeated[@]}"
  [ $OK = 1 ] && scan_mbps[$n]=$(awk -v b="$bytes" -v r="$repeat" -v t1="$once" -v tr="$BEST" \
    'BEGIN { d = tr - t1; if (d > 0) printf "%.1f", (r - 1) * b / 1048576 / d }')
}
json_sum() {  # sum of `count` over the findings of a faultline JSON report
  python3 -c 'import json, sys
print(sum(f["count"] for f in json.load(open(sys.argv[1]))["findings"]))' "$1" 2>/dev/null \
    || echo "?"
}

note "warming the page cache ..."
cat "$log" >/dev/null; [ -n "$mlog" ] && cat "$mlog" >/dev/null

for n in $counts; do
  pat="$shared/patterns/patterns_$n.txt"
  [ -f "$pat" ] || { note "run.sh: $pat missing: skipping $n"; continue; }
  make_rules "$n" || { note "run.sh: cannot convert $pat: skipping $n"; continue; }
  rdir="$work/rules_$n"

  note "[$n patterns] faultline scan ($size) ..."
  measure "faultline_$n" "$runs" "0 1" "$bin" scan --rules "$rdir" --format json "$log"
  if [ $OK = 1 ]; then
    add_row faultline "$n" "$size" "$bytes" "$lines"
    fl_sum[$n]=$(json_sum "$work/out/faultline_$n.out")
    steady "$n" --rules "$rdir"
  fi
  measure "startup_$n" "$runs" "0 1" "$bin" scan --rules "$rdir" --format json "$empty"
  [ $OK = 1 ] && rows+=("faultline startup|$n|empty|0|0|$BEST|$RSS|$CPU")

  if [ $have_rg = 1 ]; then
    note "[$n patterns] rg -c -f ($size) ..."
    measure "rg_$n" "$runs" "0 1" rg -c -f "$pat" "$log"
    if [ $OK = 1 ]; then
      add_row rg "$n" "$size" "$bytes" "$lines"
      rg_lines[$n]=$(head -n 1 "$work/out/rg_$n.out"); rg_lines[$n]=${rg_lines[$n]:-0}
    fi
  fi

  if [ $have_mtail = 1 ] && [ "$n" -gt "$mtail_max" ]; then
    note "[$n patterns] mtail skipped: too slow above $mtail_max patterns"
    rows+=("mtail|$n|skipped: too slow (FAULTLINE_BENCH_MTAIL_MAX=$mtail_max)||||")
  elif [ $have_mtail = 1 ]; then
    mdir="$work/mtail_$n"   # mtail loads every program in a folder
    rm -rf "$mdir"; mkdir -p "$mdir"; cp "$shared/patterns/prog_$n.mtail" "$mdir/"
    note "[$n patterns] mtail --one_shot ($mtail_size) ..."
    measure "mtail_$n" "$mtail_runs" "0" timeout "$mtail_timeout" \
      mtail --one_shot --one_shot_format prometheus --logtostderr --port 0 --progs "$mdir" \
      --logs "$mlog"
    if [ $OK = 1 ]; then
      add_row mtail "$n" "$mtail_size" "$mbytes" "$mlines"
      mtail_sum[$n]=$(awk '/^fp_[0-9]+[{ ]/ { s += $NF } END { print s + 0 }' \
        "$work/out/mtail_$n.out")
      "$bin" scan --rules "$rdir" --format json "$mlog" >"$work/out/faultline_small_$n.out" \
        2>/dev/null
      fl_small_sum[$n]=$(json_sum "$work/out/faultline_small_$n.out")
    fi
  fi
done

pack_rules=$("$bin" rules list --rules rules 2>/dev/null | awk '/^[0-9]+ rules(,|$)/ { print $1 }')
pack="pack(${pack_rules:-?})"
pack_sum="?"
note "[pack] faultline scan --rules rules ($size) ..."
measure "faultline_pack" "$runs" "0 1" "$bin" scan --rules rules --format json "$log"
if [ $OK = 1 ]; then
  add_row faultline "$pack" "$size" "$bytes" "$lines"
  pack_sum=$(json_sum "$work/out/faultline_pack.out")
  steady "$pack" --rules rules
fi
measure "startup_pack" "$runs" "0 1" "$bin" scan --rules rules --format json "$empty"
[ $OK = 1 ] && rows+=("faultline startup|$pack|empty|0|0|$BEST|$RSS|$CPU")
# First start on a machine that never ran faultline: each run gets a new, empty database cache
# (mktemp costs a millisecond of the figure).
measure "cold_start_pack" "$runs" "0 1" sh -c \
  'd=$(mktemp -d "$0/cold_cache.XXXXXX") || exit 2; FAULTLINE_CACHE_DIR=$d exec "$@"' \
  "$work" "$bin" scan --rules rules --format json "$empty"
[ $OK = 1 ] && rows+=("faultline cold st|$pack|empty|0|0|$BEST|$RSS|$CPU") && cold_start=$BEST
rm -rf "$work"/cold_cache.*

# --- report ------------------------------------------------------------------------------------

fmt_rate() {
  awk -v x="$1" 'BEGIN { if (x >= 1e6) printf "%.2fM", x / 1e6
                         else if (x >= 1e3) printf "%.1fk", x / 1e3; else printf "%.1f", x }'
}
fmt_mb() { [ -n "$1" ] && awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }' || echo "-"; }
div() {  # div A B: "A/Bx", or "-" when either is unknown
  [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }' \
    || echo "-"
}
ratio() { div "${mbps[$1]:-}" "${mbps[$2]:-}"; }            # end to end
scan_ratio() { div "${scan_mbps[$1]:-}" "${mbps[rg:$1]:-}"; }  # faultline steady state vs rg

echo
echo "faultline throughput benchmark  $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "host: $(nproc) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
echo "faultline: $bin  ($("$bin" --version 2>/dev/null | head -n 1))"
if [ $have_rg = 1 ]; then echo "rg: $(rg --version | head -n 1)"; else echo "rg: not found"; fi
if [ $have_mtail = 1 ]; then
  echo "mtail: $(mtail --version 2>/dev/null | head -n 1 | awk '{ print $3 }')"
else
  echo "mtail: not found"
fi
[ $have_time = 1 ] || echo "GNU time: not found, no cpu s and peak RSS (Debian package 'time')"
printf 'log: %s  %s bytes, %s lines (wc -l)\n' "$log" "$bytes" "$lines"
[ -n "$mlog" ] && printf 'mtail log: %s  %s bytes, %s lines\n' "$mlog" "$mbytes" "$mlines"
mruns=""; [ $have_mtail = 1 ] && mruns=" (mtail: $mtail_runs)"
echo "best of $runs runs$mruns, page cache warm; peak RSS is the highest of the runs."
echo "Machines are noisy: compare tools within one run, as ratios."
echo
fmt='%-17s %-10s %-6s %8s %7s %8s %9s %12s %10s\n'
printf "$fmt" tool patterns log "wall s" "cpu s" "MB/s" "lines/s" "peak RSS MB" "scan MB/s"
for r in "${rows[@]}"; do
  IFS='|' read -r tool n lab b l t k c <<<"$r"
  if [ -z "$t" ]; then printf '%-17s %-10s %s\n' "$tool" "$n" "$lab"; continue; fi
  mb="-"; lps="-"
  if [ "$b" != 0 ]; then
    mb=$(awk -v b="$b" -v t="$t" 'BEGIN { printf "%.1f", b / 1048576 / t }')
    lps=$(fmt_rate "$(awk -v l="$l" -v t="$t" 'BEGIN { print l / t }')")
  fi
  smb="-"; [ "$tool" = faultline ] && smb=${scan_mbps[$n]:--}
  printf "$fmt" "$tool" "$n" "$lab" "$(printf '%.3f' "$t")" "${c:--}" "$mb" "$lps" \
    "$(fmt_mb "$k")" "$smb"
done

echo
printf '%-10s %15s %18s %28s\n' patterns "faultline/rg" "faultline/mtail" "faultline scan MB/s / rg"
for n in $counts; do
  printf '%-10s %15s %18s %28s\n' "$n" "$(ratio "faultline:$n" "rg:$n")" \
    "$(ratio "faultline:$n" "mtail:$n")" "$(scan_ratio "$n")"
done
mnote=""; [ $have_mtail = 1 ] && mnote=", mtail on the $mtail_size log"
echo "(MB/s ratios; faultline and rg on the $size log$mnote)"

echo
echo "matches ($size log): sum of faultline finding counts vs rg matching lines" \
  "(faultline >= rg expected)"
for n in $counts; do
  printf '  %-5s patterns: faultline %-10s rg %-10s\n' "$n" "${fl_sum[$n]:--}" "${rg_lines[$n]:--}"
done
if [ $have_mtail = 1 ]; then
  echo "matches ($mtail_size log): sum of faultline finding counts vs sum of mtail counters"
  for n in $counts; do
    [ -n "${mtail_sum[$n]:-}" ] || continue
    printf '  %-5s patterns: faultline %-10s mtail %-10s\n' "$n" "${fl_small_sum[$n]:--}" \
      "${mtail_sum[$n]}"
  done
fi
echo "bundled pack: ${pack_rules:-?} rules, sum of finding counts ${pack_sum}"
# Targets for the bundled pack: >= 400 MB/s end to end, peak RSS < 50 MB, cold first start < 2 s.
if [ -n "${mbps[faultline:$pack]:-}" ]; then
  v=("${mbps[faultline:$pack]} MB/s (target >= 400)")
  [ -n "${rssof[faultline:$pack]:-}" ] \
    && v+=("peak RSS $(fmt_mb "${rssof[faultline:$pack]}") MB (target < 50)")
  [ -n "${cold_start:-}" ] && v+=("cold-cache start $(printf '%.2f' "$cold_start") s (target < 2)")
  out=""; for x in "${v[@]}"; do out+="${out:+; }$x"; done
  echo "target for the bundled pack: $out"
fi

# Informational target at 200 patterns: >= 1.5x rg, >= 100x mtail, peak RSS < 50 MB.
if [ -n "${mbps[faultline:200]:-}" ]; then
  v=()
  r=$(ratio faultline:200 rg:200)
  [ "$r" != "-" ] && v+=("rg $r end to end, $(scan_ratio 200) steady state (target >= 1.50x)")
  r=$(ratio faultline:200 mtail:200)
  [ "$r" != "-" ] && v+=("mtail $r (target >= 100x)")
  [ -n "${rssof[faultline:200]:-}" ] \
    && v+=("peak RSS $(fmt_mb "${rssof[faultline:200]}") MB (target < 50)")
  out=""; for x in "${v[@]}"; do out+="${out:+; }$x"; done
  echo "target at 200 patterns: $out"
fi
exit 0
