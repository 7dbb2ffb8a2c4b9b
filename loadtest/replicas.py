#!/usr/bin/env python3
# The cost of replicas on decision throughput, side by side in one run, on
# loopback. Prints a Markdown "## Replicas" section.
#
# Two 3-node clusters, one with --replicas 1 (the default) and one with
# --replicas 0, each rlstore its own process, both driven by rlload
# (rl.slide, 50 clients, random keys among 1,000, where a key changes many
# times an interval and ships once, and among 100,000, where nearly every
# decision ships a key of its own) at -P 16, alternating the order each round:
#   forwarded - plain clients all on node 1 (two thirds of the keys are
#               forwarded to their owners);
#   aware     - rlload --cluster: each key goes straight to its owner.
# Server CPU per request is the utime+stime of the cluster's three processes
# over the run, divided by the requests served.
#
#   go build -o /tmp/rlstore ./cmd/rlstore && go build -o /tmp/rlload ./loadtest/cmd/rlload
#   RLSTORE=/tmp/rlstore RLLOAD=/tmp/rlload python3 loadtest/replicas.py
# Optional: ROUNDS (3), DUR (3s), DEPTHS (16), KEYS (1000,100000), RLARGS (flags for every rlstore).
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster as cl  # noqa: E402  (the helpers of loadtest/cluster.py)


def run_load(port, depth, dur, aware, keys):
    cmd = [cl.RLLOAD, "run", "--addr", f"127.0.0.1:{port}", "-t", "rl.slide", "-P", str(depth), "-c", "50",
           "-r", str(keys), "--limit", "100", "--duration", dur, "-q", "--json"]
    if aware:
        cmd.append("--cluster")
    out = cl.subprocess.run(cmd, capture_output=True, text=True)
    try:
        return cl.json.loads(out.stdout)
    except ValueError:
        print("replicas.py: rlload failed:", out.stderr[:300], file=sys.stderr)
        return None


def start(replicas):
    os.environ["CLUSTERARGS"] = f"--replicas {replicas}"
    nodes = cl.start_cluster(3)
    # Right after the joins the handoff may still be moving slots, and answers
    # TRYAGAIN meanwhile: warm up until a short load sees no error.
    for _ in range(20):
        j = run_load(nodes[0][1], 16, "500ms", False, 1000)
        if j and j["requests"] and not j["errors"]:
            break
    return nodes


def main():
    rounds = int(os.environ.get("ROUNDS", "3"))
    dur = os.environ.get("DUR", "3s")
    depths = [int(d) for d in os.environ.get("DEPTHS", "16").split(",")]
    keysets = [int(k) for k in os.environ.get("KEYS", "1000,100000").split(",")]
    clusters = {"1": start(1), "0": start(0)}
    res = {}
    print("## Replicas\n")
    print("Produced by `python3 loadtest/replicas.py`: two 3-node clusters on loopback, one with `--replicas 1`")
    print("(the default: every changed key ships to its slot's runner-up each 100 ms) and one with `--replicas 0`,")
    print("driven alternately in one run by `rlload run -t rl.slide -c 50 -r KEYS`, every rlstore its own")
    print("process, sharing the machine's two cores with each other and with rlload.")
    print(f"Load at start: {open('/proc/loadavg').read().split()[0]}.\n")
    try:
        for rnd in range(rounds):
            for depth, keys in [(d, k) for d in depths for k in keysets]:
                for aware in (False, True):
                    order = ["1", "0"] if rnd % 2 == 0 else ["0", "1"]
                    for rep in order:
                        nodes = clusters[rep]
                        procs = [p for p, _ in nodes]
                        c0 = sum(cl.cpu(p.pid) for p in procs)
                        j = run_load(nodes[0][1], depth, dur, aware, keys)
                        c1 = sum(cl.cpu(p.pid) for p in procs)
                        if not j or not j["requests"]:
                            continue
                        us = (c1 - c0) * 1e6 / j["requests"]
                        mode = "aware" if aware else "forwarded"
                        res.setdefault((depth, keys, mode, rep), []).append((j["throughput"], us, j["errors"]))
                        first = f" (first: {j.get('first_error', '')})" if j["errors"] else ""
                        print(f"r{rnd} -P {depth} -r {keys} {mode} --replicas {rep}: {j['throughput'] / 1e3:.1f}k/s, "
                              f"server CPU {us:.2f} µs/req, {j['errors']} errors{first}", file=sys.stderr, flush=True)
    finally:
        cl.stop([p for nodes in clusters.values() for p, _ in nodes])
    print("Each cell is the median of the rounds (each round's figure in brackets).\n")
    print("| -P | keys (-r) | clients | --replicas | decisions/s | × --replicas 0 | server CPU per request | errors |")
    print("|---|---|---|---|---|---|---|---|")
    for depth, keys in [(d, k) for d in depths for k in keysets]:
        for mode in ("forwarded", "aware"):
            base = cl.med([r[0] for r in res.get((depth, keys, mode, "0"), [])])
            for rep in ("0", "1"):
                runs = res.get((depth, keys, mode, rep), [])
                if not runs:
                    continue
                thr, us = cl.med([r[0] for r in runs]), cl.med([r[1] for r in runs])
                ratio = f"{thr / base:.2f}×" if base else "-"
                rates = ", ".join(cl.fmt_rate(r[0]) for r in runs)
                print(f"| {depth} | {keys} | {mode} | {rep} | {cl.fmt_rate(thr)} ({rates}) | {ratio} | {us:.2f} µs |"
                      f" {sum(r[2] for r in runs)} |")
    print()


if __name__ == "__main__":
    main()
