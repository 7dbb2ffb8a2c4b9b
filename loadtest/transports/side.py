#!/usr/bin/env python3
# PING's server CPU per request, side by side in one run: rlstore, Redis,
# and two bare Go PING servers that do nothing but answer +PONG (gnetping:
# gnet's event loop, one thread and two; netping: a goroutine per connection
# on net.Conn), each driven by rlload with 50 connections, alternating the
# order each round. CPU is the server's utime+stime from /proc/<pid>/stat
# over each run, divided by the requests served. The bare servers bound what
# any Go transport can reach on this host: rlstore does more per request.
#   (cd loadtest/transports && go build -o /tmp/gnetping ./gnetping && go build -o /tmp/netping ./netping)
#   go build -o /tmp/rlstore ./cmd/rlstore && go build -o /tmp/rlload ./loadtest/cmd/rlload
#   RLSTORE=/tmp/rlstore RLLOAD=/tmp/rlload GNETPING=/tmp/gnetping NETPING=/tmp/netping python3 loadtest/transports/side.py
# Optional: ROUNDS (3), DUR (3s), DEPTHS (1,16).
import json, os, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from cluster import cpu, free_port  # noqa: E402  (the helpers of loadtest/cluster.py)


def main():
    env = os.environ
    servers = {
        "rlstore": [env.get("RLSTORE", "rlstore"), "--port", "PORT", "--log-level", "warn"],
        "redis": ["redis-server", "--port", "PORT", "--save", "", "--appendonly", "no"],
        "gnet, 1 loop": [env.get("GNETPING", "gnetping"), "--port", "PORT", "--loops", "1"],
        "gnet, 2 loops": [env.get("GNETPING", "gnetping"), "--port", "PORT", "--loops", "2"],
        "net.Conn": [env.get("NETPING", "netping"), "--port", "PORT"],
    }
    procs = {}
    for name, cmd in servers.items():
        port = free_port()
        procs[name] = (subprocess.Popen([a.replace("PORT", str(port)) for a in cmd],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), port)
    time.sleep(1)
    rounds, dur = int(env.get("ROUNDS", "3")), env.get("DUR", "3s")
    depths = [int(d) for d in env.get("DEPTHS", "1,16").split(",")]
    res = {}
    try:
        for rnd in range(rounds):
            for depth in depths:
                order = list(procs) if rnd % 2 == 0 else list(reversed(procs))
                for name in order:
                    proc, port = procs[name]
                    c0 = cpu(proc.pid)
                    out = subprocess.run([env.get("RLLOAD", "rlload"), "run", "--addr", f"127.0.0.1:{port}", "-t", "ping",
                                          "-P", str(depth), "-c", "50", "--duration", dur, "-q", "--json"],
                                         capture_output=True, text=True, timeout=120)
                    us = (cpu(proc.pid) - c0) * 1e6 / max(json.loads(out.stdout)["requests"], 1)
                    res.setdefault((depth, name), []).append(us)
                    print(f"r{rnd} -P {depth} {name}: {us:.2f} µs", flush=True)
    finally:
        for proc, _ in procs.values():
            proc.terminate()
    print(f"\nPING, server CPU per request (µs) in each round, and × Redis's in the same round; load at the end {os.getloadavg()[0]:.1f}\n")
    print("| -P | server | µs per request | × Redis |")
    print("|---|---|---|---|")
    for depth in depths:
        for name in procs:
            us, red = res[(depth, name)], res[(depth, "redis")]
            print(f"| {depth} | {name} | {', '.join(f'{x:.2f}' for x in us)} | {', '.join(f'{a / b:.2f}' for a, b in zip(us, red))} |")


if __name__ == "__main__":
    main()
