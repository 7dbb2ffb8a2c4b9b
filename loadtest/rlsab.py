#!/usr/bin/env python3
# The gateway's A/B (BENCHMARKS.md, "Gateway"): two or more rlstore builds
# side by side in one run, each serving ShouldRateLimit (--grpc-port) with
# the same one-limit configuration as loadtest/rlsside.py, driven in turn by
# the same load generator (rlsload, closed loop), alternating the order each
# round. Every build runs for the whole run, so each round also samples its
# peak RSS (VmHWM) so far. Prints every round and the ratios of each build
# to the first, round by round: the host's load moves absolute numbers, the
# ratios within a round are the comparison.
#   go build -o /tmp/old ./cmd/rlstore   (at the commit before)
#   go build -o /tmp/new ./cmd/rlstore && go build -o /tmp/rlsload ./loadtest/cmd/rlsload
#   RLSLOAD=/tmp/rlsload python3 loadtest/rlsab.py /tmp/old /tmp/new
# A build may carry environment variables and flags: "GOGC=400 /tmp/new --flag x".
# Optional: ROUNDS (3), DUR (4s), C (50 calls in flight), DESCRIPTORS (1),
# KEYS (100000), CLIENT (h2: rlsload's own lean client; grpc: grpc-go's), PPROF (a folder: a 3 s CPU profile of each build in the
# last round, through --pprof-addr, saved there as <index>.pprof),
# TOGETHER=1 (every build's load at the same time, each with its own
# rlsload: on a shared host whose load swings from second to second, the
# builds then share the same moments; their rates are no longer each
# build's alone, their CPU per decision still is).
import json, os, shlex, subprocess, sys, tempfile, threading, time, urllib.request
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import free_port  # noqa: E402

CONFIG = """domain: load
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1000000}
"""
builds = sys.argv[1:]
if not builds:
    sys.exit("usage: rlsab.py BUILD [BUILD...]")
dur, rounds = os.environ.get("DUR", "4s"), int(os.environ.get("ROUNDS", "3"))
conc, ndesc, keys = os.environ.get("C", "50"), os.environ.get("DESCRIPTORS", "1"), os.environ.get("KEYS", "100000")
pprof, client = os.environ.get("PPROF"), os.environ.get("CLIENT", "h2")
together = os.environ.get("TOGETHER") == "1"
tmp = tempfile.mkdtemp()
os.makedirs(f"{tmp}/rls")
open(f"{tmp}/rls/load.yaml", "w").write(CONFIG)


def start(spec):
    words = shlex.split(spec)
    env = dict(os.environ)
    while "=" in words[0]:
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    grpc, pport = free_port(), free_port()
    args = words + ["--port", str(free_port()), "--grpc-port", str(grpc), "--rls-config", f"{tmp}/rls",
                    "--log-level", "warn", "--pprof-addr", f"127.0.0.1:{pport}"]
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), grpc, pport


def hwm(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def profile(pport, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{pport}/debug/pprof/profile?seconds=3", timeout=30) as r:
        open(path, "wb").write(r.read())


procs = [start(b) for b in builds]
time.sleep(2.0)
try:
    for rnd in range(rounds):
        order = list(range(len(builds)))
        if rnd % 2:
            order.reverse()
        res = {}
        for batch in ([order] if together else [[i] for i in order]):
            profs, loads = [], {}
            for i in batch:
                p, grpc, pport = procs[i]
                if pprof and rnd == rounds - 1:
                    os.makedirs(pprof, exist_ok=True)
                    profs.append(threading.Timer(0.5, profile, args=(pport, f"{pprof}/{i}.pprof")))
                    profs[-1].start()
                loads[i] = subprocess.Popen([os.environ["RLSLOAD"], "-addr", f"127.0.0.1:{grpc}", "-client", client, "-c", conc, "-dur", dur,
                                             "-descriptors", ndesc, "-keys", keys, "-pids", str(p.pid)],
                                            stdout=subprocess.PIPE, text=True)
            for i, load in loads.items():
                j = json.loads(load.communicate()[0])
                res[i] = (j["decisions_per_sec"], j["p99_us"], j["server_cpu_us_per_decision"], j["errors"], hwm(procs[i][0].pid))
            for t in profs:
                t.join()
        for i in range(len(builds)):
            v, b = res[i], res[0]
            print(f"r{rnd} [{i}] {builds[i]}: {v[0]/1e3:.1f}k decisions/s p99 {v[1]/1e3:.2f}ms "
                  f"server CPU {v[2]:.2f}us/decision errors {v[3]} peak RSS {v[4]:.0f} MB"
                  + (f" | vs [0]: {v[0]/b[0]:.2f}× rate, {v[2]/b[2]:.2f}× CPU" if i else ""), flush=True)
finally:
    for p, _, _ in procs:
        p.terminate()
        p.wait()
