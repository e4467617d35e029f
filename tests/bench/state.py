#!/usr/bin/env python3
"""State-store benchmark: what checkpoints cost and what they do to latency, beside mtail.

    cmake --preset release && cmake --build --preset release
    tests/bench/state.py                 # every part; --only latency|checkpoint|restart|throughput

Parts (each prints its figures; machines are noisy, compare within one run):
  latency     p50/p99 from write() of a matching line to the counter seen on /metrics, while a
              writer appends filler lines at 1k, 10k and 100k lines/s, checkpoints on (1000 ms).
              A probe line is written every 50 ms; /metrics is asked in a tight loop until the
              counter moves. The probe's own line is one write() of one line.
  checkpoint  milliseconds per checkpoint commit with 1,000 streams and 1,000 signatures that all
              change between checkpoints (one hit per file per second, each file its own rule),
              from faultline_checkpoint_duration_seconds, and the share of a core that is.
  restart     time from exec to /readyz 200 with 10,000 checkpointed streams, against the same
              start with no saved state.
  throughput  sustained lines/s tailing one file that another process appends as fast as it can,
              faultline (the shipped rule pack) and mtail (one counter program) each alone.

Knobs: FAULTLINE_BIN (default build/release/faultline), FAULTLINE_BENCH_DIR (/tmp/faultline-state),
--seconds per latency rate (default 10), --lines for throughput (default 1,000,000).
Exit status 0 when it ran, 2 when a process could not start.
"""
import argparse
import http.client
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("FAULTLINE_BIN", os.path.join(REPO, "build/release/faultline"))
WORK = os.environ.get("FAULTLINE_BENCH_DIR", "/tmp/faultline-state")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, timeout=5):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode("utf-8", "replace")
        c.close()
        return r.status, body
    except OSError:
        return 0, ""


def sample(metrics, series):
    for line in metrics.splitlines():
        if line.startswith(series + " "):
            return float(line[len(series) + 1:])
    return 0.0


def write_config(d, port, paths, rules, extra_source="", state=""):
    path = os.path.join(d, "faultline.yaml")
    with open(path, "w") as f:
        f.write(f"rules:\n  paths: [{rules}]\nhttp:\n  listen: 127.0.0.1:{port}\n")
        f.write("log:\n  level: warn\n")
        f.write(state)
        f.write(f"sources:\n  - id: bench\n    type: file\n    paths: [{paths}]\n")
        f.write("    start_at: beginning\n" + extra_source)
    return path


class Agent:
    def __init__(self, config, d):
        self.err = open(os.path.join(d, "faultline.err"), "ab")
        self.started = time.monotonic()
        # The descriptor limit as high as it goes: 10,000 files.
        self.proc = subprocess.Popen([BIN, "run", "-c", config], stdout=self.err, stderr=self.err,
                                     preexec_fn=lambda: os.setpgid(0, 0))

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=60)
        self.err.close()


