#!/usr/bin/env python3
# Two builds' cost of replicas, side by side in one run, on loopback: three
# 3-node clusters, the new build (RLSTORE) and the old one (BASE) with
# --replicas 1 and the new build with --replicas 0, driven in turn (the order
# rotating each round) by rlload --cluster on KEYS random RL.SLIDE keys with
# a limit no run reaches, so every decision changes its key. Keys are never
# flushed, so later rounds ship keys holding a counter for each second they
# were decided. Prints each run, then each build's server CPU per decision
# (utime+stime of its three processes) and throughput against --replicas 0.
#
#   go build -o /tmp/rl-new ./cmd/rlstore && go build -o /tmp/rlload ./loadtest/cmd/rlload
#   RLSTORE=/tmp/rl-new BASE=/tmp/rl-old RLLOAD=/tmp/rlload python3 loadtest/replicas_builds.py
# Optional: ROUNDS (5), DUR (8s), KEYS (100000).
import json, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster as cl  # noqa: E402  (the helpers of loadtest/cluster.py)


def main():
    rounds, dur, keys = int(os.environ.get("ROUNDS", "5")), os.environ.get("DUR", "8s"), os.environ.get("KEYS", "100000")
    specs = [("new", cl.RLSTORE, "--replicas 1"), ("old", os.environ["BASE"], "--replicas 1"), ("r0", cl.RLSTORE, "--replicas 0")]
    clusters, res = [], {name: [] for name, _, _ in specs}
    try:
        for name, binary, args in specs:
            os.environ["CLUSTERARGS"] = args
            clusters.append((name, cl.start_cluster(3, binary=binary)))
        print(f"Load at start: {open('/proc/loadavg').read().split()[0]}.", flush=True)
        for r in range(rounds):
            for name, nodes in clusters[r % 3:] + clusters[:r % 3]:
                c0 = sum(cl.cpu(p.pid) for p, _ in nodes)
                out = subprocess.run([cl.RLLOAD, "run", "--addr", f"127.0.0.1:{nodes[0][1]}", "-t", "rl.slide", "-P", "16",
                                      "-c", "50", "-r", keys, "--limit", "1000000", "--duration", dur, "-q", "--json",
                                      "--cluster"], capture_output=True, text=True)
                j = json.loads(out.stdout)
                time.sleep(0.3)  # the last shipment
                us = (sum(cl.cpu(p.pid) for p, _ in nodes) - c0) / max(j["allowed"], 1) * 1e6
                res[name].append((j["throughput"], us))
                print(f"r{r} {name}: {j['throughput'] / 1e3:.0f}k/s, {us:.2f} us server CPU per decision", flush=True)
    finally:
        for _, nodes in clusters:
            cl.stop([p for p, _ in nodes])
    for name in ("new", "old"):
        cpu = [a[1] / b[1] for a, b in zip(res[name], res["r0"])]
        tp = [a[0] / b[0] for a, b in zip(res[name], res["r0"])]
        print(f"{name} --replicas 1: CPU x --replicas 0 {', '.join(f'{x:.2f}' for x in cpu)} (median {statistics.median(cpu):.2f}); "
              f"throughput x {', '.join(f'{x:.2f}' for x in tp)} (median {statistics.median(tp):.2f})")


if __name__ == "__main__":
    main()
