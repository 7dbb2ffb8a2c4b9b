#!/usr/bin/env python3
# The gateway's load test, side by side in one run (BENCHMARKS.md, "Gateway"):
# rlstore's ShouldRateLimit (--grpc-port) against envoyproxy/ratelimit in front
# of redis-server, same configuration, same load generator (rlsload, closed
# loop), alternating the order each round; and rlstore's RL.FIXED over RESP
# (rlload) at the same concurrency, for the cost of the gRPC path over RESP.
# Server CPU is utime+stime from /proc/<pid>/stat over each run: rlstore's
# alone, or envoyproxy/ratelimit's and Redis's together.
#   go build -o /tmp/rlstore ./cmd/rlstore && go build -o /tmp/rlsload ./loadtest/cmd/rlsload
#   go build -o /tmp/rlload ./loadtest/cmd/rlload
#   (envoyproxy/ratelimit: see gateway/testdata/diff/record.sh for how it is built)
#   RLSTORE=/tmp/rlstore RATELIMIT=/tmp/ratelimit RLSLOAD=/tmp/rlsload RLLOAD=/tmp/rlload python3 loadtest/rlsside.py
# Optional: ROUNDS (2), DUR (4s), C (50 calls in flight), DESCRIPTORS (1), KEYS (100000).
import json, os, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import cpu, free_port  # noqa: E402

CONFIG = """domain: load
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1000000}
"""
dur, rounds = os.environ.get("DUR", "4s"), int(os.environ.get("ROUNDS", "2"))
conc, ndesc, keys = os.environ.get("C", "50"), os.environ.get("DESCRIPTORS", "1"), os.environ.get("KEYS", "100000")
tmp = tempfile.mkdtemp()
os.makedirs(f"{tmp}/rls", exist_ok=True)
os.makedirs(f"{tmp}/rt/ratelimit/config", exist_ok=True)
for p in (f"{tmp}/rls/load.yaml", f"{tmp}/rt/ratelimit/config/load.yaml"):
    open(p, "w").write(CONFIG)
quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
rl_port, rl_grpc = free_port(), free_port()
rl = subprocess.Popen([os.environ["RLSTORE"], "--port", str(rl_port), "--grpc-port", str(rl_grpc),
                       "--rls-config", f"{tmp}/rls", "--log-level", "warn"], **quiet)
redis_port, ref_grpc = free_port(), free_port()
redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], **quiet)
env = dict(os.environ, USE_STATSD="false", LOG_LEVEL="warn", REDIS_SOCKET_TYPE="tcp", REDIS_URL=f"127.0.0.1:{redis_port}",
           RUNTIME_ROOT=f"{tmp}/rt", RUNTIME_SUBDIRECTORY="ratelimit", RUNTIME_WATCH_ROOT="false",
           HOST="127.0.0.1", PORT=str(free_port()), GRPC_HOST="127.0.0.1", GRPC_PORT=str(ref_grpc),
           DEBUG_HOST="127.0.0.1", DEBUG_PORT=str(free_port()))
time.sleep(0.5)
ref = subprocess.Popen([os.environ["RATELIMIT"]], env=env, **quiet)
time.sleep(2.0)


def rlsload(addr, pids):
    out = subprocess.run([os.environ["RLSLOAD"], "-addr", addr, "-c", conc, "-dur", dur, "-descriptors", ndesc,
                          "-keys", keys, "-pids", ",".join(str(p) for p in pids)], capture_output=True, text=True)
    j = json.loads(out.stdout)
    return j["decisions_per_sec"], j["p99_us"], j["server_cpu_us_per_decision"], j["errors"]


def rlload():
    c0 = cpu(rl.pid)
    out = subprocess.run([os.environ["RLLOAD"], "run", "--addr", f"127.0.0.1:{rl_port}", "-t", "rl.fixed", "-P", "1",
                          "-c", conc, "-r", keys, "--limit", "1000000", "--duration", dur, "-q", "--json"],
                         capture_output=True, text=True)
    c1 = cpu(rl.pid)
    j = json.loads(out.stdout)
    return j["throughput"], j["latency"]["p99_ns"] / 1e3, (c1 - c0) * 1e6 / max(j["requests"], 1), 0


runs = {"rlstore gRPC": lambda: rlsload(f"127.0.0.1:{rl_grpc}", [rl.pid]),
        "envoyproxy/ratelimit + Redis": lambda: rlsload(f"127.0.0.1:{ref_grpc}", [ref.pid, redis.pid]),
        "rlstore RL.FIXED over RESP": rlload}
best = {}
for rnd in range(rounds):
    order = list(runs)
    if rnd % 2:
        order.reverse()
    for name in order:
        v = runs[name]()
        print(f"r{rnd} {name}: {v[0]/1e3:.1f}k decisions/s p99 {v[1]/1e3:.2f}ms server CPU {v[2]:.2f}us/decision errors {v[3]}", flush=True)
        if name not in best or v[2] < best[name][2]:
            best[name] = v
for p in (rl, ref, redis):
    p.terminate()
print(f"\n| system | decisions/s | p99 | server CPU per decision | errors |\n| --- | ---: | ---: | ---: | ---: |")
for name, v in best.items():
    print(f"| {name} | {v[0]/1e3:.1f}k/s | {v[1]/1e3:.2f}ms | {v[2]:.2f} µs | {v[3]} |")
g, r, f = best["rlstore gRPC"], best["envoyproxy/ratelimit + Redis"], best["rlstore RL.FIXED over RESP"]
print(f"\nrlstore / reference: {g[0]/r[0]:.2f}× decisions/s, {g[2]/r[2]:.2f}× CPU per decision, {g[1]/r[1]:.2f}× p99")
print(f"gRPC / RESP RL.FIXED: {g[2]/f[2]:.2f}× CPU per decision")
