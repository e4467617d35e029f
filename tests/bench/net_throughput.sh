#!/usr/bin/env bash
# TCP ingestion benchmark: lines per second that `faultline run` reads, frames, matches and
# counts from one TCP sender and from 100 concurrent senders, beside rsyslog receiving the same
# bytes the same way in the same run (when rsyslogd is installed), and from a file source
# following a file the same bytes are appended to (the agent's own peer, same run).
#
# What it does:
#   - generates LINES lines once (default 2,000,000 lines of about 80 bytes; every 100th is a
#     `CUDA out of memory` line), as one file and as SENDERS slices (default 100);
#   - faultline: `faultline run` with one `type: tcp` source and a one-rule pack (the match is
#     the same substring rsyslog filters on). One sender: `nc -N` sends the whole file; 100
#     senders: 100 `nc -N` at once, one slice each. The clock runs from the first byte sent until
#     /metrics shows every line (faultline_lines_total) and every hit counted;
#   - rsyslog (the peer: a log receiver Debian ships; Fluent Bit and Vector are not in Debian and
#     mtail has no TCP input): `rsyslogd -n` with imtcp, a `contains` filter on the same
#     substring writing hits to one file, and every message written to another, both on tmpfs
#     (/dev/shm) so the disk is not measured. The clock runs until the file of every message
#     holds every line (its size: the template writes each message as received, plus '\n');
#   - each measurement runs RUNS times (default 3); the table keeps the fastest.
# Plain lines, no syslog headers: both tools frame on LF. Loopback TCP on a shared machine is
# noisy: compare the two tools within one run, not across runs.
#
# How to run it (needs the release build, nc from netcat-openbsd, curl; rsyslog is optional):
#   apt-get install netcat-openbsd rsyslog   # rsyslog's service is not started without systemd
#   cmake --preset release && cmake --build --preset release
#   tests/bench/net_throughput.sh
# Knobs: FAULTLINE_BIN (default build/release/faultline), FAULTLINE_BENCH_DIR (default
# /dev/shm/faultline-net), FAULTLINE_NET_LINES (2000000), FAULTLINE_NET_SENDERS (100),
# FAULTLINE_NET_RUNS (3), FAULTLINE_NET_TIMEOUT (seconds per measurement, 120).
# Exit status: 0 when it ran; 1 when a tool missed lines; 2 when something needed is missing.
set -uo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${FAULTLINE_BIN:-$repo/build/release/faultline}
work=${FAULTLINE_BENCH_DIR:-/dev/shm/faultline-net}
lines=${FAULTLINE_NET_LINES:-2000000}
senders=${FAULTLINE_NET_SENDERS:-100}
runs=${FAULTLINE_NET_RUNS:-3}
timeout_s=${FAULTLINE_NET_TIMEOUT:-120}
note() { printf '%s\n' "$*" >&2; }

[ -x "$bin" ] || { note "net_throughput.sh: $bin not found; cmake --preset release && cmake --build --preset release"; exit 2; }
for tool in nc curl python3; do
  command -v $tool >/dev/null || { note "net_throughput.sh: needs $tool (nc: apt-get install netcat-openbsd)"; exit 2; }
done
have_rsyslog=0; command -v rsyslogd >/dev/null && have_rsyslog=1
[ $have_rsyslog = 1 ] || note "net_throughput.sh: rsyslogd not found: faultline only"

mkdir -p "$work/slices" "$work/rules"
data=$work/lines.log
hits=$((lines / 100))
if [ ! -s "$data" ] || [ "$(wc -l <"$data")" != "$lines" ] || [ "$(ls "$work/slices" | wc -l)" != "$senders" ]; then
  note "net_throughput.sh: generating $lines lines in $data and $senders slices"
  python3 - "$data" "$lines" "$work/slices" "$senders" <<'EOF'
import sys
path, n, slices, senders = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
out = [open(f"{slices}/s{i:03d}.log", "w") for i in range(senders)]
with open(path, "w") as whole:
    for i in range(n):
        if i % 100 == 99:
            line = f"[rank{i % 8}]: torch.OutOfMemoryError: CUDA out of memory. Tried {i}\n"
        else:
            line = f"step {i:9d} loss 0.{i % 9973:04d} lr 3e-4 tokens/s 18{i % 1000:03d} ok\n"
        whole.write(line)
        out[i * senders // n].write(line)
for f in out:
    f.close()
EOF
fi
bytes=$(stat -c %s "$data")

cat > "$work/rules/bench.yaml" <<'EOF'
id: bench.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
EOF

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }

