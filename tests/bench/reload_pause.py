#!/usr/bin/env python3
"""Reload pause over a network source: the longest stall in ingestion while the agent reloads.

One TCP sender streams lines at a steady rate into `faultline run` (bundled pack plus one extra
rule file); a poller reads faultline_lines_total{source="net"} from /metrics as fast as it can.
A stall is the time from the first poll that saw a count to the first poll that saw a larger one.
First a quiet phase with no reload (the control: what polling and scheduling alone show), then
--reloads SIGHUPs, each after rewriting the extra rule file with a new pattern, so every reload
loads and compiles a new rule set (off the loop) and swaps it in (on the loop). Prints the
longest and p99 stall of both phases, the reloads that succeeded, and whether every line was
counted.

Usage: tests/bench/reload_pause.py [--rate LINES_PER_S] [--reloads N]
Knobs: FAULTLINE_BIN (default build/release/faultline), FAULTLINE_BENCH_DIR (/tmp/faultline-reload).
Exit status 0 when it ran and counted every line, 1 when a count was wrong, 2 when it could not
start.
"""
import argparse
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("FAULTLINE_BIN", os.path.join(REPO, "build/release/faultline"))
WORK = os.environ.get("FAULTLINE_BENCH_DIR", "/tmp/faultline-reload")
LINES = 'faultline_lines_total{source="net"}'
RELOADS = 'faultline_config_reloads_total{result="success"}'


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics(conn):
    conn.request("GET", "/metrics")
    return conn.getresponse().read().decode("utf-8", "replace")


def sample(text, series):
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line[len(series) + 1:])
    return 0.0


def write_extra_rule(path, n):
    with open(path + ".tmp", "w") as f:
        f.write(f"id: bench.reload_{n}\ntitle: reload marker {n}\nseverity: warning\n"
                f"category: runtime\nmatch: ['RELOADMARKER{n}X']\nroot_cause: r\nfix: f\n")
    os.replace(path + ".tmp", path)


def stalls(samples, start, end):
    """Durations (s) during [start, end) in which the count did not grow."""
    out = []
    since = None
    last = None
    for t, count in samples:
        if t < start or t >= end:
            continue
        if last is None or count > last:
            if since is not None:
                out.append(t - since)
            since, last = t, count
    return sorted(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=20000, help="lines per second (default 20000)")
    ap.add_argument("--reloads", type=int, default=10)
    args = ap.parse_args()
    if not os.access(BIN, os.X_OK):
        print(f"reload_pause.py: {BIN} not found; cmake --preset release && "
              "cmake --build --preset release", file=sys.stderr)
        return 2
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(os.path.join(WORK, "extra"))
    extra = os.path.join(WORK, "extra", "reload.yaml")
    write_extra_rule(extra, 0)
    http_port, tcp_port = free_port(), free_port()
    config = os.path.join(WORK, "faultline.yaml")
    with open(config, "w") as f:
        f.write(f"rules:\n  paths: [{os.path.join(REPO, 'rules')}, {os.path.dirname(extra)}]\n"
                f"http:\n  listen: 127.0.0.1:{http_port}\nlog:\n  level: warn\n"
                f"state:\n  dir: {os.path.join(WORK, 'state')}\n"
                f"sources:\n  - {{id: net, type: tcp, listen: '127.0.0.1:{tcp_port}'}}\n")
    err = open(os.path.join(WORK, "faultline.err"), "wb")
    agent = subprocess.Popen([BIN, "run", "-c", config], stdout=err, stderr=err)
    conn = None
    for _ in range(2000):
        try:
            candidate = http.client.HTTPConnection("127.0.0.1", http_port, timeout=5)
            candidate.request("GET", "/readyz")
            answer = candidate.getresponse()
            answer.read()
            if answer.status == 200:
                conn = candidate
                break
        except OSError:
            pass
        time.sleep(0.01)
    if conn is None:
        print("reload_pause.py: the agent did not answer", file=sys.stderr)
        agent.kill()
        return 2

    sender = socket.create_connection(("127.0.0.1", tcp_port))
    sent = [0]
    stop = threading.Event()

    def send():
        chunk = max(1, args.rate // 1000)  # one write per millisecond
        t0 = time.monotonic()
        while not stop.is_set():
            due = int((time.monotonic() - t0) * args.rate)
            if sent[0] >= due:
                time.sleep(0.0005)
                continue
            n = min(chunk, due - sent[0])
            sender.sendall(b"".join(b"step %d loss 0.25\n" % (sent[0] + i) for i in range(n)))
            sent[0] += n

    samples = []

    def poll():
        while not stop.is_set():
            samples.append((time.monotonic(), sample(metrics(conn), LINES)))

    threads = [threading.Thread(target=send), threading.Thread(target=poll)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    quiet_start = time.monotonic()
    time.sleep(3.0)
    quiet_end = reload_start = time.monotonic()
    for n in range(1, args.reloads + 1):
        write_extra_rule(extra, n)
        agent.send_signal(signal.SIGHUP)
        time.sleep(1.0)
    reload_end = time.monotonic()
    stop.set()
    for t in threads:
        t.join()
    sender.close()
    polls = len(samples)
    expected = sent[0]
    deadline = time.monotonic() + 20
    counted = 0
    while time.monotonic() < deadline:
        text = metrics(conn)
        counted = sample(text, LINES)
        if counted >= expected:
            break
        time.sleep(0.05)
    # Reloads asked for while one compiles are merged into the next: wait until the counts of
    # applied and rejected reloads stay the same for 3 s.
    reloaded = failed = 0.0
    stable_since, last = time.monotonic(), None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = metrics(conn)
        reloaded = sample(text, RELOADS)
        failed = sample(text, RELOADS.replace("success", "failure"))
        if (reloaded, failed) != last:
            stable_since, last = time.monotonic(), (reloaded, failed)
        elif reloaded + failed > 0 and time.monotonic() - stable_since > 3:
            break
        time.sleep(0.1)
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=20)

    def describe(values):
        if not values:
            return "no samples"
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        return f"longest {values[-1] * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"

    quiet = stalls(samples, quiet_start, quiet_end)
    during = stalls(samples, reload_start, reload_end)
    print(f"faultline {BIN}: {args.rate} lines/s over one TCP connection, "
          f"{polls} polls of /metrics ({polls / (reload_end - quiet_start + 1):.0f}/s)")
    print(f"  no reload (3 s):            stall {describe(quiet)}")
    print(f"  {args.reloads} reloads (SIGHUP, new rule set each): stall {describe(during)}; "
          f"{reloaded:.0f} applied, {failed:.0f} rejected")
    print(f"  lines sent {expected}, counted {counted:.0f}: "
          f"{'exact' if counted == expected else 'WRONG'}")
    return 0 if counted == expected and reloaded > 0 and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
