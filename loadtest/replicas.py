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
#   redis-benchmark --cluster - each of its connections sends its node
#               pipelines of keys that node owns ({tag} becomes a tag of the
#               node's, so each node's keys share one slot and one backup):
#               the measure of the cost of replicas.
# Server CPU per request is the utime+stime of the cluster's three processes
# over the run, divided by the requests served.
#
#   go build -o /tmp/rlstore ./cmd/rlstore && go build -o /tmp/rlload ./loadtest/cmd/rlload
#   RLSTORE=/tmp/rlstore RLLOAD=/tmp/rlload python3 loadtest/replicas.py
# Optional: ROUNDS (3), DUR (3s), DEPTHS (16), KEYS (1000,100000), RLARGS (flags for every rlstore),
# LIMIT (100: each key's RL.SLIDE limit per 60 s; a denied decision changes no key and ships
# nothing, so LIMIT=1000000000, where every decision is allowed, measures the most shipping),
# RB (1; 0: no redis-benchmark rows), RBN (1000000: requests per redis-benchmark run),
# RLLOAD_ROWS (1; 0: only the redis-benchmark rows).
import os, re, shutil, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster as cl  # noqa: E402  (the helpers of loadtest/cluster.py)


LIMIT = os.environ.get("LIMIT", "100")


def run_load(port, depth, dur, aware, keys):
    cmd = [cl.RLLOAD, "run", "--addr", f"127.0.0.1:{port}", "-t", "rl.slide", "-P", str(depth), "-c", "50",
           "-r", str(keys), "--limit", LIMIT, "--duration", dur, "-q", "--json"]
    if aware:
        cmd.append("--cluster")
    elif keys == 1:
        cmd += ["--prefix", remote_prefix(port)]
    out = cl.subprocess.run(cmd, capture_output=True, text=True)
    try:
        return cl.json.loads(out.stdout)
    except ValueError:
        print("replicas.py: rlload failed:", out.stderr[:300], file=sys.stderr)
        return None


def remote_prefix(port):
    """A fresh key prefix whose one key (the prefix and "0") the node at port
    does not own, so that forwarding one key forwards every request: rlload's
    own fresh prefix would make that key local in a third of the runs."""
    mine = cl.owned_ranges(port)
    for _ in range(1000):
        prefix = f"one:{os.urandom(4).hex()}:"
        if not cl.in_ranges(mine, int(cl.resp_cmd(port, "CLUSTER", "KEYSLOT", prefix + "0"))):
            return prefix
    raise RuntimeError("no key owned by another node")


def run_rb(port, depth, keys):
    """redis-benchmark --cluster against the cluster of port, -c 50; returns
    (decisions/s, requests) or None."""
    n = int(os.environ.get("RBN", "1000000"))
    cmd = ["redis-benchmark", "--cluster", "-p", str(port), "-c", "50", "-P", str(depth), "-n", str(n),
           "-r", str(keys), "-q", "RL.SLIDE", "k:{tag}:__rand_int__", LIMIT, "60"]
    out = cl.subprocess.run(cmd, capture_output=True, text=True)
    text = (out.stdout + out.stderr).replace("\r", "\n")
    rates = re.findall(r"([\d.]+) requests per second", text)
    if out.returncode != 0 or not rates or "Error" in text:
        print("replicas.py: redis-benchmark failed:", text.strip()[-200:], file=sys.stderr)
        return None
    return float(rates[-1]), n


def measure(nodes, fn):
    """Runs fn() -> (rate, requests, errors) and returns it with the
    cluster's server CPU per request, or None."""
    procs = [p for p, _ in nodes]
    c0 = sum(cl.cpu(p.pid) for p in procs)
    r = fn()
    c1 = sum(cl.cpu(p.pid) for p in procs)
    if not r or not r[1]:
        return None
    return r[0], (c1 - c0) * 1e6 / r[1], r[2]


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
    print(f"driven alternately in one run by `rlload run -t rl.slide -c 50 -r KEYS --limit {LIMIT}` (forwarded: all on node 1,")
    print("and for one key a key node 1 does not own; aware: --cluster) and by")
    print(f"`redis-benchmark --cluster -c 50 -P 16 -r KEYS RL.SLIDE 'k:{{tag}}:__rand_int__' {LIMIT} 60`")
    print("(keys per node), every rlstore its own process, sharing the machine's two cores with each other and the client.")
    print(f"Load at start: {open('/proc/loadavg').read().split()[0]}.\n")
    modes = []
    if os.environ.get("RLLOAD_ROWS", "1") != "0":
        modes += ["forwarded", "aware"]
    if os.environ.get("RB", "1") != "0" and shutil.which("redis-benchmark"):
        modes.append("redis-benchmark --cluster")
    try:
        for rnd in range(rounds):
            for depth, keys in [(d, k) for d in depths for k in keysets]:
                for mode in modes:
                    order = ["1", "0"] if rnd % 2 == 0 else ["0", "1"]
                    for rep in order:
                        nodes = clusters[rep]
                        if mode == "redis-benchmark --cluster":
                            fn = lambda: (lambda r: r and (r[0], r[1], 0))(run_rb(nodes[0][1], depth, keys))
                        else:
                            fn = lambda: (lambda j: j and (j["throughput"], j["requests"], j["errors"]))(
                                run_load(nodes[0][1], depth, dur, mode == "aware", keys))
                        m = measure(nodes, fn)
                        if not m:
                            continue
                        res.setdefault((depth, keys, mode, rep), []).append(m)
                        print(f"r{rnd} -P {depth} -r {keys} {mode} --replicas {rep}: {m[0] / 1e3:.1f}k/s, "
                              f"server CPU {m[1]:.2f} µs/req, {m[2]} errors", file=sys.stderr, flush=True)
    finally:
        cl.stop([p for nodes in clusters.values() for p, _ in nodes])
    print("Each cell is the median of the rounds (each round's figure in brackets).\n")
    print("| -P | keys (-r) | clients | --replicas | decisions/s | × --replicas 0 (each round's) | server CPU per request | CPU × --replicas 0 | errors |")
    print("|---|---|---|---|---|---|---|---|---|")
    for depth, keys in [(d, k) for d in depths for k in keysets]:
        for mode in modes:
            base = cl.med([r[0] for r in res.get((depth, keys, mode, "0"), [])])
            base_us = cl.med([r[1] for r in res.get((depth, keys, mode, "0"), [])])
            for rep in ("0", "1"):
                runs = res.get((depth, keys, mode, rep), [])
                if not runs:
                    continue
                thr, us = cl.med([r[0] for r in runs]), cl.med([r[1] for r in runs])
                ratio = f"{thr / base:.2f}×" if base else "-"
                pairs = zip(runs, res.get((depth, keys, mode, "0"), []))
                if rep == "1":
                    ratio += " (" + ", ".join(f"{a[0] / b[0]:.2f}" for a, b in pairs) + ")"
                rates = ", ".join(cl.fmt_rate(r[0]) for r in runs)
                print(f"| {depth} | {keys} | {mode} | {rep} | {cl.fmt_rate(thr)} ({rates}) | {ratio} | {us:.2f} µs | "
                      f"{f'{us / base_us:.2f}×' if base_us else '-'} |"
                      f" {sum(r[2] for r in runs)} |")
    print()


if __name__ == "__main__":
    main()
