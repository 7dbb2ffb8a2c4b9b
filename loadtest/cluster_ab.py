#!/usr/bin/env python3
# Two rlstore builds side by side, for a host that other work keeps busy:
# each round drives a 3-node cluster of each build at the same moment with
# the same client (rlload --cluster, -P 16, 50 connections, 3 s; or
# redis-benchmark --cluster), so the host's load hits both alike, and
# prints each round's ratios (this build / BEFORE) of throughput and of
# server CPU per request, then their medians. With IDLE=1 it instead
# prints each cluster's CPU over 10 s of doing nothing, three times: the
# background work (gossip, leases, sweeps) every request shares.
#
#   RLSTORE=/tmp/rlstore-new BEFORE=/tmp/rlstore-old RLLOAD=/tmp/rlload \
#     ROUNDS=8 CLIENTS=rlload,rb python3 loadtest/cluster_ab.py
#
# It uses loadtest/cluster.py's functions (and its CLUSTERARGS, NODEPROCS).
# Running both builds the same build (BEFORE=$RLSTORE) shows the noise.
import importlib.util, os, statistics, sys, threading, time

spec = importlib.util.spec_from_file_location("cl", os.path.join(os.path.dirname(os.path.abspath(__file__)), "cluster.py"))
cl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cl)


def one(name, nodes, client, out):
    procs = [p for p, _ in nodes]
    c0 = sum(cl.cpu(p.pid) for p in procs)
    r = cl.run_rb(nodes[0][1], 16, "aware") if client == "rb" else cl.run_load(nodes[0][1], 16, "3s", "aware")
    c1 = sum(cl.cpu(p.pid) for p in procs)
    out[name] = None if not r or not r[1] else (r[0], (c1 - c0) * 1e6 / r[1], r[2])


def idle(now, before):
    for _ in range(3):
        c0 = [sum(cl.cpu(p.pid) for p, _ in c) for c in (now, before)]
        time.sleep(10)
        c1 = [sum(cl.cpu(p.pid) for p, _ in c) for c in (now, before)]
        print(f"idle 10 s, CPU of 3 nodes: this build {c1[0] - c0[0]:.2f} s, before {c1[1] - c0[1]:.2f} s", flush=True)


def main():
    now = cl.start_cluster(3)
    before = cl.start_cluster(3, binary=os.environ["BEFORE"])
    res = {}
    try:
        if os.environ.get("IDLE") == "1":
            return idle(now, before)
        for rnd in range(int(os.environ.get("ROUNDS", "8"))):
            for client in os.environ.get("CLIENTS", "rlload,rb").split(","):
                out = {}
                ts = [threading.Thread(target=one, args=(n, c, client, out)) for n, c in (("now", now), ("before", before))]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
                a, b = out.get("now"), out.get("before")
                load = open("/proc/loadavg").read().split()[0]
                if not a or not b or a[2] or b[2]:
                    print(f"r{rnd} {client}: skipped (an error: {a} {b})", flush=True)
                    continue
                res.setdefault(client, []).append((a[0] / b[0], a[1] / b[1]))
                print(f"r{rnd} {client}: {a[0] / 1e3:.1f}k/s {a[1]:.2f} µs/req, before {b[0] / 1e3:.1f}k/s {b[1]:.2f} µs/req;"
                      f" {a[0] / b[0]:.2f}× throughput, {a[1] / b[1]:.2f}× CPU; load {load}", flush=True)
    finally:
        cl.stop([p for p, _ in now + before])
    for client, rs in res.items():
        print(f"{client} aware, {len(rs)} rounds: throughput × before, median {statistics.median(r[0] for r in rs):.2f}"
              f" ({', '.join(f'{r[0]:.2f}' for r in rs)}); server CPU per request × before, median"
              f" {statistics.median(r[1] for r in rs):.2f} ({', '.join(f'{r[1]:.2f}' for r in rs)})")


main()