# Sends the data: `one` (the whole file from one nc) or `many` (a slice per nc, all at once).
send() {
  local port=$1 how=$2
  if [ "$how" = one ]; then
    nc -N 127.0.0.1 "$port" <"$data" || return 1
  else
    local pids=() f
    for f in "$work"/slices/*.log; do nc -N 127.0.0.1 "$port" <"$f" & pids+=($!); done
    wait "${pids[@]}" || return 1
  fi
}

# faultline: prints the seconds from the first byte to every line and hit counted.
fl_metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v s="$2" 'index($0, s " ") == 1 { print $2 }'; }
run_faultline() {
  local how=$1 http tcp dir=$work/faultline
  http=$(free_port); tcp=$(free_port)
  rm -rf "$dir"; mkdir -p "$dir"
  # `file`: the peer within faultline, a file source following a file the bytes are appended to.
  local source="{id: net, type: tcp, listen: \"127.0.0.1:$tcp\"}"
  if [ "$how" = file ]; then
    : >"$dir/in.log"
    source="{id: net, type: file, paths: [\"$dir/in.log\"], start_at: beginning}"
  fi
  cat > "$dir/faultline.yaml" <<EOF
rules:
  paths: [$work/rules]
http:
  listen: 127.0.0.1:$http
log:
  level: warn
sources:
  - $source
EOF
  FAULTLINE_CACHE_DIR= "$bin" run -c "$dir/faultline.yaml" 2>"$dir/stderr" &
  local pid=$!
  until curl -sf "http://127.0.0.1:$http/readyz" >/dev/null; do
    kill -0 $pid 2>/dev/null || { note "faultline died: $(tail -3 "$dir/stderr")"; return 2; }
    sleep 0.05
  done
  local start end counted=0 hit=0 deadline
  start=$(now)
  if [ "$how" = file ]; then cat "$data" >>"$dir/in.log" & else send "$tcp" "$how" & fi
  local sender=$!
  deadline=$(( $(date +%s) + timeout_s ))
  while :; do
    counted=$(fl_metric "$http" 'faultline_lines_total{source="net"}')
    hit=$(fl_metric "$http" 'faultline_signature_matches_total{severity="error",signature="bench.cuda_oom"}')
    [ "${counted%.*}" = "$lines" ] && [ "${hit%.*}" = "$hits" ] && break
    [ "$(date +%s)" -gt "$deadline" ] && break
    sleep 0.01
  done
  end=$(now)
  wait $sender
  kill $pid; wait $pid 2>/dev/null
  if [ "${counted%.*}" != "$lines" ] || [ "${hit%.*}" != "$hits" ]; then
    note "faultline ($how): counted ${counted:-0} of $lines lines, ${hit:-0} of $hits hits"
    return 1
  fi
  echo "$end - $start" | bc -l
}

run_rsyslog() {
  local how=$1 tcp dir=$work/rsyslog
  tcp=$(free_port)
  rm -rf "$dir"; mkdir -p "$dir"
  cat > "$dir/rsyslog.conf" <<EOF
global(workDirectory="$dir" maxMessageSize="64k")
module(load="imtcp" maxSessions="1000")
template(name="raw" type="string" string="%rawmsg%\n")
input(type="imtcp" port="$tcp" address="127.0.0.1" ruleset="bench")
ruleset(name="bench") {
  if (\$rawmsg contains "CUDA out of memory") then {
    action(type="omfile" file="$dir/hits.log" template="raw")
  }
  action(type="omfile" file="$dir/all.log" template="raw")
}
EOF
  rsyslogd -n -f "$dir/rsyslog.conf" -i "$dir/rsyslog.pid" 2>"$dir/stderr" &
  local pid=$!
  until nc -z 127.0.0.1 "$tcp" 2>/dev/null; do
    kill -0 $pid 2>/dev/null || { note "rsyslogd died: $(tail -3 "$dir/stderr")"; return 2; }
    sleep 0.05
  done
  local start end size=0 deadline
  start=$(now)
  send "$tcp" "$how" &
  local sender=$!
  deadline=$(( $(date +%s) + timeout_s ))
  while :; do
    size=$(stat -c %s "$dir/all.log" 2>/dev/null || echo 0)
    [ "$size" -ge "$bytes" ] && break
    [ "$(date +%s)" -gt "$deadline" ] && break
    sleep 0.01
  done
  end=$(now)
  wait $sender
  kill $pid; wait $pid 2>/dev/null
  local got_hits; got_hits=$(wc -l <"$dir/hits.log" 2>/dev/null || echo 0)
  if [ "$size" -lt "$bytes" ] || [ "$got_hits" != "$hits" ]; then
    note "rsyslog ($how): wrote $size of $bytes bytes, $got_hits of $hits hits"
    return 1
  fi
  echo "$end - $start" | bc -l
}

best() {  # best TOOL HOW: the fastest of RUNS runs, in seconds
  local tool=$1 how=$2 best="" t
  for ((r = 0; r < runs; r++)); do
    t=$(run_"$tool" "$how") || return $?
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
  done
  echo "$best"
}

command -v bc >/dev/null || { note "net_throughput.sh: needs bc"; exit 2; }
status=0
printf 'net_throughput: %d lines (%.1f MiB, %d hits) over TCP on loopback, best of %d runs\n' \
  "$lines" "$(echo "$bytes / 1048576" | bc -l)" "$hits" "$runs"
printf '%-10s %-12s %10s %14s %10s\n' tool senders seconds lines/s MiB/s
tools=(faultline); [ $have_rsyslog = 1 ] && tools+=(rsyslog)
for how in one many file; do
  [ $how = file ] && tools=(faultline)
  for tool in "${tools[@]}"; do
    if t=$(best "$tool" "$how"); then
      printf '%-10s %-12s %10.2f %14.0f %10.1f\n' "$tool" \
        "$(case $how in one) echo 1 ;; many) echo "$senders" ;; *) echo "file source" ;; esac)" \
        "$t" "$(echo "$lines / $t" | bc -l)" "$(echo "$bytes / 1048576 / $t" | bc -l)"
    else
      rc=$?; [ $rc -gt $status ] && status=$rc
      printf '%-10s %-12s %10s\n' "$tool" "$how" failed
    fi
  done
done
[ $have_rsyslog = 1 ] && printf 'rsyslog: %s\n' "$(rsyslogd -v | head -1)"
printf 'faultline: %s\n' "$("$bin" --version 2>&1 | head -1)"
exit $status
