#!/usr/bin/env bash
# /metrics latency under idle connections: `faultline run` and mtail (the peer), in one run.
#
# What it measures: for each server, FAULTLINE_BENCH_SCRAPES scrapes of /metrics, each on a fresh
# connection (connect, GET with Connection: close, read to EOF), first with no other connection
# open, then while FAULTLINE_BENCH_IDLE connections that never send a byte are held open by the
# client (tests/bench/http_idle_client.cc). Both servers run on loopback with the same tiny,
# quiet log: faultline with the bundled rule pack and its default HTTP settings (128 connections,
# 16 per client, oldest idle evicted), mtail with a one-line program.
#
# How to run it (needs the release build with its tests target http_idle_client, python3, mtail):
#   cmake --preset release && cmake --build --preset release --target faultline http_idle_client
#   tests/bench/http_idle.sh
# Knobs: FAULTLINE_BIN (build/release/faultline), FAULTLINE_BENCH_CLIENT (http_idle_client next to
# FAULTLINE_BIN), FAULTLINE_BENCH_SCRAPES (500), FAULTLINE_BENCH_IDLE (1000), MTAIL (mtail),
# FAULTLINE_BENCH_BASELINE (another faultline binary, e.g. one built before a change, measured as
# a third server).
#
# What the figures mean: ok = scrapes answered 200 within 5 s; p50/p99/max in milliseconds over
# the ok scrapes, from connect() to EOF; a failed scrape makes max 5000. Loopback latency is
# dominated by the servers' own work per request (faultline serialises its registry, mtail its
# store), so compare the idle rows with the 0 rows of the same server, and servers as ratios in
# one run; a shared machine moves single figures by +-30%.
# Exit status: 0 when the benchmark ran (a missing mtail is reported and skipped); 2 when
# faultline, the client or python3 is missing or a server does not come up.
set -uo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${FAULTLINE_BIN:-$repo/build/release/faultline}
client=${FAULTLINE_BENCH_CLIENT:-$(dirname "$bin")/http_idle_client}
scrapes=${FAULTLINE_BENCH_SCRAPES:-500}
idle=${FAULTLINE_BENCH_IDLE:-1000}
mtail=${MTAIL:-mtail}
baseline=${FAULTLINE_BENCH_BASELINE:-}
note() { printf '%s\n' "$*" >&2; }

for tool in "$bin" "$client"; do
  [ -x "$tool" ] || { note "missing $tool (build the release preset: see the top of $0)"; exit 2; }
done
command -v python3 >/dev/null || { note "python3 is needed to pick free ports"; exit 2; }

work=$(mktemp -d /tmp/faultline-http-idle.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# Both servers and the client may hold a thousand sockets and more.
ulimit -n "$(ulimit -Hn)"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until `port` answers /metrics with 200.
wait_ready() {
  local port=$1
  for _ in $(seq 100); do
    local out
    out=$("$client" 127.0.0.1 "$port" /metrics 1 0 2>/dev/null)
    [[ $out == *" ok=1 "* ]] && return 0
    sleep 0.1
  done
  return 1
}

printf 'bench started\n' >"$work/app.log"

start_faultline() {  # name binary -> sets port
  local name=$1 binary=$2
  port=$(free_port)
  cat >"$work/$name.yaml" <<EOF
rules:
  paths: [$repo/rules]
http:
  listen: 127.0.0.1:$port
sources:
  - id: bench
    type: file
    paths: ["$work/app.log"]
EOF
  "$binary" run -c "$work/$name.yaml" 2>"$work/$name.log" &
  pids+=($!)
  wait_ready "$port" || { note "$name did not come up:"; tail -5 "$work/$name.log" >&2; exit 2; }
}

rows=()
measure() {  # name port
  local name=$1 port=$2
  while read -r line; do
    rows+=("$name $line")
  done < <("$client" 127.0.0.1 "$port" /metrics "$scrapes" "$idle")
}

start_faultline faultline "$bin"
measure faultline "$port"

if [ -n "$baseline" ]; then
  start_faultline baseline "$baseline"
  measure baseline "$port"
fi

if command -v "$mtail" >/dev/null; then
  mkdir -p "$work/progs"
  printf 'counter lines_total\n/$/ {\n  lines_total++\n}\n' >"$work/progs/lines.mtail"
  port=$(free_port)
  "$mtail" --progs "$work/progs" --logs "$work/app.log" --address 127.0.0.1 --port "$port" \
    --logtostderr 2>"$work/mtail.log" &
  pids+=($!)
  if wait_ready "$port"; then
    measure mtail "$port"
  else
    note "mtail did not come up:"; tail -5 "$work/mtail.log" >&2
  fi
else
  note "mtail not found: its rows are skipped"
fi

printf '%-10s %6s %8s %6s %9s %9s %9s\n' server idle scrapes ok p50_ms p99_ms max_ms
for row in "${rows[@]}"; do
  # "name idle=N scrapes=S ok=K p50_ms=A p99_ms=B max_ms=C"
  read -r name rest <<<"$row"
  set -- ${rest//=/ }
  printf '%-10s %6s %8s %6s %9s %9s %9s\n' "$name" "$2" "$4" "$6" "$8" "${10}" "${12}"
done