def wait_for(pred, timeout=60, step=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


def fresh(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


# ---------------------------------------------------------------------------------------------
def writer_process(path, rate, seconds, stop_file):
    """Appends filler lines at `rate` lines/s in 10 ms batches (a child process)."""
    pid = os.fork()
    if pid:
        return pid
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        per_tick = max(1, rate // 100)
        line = b"train step 1234 loss 0.1250 lr 3.0e-04 tokens/s 51234 grad_norm 1.02 mem 61.2G\n"
        batch = line * per_tick
        start = time.monotonic()
        tick = 0
        while time.monotonic() - start < seconds and not os.path.exists(stop_file):
            os.write(fd, batch)
            tick += 1
            delay = start + tick / 100 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    finally:
        os._exit(0)


def latency(seconds):
    print("\n== latency: write() of a matching line -> counter on /metrics (checkpoints every 1 s)")
    print(f"{'lines/s':>9} {'probes':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'ckpts':>6} "
          f"{'ckpt mean ms':>13}")
    series = 'faultline_signature_matches_total{severity="error",signature="gpu.cuda.out_of_memory"}'
    for rate in (1000, 10000, 100000):
        d = fresh(f"latency-{rate}")
        port = free_port()
        log = os.path.join(d, "train.log")
        open(log, "w").close()
        config = write_config(d, port, log, os.path.join(REPO, "rules"))
        agent = Agent(config, d)
        if not wait_for(lambda: get(port, "/readyz")[0] == 200, 60):
            print("faultline did not start", file=sys.stderr)
            agent.stop()
            return 2
        stop_file = os.path.join(d, "stop")
        child = writer_process(log, rate, seconds + 1, stop_file)
        probe = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        fd = os.open(log, os.O_WRONLY | os.O_APPEND)
        samples = []
        count = sample(get(port, "/metrics")[1], series)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.05)
            t0 = time.monotonic()
            os.write(fd, probe)
            while True:
                status, body = get(port, "/metrics")
                now = sample(body, series)
                if now > count:
                    samples.append((time.monotonic() - t0) * 1000)
                    count = now
                    break
                if time.monotonic() - t0 > 5:
                    break
        os.close(fd)
        open(stop_file, "w").close()
        os.waitpid(child, 0)
        m = get(port, "/metrics")[1]
        n = sample(m, "faultline_checkpoint_duration_seconds_count")
        total = sample(m, "faultline_checkpoint_duration_seconds_sum")
        agent.stop()
        if samples:
            print(f"{rate:>9} {len(samples):>7} {pct(samples, 0.5):>8.1f} {pct(samples, 0.99):>8.1f} "
                  f"{max(samples):>8.1f} {int(n):>6} {total / n * 1000 if n else 0:>13.2f}")
    return 0


# ---------------------------------------------------------------------------------------------
def checkpoint_cost(seconds):
    streams, signatures = 1000, 1000
    print(f"\n== checkpoint cost: {streams} streams x {signatures} signatures, all changing "
          "between checkpoints (1 s)")
    d = fresh("checkpoint")
    rules = os.path.join(d, "rules")
    os.makedirs(rules)
    with open(os.path.join(rules, "bench.yaml"), "w") as f:
        docs = []
        for i in range(signatures):
            docs.append(f"id: bench.sig{i:04d}\ntitle: t\nseverity: error\ncategory: runtime\n"
                        f"match: ['failure kind {i:04d} happened']\nroot_cause: r\nfix: f\n")
        f.write("---\n".join(docs))
    logs = os.path.join(d, "logs")
    os.makedirs(logs)
    paths = [os.path.join(logs, f"f{i:04d}.log") for i in range(streams)]
    for p in paths:
        open(p, "w").close()
    port = free_port()
    config = write_config(d, port, os.path.join(logs, "*.log"), rules)
    agent = Agent(config, d)
    if not wait_for(lambda: get(port, "/readyz")[0] == 200, 60):
        print("faultline did not start", file=sys.stderr)
        agent.stop()
        return 2
    fds = [os.open(p, os.O_WRONLY | os.O_APPEND) for p in paths]
    cpu0 = agent.cpu_seconds()
    m0 = get(port, "/metrics")[1]
    n0 = sample(m0, "faultline_checkpoint_duration_seconds_count")
    s0 = sample(m0, "faultline_checkpoint_duration_seconds_sum")
    start = time.monotonic()
    second = 0
    while time.monotonic() - start < seconds:
        for i, fd in enumerate(fds):
            os.write(fd, f"failure kind {(i + second) % signatures:04d} happened\n".encode())
        second += 1
        time.sleep(max(0, start + second - time.monotonic()))
    wall = time.monotonic() - start
    m1 = get(port, "/metrics")[1]
    cpu1 = agent.cpu_seconds()
    n = sample(m1, "faultline_checkpoint_duration_seconds_count") - n0
    total = sample(m1, "faultline_checkpoint_duration_seconds_sum") - s0
    buckets = {}
    for line in m1.splitlines():
        mm = re.match(r'faultline_checkpoint_duration_seconds_bucket\{le="([^"]+)"\} (\S+)', line)
        if mm:
            buckets[mm.group(1)] = float(mm.group(2))
    for fd in fds:
        os.close(fd)
    db = os.path.join(d, "state", "faultline.db")
    size = os.path.getsize(db) + (os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0)
    agent.stop()
    if n == 0:
        print("no checkpoint was written", file=sys.stderr)
        return 2
    print(f"checkpoints {int(n)} in {wall:.1f} s; mean {total / n * 1000:.2f} ms per commit; "
          f"checkpoints take {total / wall * 100:.2f}% of a core; the agent in all "
          f"{(cpu1 - cpu0) / wall * 100:.1f}% (reading {streams} lines/s across {streams} files)")
    print("commits by duration: " + ", ".join(f"<= {k} s: {int(v)}" for k, v in buckets.items()
                                               if k in ("0.005", "0.01", "0.025", "0.05", "+Inf")))
    print(f"state file with its WAL: {size / 1024:.0f} KiB")
    return 0


# ---------------------------------------------------------------------------------------------
def restart(files=10000):
    print(f"\n== restart: exec -> /readyz 200 with {files} checkpointed streams")
    d = fresh("restart")
    logs = os.path.join(d, "logs")
    for i in range(files):
        sub = os.path.join(logs, f"d{i // 100:03d}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"f{i % 100:02d}.log"), "w") as f:
            f.write(f"line one of file {i}\nline two\n")
    port = free_port()
    config = write_config(d, port, os.path.join(logs, "**/*.log"), os.path.join(REPO, "rules"))
    lines = 'faultline_lines_total{source="bench"}'

    def timed_start(expect):
        agent = Agent(config, d)
        ready = wait_for(lambda: get(port, "/readyz")[0] == 200, 120, 0.005)
        elapsed = time.monotonic() - agent.started
        counted = wait_for(lambda: sample(get(port, "/metrics")[1], lines) == expect, 120)
        return agent, elapsed if ready else float("nan"), counted

    # The first start reads every file, checkpoints 10,000 streams at stop and fills the
    # compiled-rule cache, so that both timed starts below find the cache warm.
    agent, _, ok1 = timed_start(2 * files)
    agent.stop()
    agent, warm, ok2 = timed_start(2 * files)  # counters continue: the same total, nothing re-read
    agent.stop()
    shutil.rmtree(os.path.join(d, "state"))
    agent, cold, ok3 = timed_start(2 * files)  # no state: start_at beginning reads them all again
    agent.stop()
    print(f"no saved state: {cold:.2f} s; {files} checkpointed streams: {warm:.2f} s "
          f"(aim <= 2 s); counts exact after the restart: {ok1 and ok2 and ok3}")
    return 0


# ---------------------------------------------------------------------------------------------
def throughput(lines):
    print(f"\n== throughput: {lines} lines appended as fast as possible, each tool alone")
    d = fresh("throughput")
    data = os.path.join(d, "data.log")
    gen = os.path.join(os.path.dirname(REPO), "shared", "bench", "gen_log.py")
    if os.path.exists(gen):
        subprocess.run([sys.executable, gen, "--size", str(lines * 120), "--seed", "7"],
                       stdout=open(data, "wb"), check=True)
        with open(data, "rb") as f:
            body = f.read()
        cut = body.split(b"\n")[:lines]
        body = b"\n".join(cut) + b"\n"
        with open(data, "wb") as f:
            f.write(body)
    else:
        with open(data, "wb") as f:
            for i in range(lines):
                f.write(f"train step {i} loss 0.125 lr 3e-4 tokens/s 51234\n".encode())
    n = sum(1 for _ in open(data, "rb"))
    size = os.path.getsize(data)

    def feed(log):
        with open(data, "rb") as src, open(log, "ab") as dst:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                dst.write(chunk)
                dst.flush()

    results = []
    one_rule = os.path.join(d, "one-rule")
    os.makedirs(one_rule, exist_ok=True)
    with open(os.path.join(one_rule, "oom.yaml"), "w") as f:
        f.write("id: bench.oom\ntitle: t\nseverity: error\ncategory: memory\n"
                "match: ['CUDA out of memory']\nroot_cause: r\nfix: f\n")
    for name, rules in (("faultline (full pack)", os.path.join(REPO, "rules")),
                        ("faultline (1 rule)", one_rule)):
        sub = fresh(os.path.join("throughput", name.split()[1].strip("()")))
        log = os.path.join(sub, "fl.log")
        open(log, "w").close()
        port = free_port()
        config = write_config(sub, port, log, rules)
        agent = Agent(config, sub)
        if not wait_for(lambda: get(port, "/readyz")[0] == 200, 120):
            print("faultline did not start", file=sys.stderr)
            agent.stop()
            return 2
        cpu0 = agent.cpu_seconds()
        t0 = time.monotonic()
        feed(log)
        done = wait_for(
            lambda: sample(get(port, "/metrics")[1], 'faultline_lines_total{source="bench"}') >= n,
            600, 0.02)
        t = time.monotonic() - t0
        cpu = agent.cpu_seconds() - cpu0
        agent.stop()
        results.append((name, t if done else float("nan"), cpu))
    # mtail
    if shutil.which("mtail"):
        progs = os.path.join(d, "progs")
        os.makedirs(progs, exist_ok=True)
        with open(os.path.join(progs, "lines.mtail"), "w") as f:
            f.write("counter lines_total\ncounter oom_total\n/$/ {\n  lines_total++\n}\n"
                    "/CUDA out of memory/ {\n  oom_total++\n}\n")
        log = os.path.join(d, "mt.log")
        open(log, "w").close()
        mport = free_port()
        err = open(os.path.join(d, "mtail.err"), "wb")
        mt = subprocess.Popen(["mtail", "--progs", progs, "--logs", log, "--address", "127.0.0.1",
                               "--port", str(mport), "--logtostderr"], stdout=err, stderr=err)
        wait_for(lambda: get(mport, "/metrics")[0] == 200, 30)
        time.sleep(1)

        def mtail_cpu():
            with open(f"/proc/{mt.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        cpu0 = mtail_cpu()
        t0 = time.monotonic()
        feed(log)

        def mtail_count():
            body = get(mport, "/metrics")[1]
            for line in body.splitlines():
                if line.startswith("lines_total{") or line.startswith("lines_total "):
                    return float(line.split()[-1])
            return 0

        done = wait_for(lambda: mtail_count() >= n, 600, 0.02)
        t = time.monotonic() - t0
        cpu = mtail_cpu() - cpu0
        mt.send_signal(signal.SIGTERM)
        mt.wait(timeout=30)
        results.append(("mtail (1 counter + 1 regex)", t if done else float("nan"), cpu))
    else:
        print("mtail not installed (Debian package mtail, scripts/install-deps.sh): no peer figure")
    print(f"{n} lines, {size / 1e6:.0f} MB")
    for name, t, cpu in results:
        print(f"{name:<28} {n / t:>12,.0f} lines/s wall   {n / cpu if cpu else 0:>12,.0f} lines/s "
              f"per CPU second   ({t:.2f} s)")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["latency", "checkpoint", "restart", "throughput"])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--lines", type=int, default=1000000)
    args = ap.parse_args()
    if not os.access(BIN, os.X_OK):
        print(f"state.py: {BIN} not found; cmake --preset release && cmake --build --preset release",
              file=sys.stderr)
        return 2
    os.makedirs(WORK, exist_ok=True)
    rc = 0
    if args.only in (None, "latency"):
        rc |= latency(args.seconds)
    if args.only in (None, "checkpoint"):
        rc |= checkpoint_cost(args.seconds)
    if args.only in (None, "restart"):
        rc |= restart()
    if args.only in (None, "throughput"):
        rc |= throughput(args.lines)
    return rc


if __name__ == "__main__":
    sys.exit(main())
