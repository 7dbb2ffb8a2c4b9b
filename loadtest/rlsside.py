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
# Optional: ROUNDS (2), DUR (4s), C (50 calls in flight), CONNS (4),
# DESCRIPTORS (1), KEYS (100000), CLIENTS ("h2": rlsload's own lean
# HTTP/2 client; "grpc" for grpc-go's; "h2 grpc" runs both against each
# server), PIN=1 (taskset: the servers on CPU 0, the load generators on
# CPU 1, so that neither takes the other's core).
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
conns, clients = os.environ.get("CONNS", "4"), os.environ.get("CLIENTS", "h2").split()
pin = os.environ.get("PIN") == "1"
srv_cpu, gen_cpu = (["taskset", "-c", "0"], ["taskset", "-c", "1"]) if pin else ([], [])
tmp = tempfile.mkdtemp()
os.makedirs(f"{tmp}/rls", exist_ok=True)
os.makedirs(f"{tmp}/rt/ratelimit/config", exist_ok=True)
for p in (f"{tmp}/rls/load.yaml", f"{tmp}/rt/ratelimit/config/load.yaml"):
    open(p, "w").write(CONFIG)
quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
rl_port, rl_grpc = free_port(), free_port()
rl = subprocess.Popen(srv_cpu + [os.environ["RLSTORE"], "--port", str(rl_port), "--grpc-port", str(rl_grpc),
                       "--rls-config", f"{tmp}/rls", "--log-level", "warn"], **quiet)
redis_port, ref_grpc = free_port(), free_port()
redis = subprocess.Popen(srv_cpu + ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], **quiet)
env = dict(os.environ, USE_STATSD="false", LOG_LEVEL="warn", REDIS_SOCKET_TYPE="tcp", REDIS_URL=f"127.0.0.1:{redis_port}",
           RUNTIME_ROOT=f"{tmp}/rt", RUNTIME_SUBDIRECTORY="ratelimit", RUNTIME_WATCH_ROOT="false",
           HOST="127.0.0.1", PORT=str(free_port()), GRPC_HOST="127.0.0.1", GRPC_PORT=str(ref_grpc),
           DEBUG_HOST="127.0.0.1", DEBUG_PORT=str(free_port()))
time.sleep(0.5)
ref = subprocess.Popen(srv_cpu + [os.environ["RATELIMIT"]], env=env, **quiet)
time.sleep(2.0)


def rlsload(addr, pids, client):
    out = subprocess.run(gen_cpu + [os.environ["RLSLOAD"], "-addr", addr, "-client", client, "-conns", conns, "-c", conc,
                                    "-dur", dur, "-descriptors", ndesc, "-keys", keys, "-pids", ",".join(str(p) for p in pids)],
                         capture_output=True, text=True)
    j = json.loads(out.stdout)
    if j["errors"]:
        print(f"  errors: {j['errors']}, first: {j.get('first_error')}", flush=True)
    return j["decisions_per_sec"], j["p99_us"], j["server_cpu_us_per_decision"], j["errors"], j["client_cpu_us_per_call"]


def rlload():
    c0 = cpu(rl.pid)
    out = subprocess.run(gen_cpu + [os.environ["RLLOAD"], "run", "--addr", f"127.0.0.1:{rl_port}", "-t", "rl.fixed", "-P", "1",
                                    "-c", conc, "-r", keys, "--limit", "1000000", "--duration", dur, "-q", "--json"],
                         capture_output=True, text=True)
    c1 = cpu(rl.pid)
    j = json.loads(out.stdout)
    return j["throughput"], j["latency"]["p99_ns"] / 1e3, (c1 - c0) * 1e6 / max(j["requests"], 1), 0, 0.0


GW, REF, RESP = "rlstore gRPC", "envoyproxy/ratelimit + Redis", "rlstore RL.FIXED over RESP"
runs = {}
for cl in clients:
    runs[(GW, cl)] = lambda cl=cl: rlsload(f"127.0.0.1:{rl_grpc}", [rl.pid], cl)
    runs[(REF, cl)] = lambda cl=cl: rlsload(f"127.0.0.1:{ref_grpc}", [ref.pid, redis.pid], cl)
runs[(RESP, "rlload")] = rlload
print(f"load {os.getloadavg()[0]:.1f}, pinned: {pin}, clients: {' '.join(clients)}, {conc} calls in flight on {conns} connections,"
      f" {ndesc} descriptor(s) a call, {dur} a run", flush=True)
best, ratios = {}, []
for rnd in range(rounds):
    order = list(runs)
    if rnd % 2:
        order.reverse()
    got = {}
    for key in order:
        v = got[key] = runs[key]()
        print(f"r{rnd} {key[0]} [{key[1]}]: {v[0]/1e3:.1f}k decisions/s p99 {v[1]/1e3:.2f}ms server CPU {v[2]:.2f}us/decision"
              f" client CPU {v[4]:.2f}us/call errors {v[3]}", flush=True)
        if key not in best or v[2] < best[key][2]:
            best[key] = v
    for cl in clients:
        g, r, f = got[(GW, cl)], got[(REF, cl)], got[(RESP, "rlload")]
        print(f"r{rnd} [{cl}] rlstore / reference: {g[0]/r[0]:.2f}× decisions/s, {g[2]/r[2]:.2f}× CPU per decision,"
              f" {g[1]/r[1]:.2f}× p99; gRPC / RESP RL.FIXED: {g[2]/f[2]:.2f}× CPU per decision, load {os.getloadavg()[0]:.1f}", flush=True)
for p in (rl, ref, redis):
    p.terminate()
print("\n| system | client | decisions/s | p99 | server CPU per decision | client CPU per call | errors |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for key, v in best.items():
    print(f"| {key[0]} | {key[1]} | {v[0]/1e3:.1f}k/s | {v[1]/1e3:.2f}ms | {v[2]:.2f} µs | {v[4]:.2f} µs | {v[3]} |")
