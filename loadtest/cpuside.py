#!/usr/bin/env python3
# Server CPU per request, side by side in one run: two rlstore binaries
# (BEFORE and AFTER, e.g. two commits) and redis-server, each driven by rlload
# with 50 connections, alternating the order each round. CPU is the server
# process's utime+stime from /proc/<pid>/stat over each run, divided by the
# requests served, so other load on a shared host hardly moves it.
#   go build -o /tmp/rlload ./loadtest/cmd/rlload
#   BEFORE=/tmp/rl-old AFTER=/tmp/rl-new RLLOAD=/tmp/rlload python3 loadtest/cpuside.py
# Optional: ROUNDS (2), DUR (4s), ROWS (indices, e.g. 0,1), RLARGS (rlstore flags).
import json, os, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import cpu, free_port  # noqa: E402  (loadtest/cluster.py's; cpu reads the clock tick from sysconf)
RLLOAD = os.environ.get("RLLOAD", "rlload")
def start(cmd, env=None):
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
systems = {}
extra = os.environ.get("RLARGS", "").split()
for name, binp in [("before", os.environ["BEFORE"]), ("after", os.environ["AFTER"])]:
    port = free_port()
    systems[name] = (start([binp, "--port", str(port), "--log-level", "warn"] + extra), port)
port = free_port()
systems["redis"] = (start(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"]), port)
time.sleep(1.0)
rows = [  # (label, P, {system: workload})
    ("PING", 1, {"before": "ping", "after": "ping", "redis": "ping"}),
    ("PING", 16, {"before": "ping", "after": "ping", "redis": "ping"}),
    ("RL.SLIDE / INCR", 16, {"before": "rl.slide", "after": "rl.slide", "redis": "incr"}),
    ("RL.SLIDE / Lua slide", 16, {"before": "rl.slide", "after": "rl.slide", "redis": "lua.slide"}),
    ("RL.SLIDE / Lua slide", 1, {"before": "rl.slide", "after": "rl.slide", "redis": "lua.slide"}),
]
rows = [r for r in rows if not os.environ.get("ROWS") or str(rows.index(r)) in os.environ["ROWS"].split(",")]
dur = os.environ.get("DUR", "4s")
rounds = int(os.environ.get("ROUNDS", "2"))
res = {}
for rnd in range(rounds):
    for (label, P, wl) in rows:
        order = list(wl.keys())
        if rnd % 2: order.reverse()
        for sysname in order:
            proc, port = systems[sysname]
            c0 = cpu(proc.pid)
            out = subprocess.run([RLLOAD, "run", "--addr", f"127.0.0.1:{port}", "-t", wl[sysname], "-P", str(P),
                                  "-c", "50", "-r", "100000", "--limit", "100", "--duration", dur, "-q", "--json"],
                                 capture_output=True, text=True)
            c1 = cpu(proc.pid)
            try:
                j = json.loads(out.stdout)
            except Exception:
                print("ERR", sysname, wl[sysname], out.stderr[:300], file=sys.stderr); continue
            us = (c1 - c0) * 1e6 / max(j["requests"], 1)
            res.setdefault((label, P, sysname), []).append((us, j["throughput"], j["latency"]["p99_ns"] / 1e6))
            print(f"r{rnd} {label} P{P} {sysname} {wl[sysname]}: {j['throughput']/1e3:.1f}k/s cpu {us:.2f}us p99 {j['latency']['p99_ns']/1e6:.2f}ms", flush=True)
for p in systems.values():
    p[0].terminate()
print("\nsummary (best CPU/req of the rounds; throughput and p99 of that run)")
for (label, P, wl) in rows:
    cells = []
    for s in wl:
        v = min(res.get((label, P, s), [(0, 0, 0)]))
        cells.append(f"{s}={v[0]:.2f}us {v[1]/1e3:.0f}k/s p99 {v[2]:.2f}ms")
    print(f"{label} -P {P}: " + " | ".join(cells))
