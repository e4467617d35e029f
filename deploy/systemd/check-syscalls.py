#!/usr/bin/env python3
"""Does the unit's SystemCallFilter= let the agent work? systemd kills a service with SIGSYS (or
fails the call with SystemCallErrorNumber=) on the first system call outside its filter, and
`systemd-analyze verify` cannot know which calls the agent makes. This runs the agent under strace
through what the service does (`faultline check`, then `faultline run`: load the pack, tail a log
and match failures, answer /metrics, /readyz and /healthz, SIGHUP, stop on SIGTERM) and fails if a
call it made is outside the filter of deploy/systemd/faultline.service, as systemd-analyze
expands the filter's groups.

Usage: check-syscalls.py FAULTLINE_BINARY RULES_DIR
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

UNIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "faultline.service")


def filter_groups():
    """{"@group": {"call" or "@subgroup", ...}} from systemd-analyze syscall-filter."""
    out = subprocess.run(["systemd-analyze", "syscall-filter"], check=True, capture_output=True,
                         text=True).stdout
    groups, current = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            current = line.strip()
            groups[current] = set()
        elif current and line.strip() and not line.strip().startswith("#"):
            groups[current].add(line.strip())
    return groups


def expand(names, groups):
    calls, todo, seen = set(), list(names), set()
    while todo:
        name = todo.pop()
        if not name.startswith("@"):
            calls.add(name)
        elif name not in seen:
            seen.add(name)
            todo.extend(groups.get(name, ()))
    return calls


def allowed_calls():
    """The calls the unit's SystemCallFilter= lines allow: their allow lists less their ~denials."""
    allow, deny = set(), set()
    for line in open(UNIT):
        m = re.match(r"SystemCallFilter=(~?)(.*)", line.strip())
        if m:
            (deny if m.group(1) else allow).update(m.group(2).split())
    groups = filter_groups()
    return expand(allow, groups) - expand(deny, groups)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status, r.read().decode()
    except OSError:
        return 0, ""


def traced(trace, argv):
    return ["strace", "-f", "-qq", "-o", trace, "--"] + argv


def calls_in(trace_prefix_files):
    calls = set()
    for path in trace_prefix_files:
        for line in open(path, errors="replace"):
            m = re.match(r"(?:\d+\s+)?([a-z_0-9]+)\(", line)
            if m:
                calls.add(m.group(1))
    return calls


def main():
    binary, rules = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        log = os.path.join(tmp, "train.log")
        open(log, "w").close()
        config = os.path.join(tmp, "faultline.yaml")
        with open(config, "w") as f:
            f.write(f"rules:\n  paths: [{rules}]\nhttp:\n  listen: 127.0.0.1:{port}\n"
                    f"sources:\n  - id: train\n    type: file\n    paths: [\"{tmp}/*.log\"]\n")
        env = dict(os.environ, FAULTLINE_CACHE_DIR=os.path.join(tmp, "cache"))
        traces = []

        trace = os.path.join(tmp, "check.trace")
        subprocess.run(traced(trace, [binary, "check", "-c", config]), check=True, env=env,
                       stdout=subprocess.DEVNULL)
        traces.append(trace)

        trace = os.path.join(tmp, "run.trace")
        agent = subprocess.Popen(traced(trace, [binary, "run", "-c", config]), env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        traces.append(trace)
        deadline = time.time() + 60
        while get(port, "/readyz")[0] != 200:
            if time.time() > deadline or agent.poll() is not None:
                sys.exit("check-syscalls: the agent did not become ready")
            time.sleep(0.2)
        with open(log, "a") as f:
            f.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
        deadline = time.time() + 30
        counted = re.compile(r'signature="gpu\.cuda\.out_of_memory"\} 1\b')
        while not counted.search(get(port, "/metrics")[1]):
            if time.time() > deadline:
                sys.exit("check-syscalls: the failure written was not counted")
            time.sleep(0.2)
        get(port, "/healthz")
        # strace -f reports the traced program's pid as strace's child.
        main_pid = int(subprocess.run(["pgrep", "-P", str(agent.pid)], capture_output=True,
                                      text=True).stdout.split()[0])
        os.kill(main_pid, signal.SIGHUP)
        time.sleep(1)
        if get(port, "/healthz")[0] != 200:
            sys.exit("check-syscalls: the agent stopped answering after SIGHUP")
        os.kill(main_pid, signal.SIGTERM)
        if agent.wait(timeout=30) != 0:
            sys.exit("check-syscalls: the agent did not stop cleanly on SIGTERM")

        made = calls_in(traces)
        # SQLite gives its -wal and -shm files the database's owner only when it runs as root
        # (unixOpen's robust_fchown); the unit runs the agent as User=faultline, never as root.
        if os.geteuid() == 0:
            made.discard("fchown")
        outside = sorted(made - allowed_calls())
        print(f"check-syscalls: the agent made {len(made)} distinct system calls; "
              f"{len(outside)} outside the unit's SystemCallFilter=")
        if outside:
            print("  outside: " + " ".join(outside))
            sys.exit(1)


if __name__ == "__main__":
    main()
