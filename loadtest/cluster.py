#!/usr/bin/env python3
# Cluster throughput and failure detection, side by side in one run, on
# loopback. Prints a Markdown "## Cluster" section (bench.sh appends it to
# BENCHMARKS.md).
#
# Throughput: a 3-node cluster and one node alone, each rlstore its own
# process on free ports, driven by rlload and by redis-benchmark (rl.slide,
# 50 connections, 100k random keys) at -P 1 and -P 16, alternating the
# order each round:
#   single       - one node alone, the baseline;
#   forwarded    - plain clients all on node 1: two thirds of the keys are
#                  owned by the other nodes and forwarded to them;
#   aware        - rlload --cluster: each client reads the slot map and has a
#                  connection per node, and sends each node pipelines of -P
#                  keys it owns; redis-benchmark --cluster likewise;
#   aware, split - rlload --cluster --cluster-split: each pipeline of -P keys
#                  is split per node (go-redis ClusterClient's way);
#   by node      - three rlload processes, each with keys of one hash tag a
#                  node owns, sent to that node (or all to the single node):
#                  the cluster's nodes without a routing client's own work.
# Server CPU per request is the utime+stime of every rlstore process of the
# system (/proc/<pid>/stat) over the run, divided by the requests served.
#
# Failure detection and takeover: 3 nodes at --cluster-timing lan and fast;
# one is killed with SIGKILL, and the time until both survivors' CLUSTER
# INFO show two nodes is printed, and the time until both answer RL.SLIDE
# on a key of the dead node's slots with a decision (the takeover: a
# majority's confirmation of the death, then the takeover's wait).
#
#   go build -o /tmp/rlstore ./cmd/rlstore && go build -o /tmp/rlload ./loadtest/cmd/rlload
#   RLSTORE=/tmp/rlstore RLLOAD=/tmp/rlload python3 loadtest/cluster.py
# Optional: TITLE (the section's heading, "Cluster"), ROUNDS (2), DUR (3s), DEPTHS (1,16), DETECT (3: kills per timing,
# 0: none), TIMINGS (lan,fast: the --cluster-timing values DETECT kills at), THROUGHPUT (1; 0: skip), RB (1; 0: no redis-benchmark rows),
# BYNODE (1; 0: no "rlload ×3, by node" rows),
# RBN (500000: requests per redis-benchmark run at -P 16, in proportion at
# other depths), RLARGS (flags for every rlstore),
# CLUSTERARGS (flags for the cluster's nodes only, e.g. --replicas 0; for
# BEFORE's too unless BEFOREARGS gives theirs),
# PPROF (host:port: node 1 of the cluster serves --pprof-addr there),
# NODEPROCS (GOMAXPROCS of each cluster node, e.g. 1, as for three nodes
# sharing this host's two cores; one node alone keeps Go's default),
# BEFORE (another rlstore binary: a second cluster of it adds the rows
# "forwarded before" and "aware before", to compare two builds in one run),
# ROWS (systems to run, e.g. "aware" or "single,aware": with BEFORE, each
# row then runs next to its "before" row, so a busy host moves both alike),
# ALONE (1, with BEFORE: the two builds' clusters never run at once; each
# round starts one build's cluster, runs its rlload rows, stops it, then
# does the same for the other build, in alternating order, so neither
# cluster's idle work or memory shares the cores with the other's load; on a
# host of two shared cores this tells builds apart better than side by side).
import json, os, re, resource, shutil, signal, socket, subprocess, sys, time

RLSTORE = os.environ.get("RLSTORE", "rlstore")
RLLOAD = os.environ.get("RLLOAD", "rlload")
EXTRA = os.environ.get("RLARGS", "").split()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def resp_cmd(port, *args, timeout=1.0):
    """Sends one command and returns the reply's text (simple or bulk)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        out = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args)
        s.sendall(out)
        buf = b""
        while b"\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                raise OSError("closed")
            buf += chunk
        head, rest = buf.split(b"\r\n", 1)
        if head[:1] != b"$":
            return head[1:].decode()
        n = int(head[1:])
        while len(rest) < n + 2:
            chunk = s.recv(65536)
            if not chunk:
                raise OSError("closed")
            rest += chunk
        return rest[:n].decode()


def known_nodes(port):
    for line in resp_cmd(port, "CLUSTER", "INFO").splitlines():
        if line.startswith("cluster_known_nodes:"):
            return int(line.split(":")[1])
    return -1


def slot_map(port):
    """The slot ranges each node owns, as the node at port sees them."""
    out = {}
    for line in resp_cmd(port, "CLUSTER", "NODES").splitlines():
        f = line.split()
        if len(f) >= 8:
            out[f[1].split("@")[0]] = f[8:]
    return out


def owned_ranges(port):
    """The slot ranges, as (first, last), that the node at port owns."""
    out = []
    for r in slot_map(port).get(f"127.0.0.1:{port}", []):
        lo, _, hi = r.partition("-")
        if lo.isdigit():
            out.append((int(lo), int(hi or lo)))
    return out


def in_ranges(ranges, slot):
    return any(lo <= slot <= hi for lo, hi in ranges)


def settled(port):
    """Whether the node at port moves no slots: a load started while the
    joins' slots move gets TRYAGAIN for those being gated. And whether each
    of its backups holds the copies of its slots (INFO replication: no
    backup in state full_sync_due): a slot whose new owner is killed before
    its first full sync to the slot's backup is lost (docs/cluster.md,
    Safety: lost slots), and the kill timing mode would wait on it for ever."""
    info = resp_cmd(port, "INFO", "cluster")
    if not all(f"rl_cluster_handoff_{k}:0" in info for k in ("moves_in_progress", "slots_importing", "slots_migrating")):
        return False
    return "state=full_sync_due" not in resp_cmd(port, "INFO", "replication")


def wait_until(pred, limit=20.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            if pred():
                return True
        except OSError:
            pass
        time.sleep(0.02)
    return False


def start(args, binary=RLSTORE, procs=""):
    """Starts one rlstore; procs, if set, is its GOMAXPROCS."""
    env = dict(os.environ, GOMAXPROCS=procs) if procs else None
    return subprocess.Popen([binary, "--log-level", "warn"] + args + EXTRA,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def start_cluster(n, timing="lan", pprof="", binary=RLSTORE):
    """Starts n nodes joined to the first; returns [(proc, resp port)]."""
    nodes, seed = [], None
    for i in range(n):
        port, gport = free_port(), free_port()
        args = ["--port", str(port), "--node-name", f"n{i + 1}", "--cluster-addr", f"127.0.0.1:{gport}",
                "--cluster-timing", timing]
        if seed:
            args += ["--join", seed]
        if binary == RLSTORE or "BEFOREARGS" not in os.environ:
            args += os.environ.get("CLUSTERARGS", "").split()
        else:
            args += os.environ["BEFOREARGS"].split()
        if i == 0 and pprof:
            args += ["--pprof-addr", pprof]
        nodes.append((start(args, binary, os.environ.get("NODEPROCS", "")), port))
        seed = seed or f"127.0.0.1:{gport}"
    agree = lambda: len({str(sorted(slot_map(p).items())) for _, p in nodes}) == 1
    if (not all(wait_until(lambda p=p: known_nodes(p) == n) for _, p in nodes) or not wait_until(agree)
            or not all(wait_until(lambda p=p: settled(p)) for _, p in nodes)):
        stop([p for p, _ in nodes])
        sys.exit("cluster.py: the nodes did not see each other, or their slots did not settle, within 20 s")
    return nodes


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


# The clients, each a model of how a client reaches the cluster. A row's
# "× single" compares it with the same client against one node alone.
RLLOAD_ROWS = "rlload"
RB_ROWS = "redis-benchmark"
BYNODE_ROWS = "rlload ×3, by node"


def run_load(port, depth, dur, mode):
    """rlload against port; mode is "plain", "aware" (--cluster: each pipeline
    to one node, with keys it owns) or "split" (--cluster --cluster-split:
    each pipeline split per node). Returns (rate, requests, errors, first
    error, client CPU seconds) or None."""
    cmd = [RLLOAD, "run", "--addr", f"127.0.0.1:{port}", "-t", "rl.slide", "-P", str(depth), "-c", "50",
           "-r", "100000", "--limit", "100", "--duration", dur, "-q", "--json"]
    if mode != "plain":
        cmd.append("--cluster")
    if mode == "split":
        cmd.append("--cluster-split")
    out = subprocess.run(cmd, capture_output=True, text=True)
    try:
        j = json.loads(out.stdout)
    except ValueError:
        print("cluster.py: rlload failed:", out.stderr[:300], file=sys.stderr)
        return None
    return j["throughput"], j["requests"], j["errors"], j.get("first_error", ""), j.get("client_cpu_ns", 0) / 1e9


def tags_by_node(nodes):
    """A hash tag for each node of the cluster that the node owns: keys
    "{tag}..." all go to it."""
    out = []
    for _, port in nodes:
        own = owned_ranges(port)
        for i in range(10000):
            if in_ranges(own, int(resp_cmd(port, "CLUSTER", "KEYSLOT", f"{{t{i}}}"))):
                out.append(f"t{i}")
                break
    return out


def run_bynode(ports, tags, depth, dur):
    """Three rlload processes at once, the i-th sending keys "{tags[i]}..."
    to ports[i] (-c 17, 33,333 keys each, a fresh prefix per run): clients
    that each own a part of the keys and know its node. Returns what
    run_load returns, summed."""
    fresh = os.urandom(3).hex()
    procs = [subprocess.Popen([RLLOAD, "run", "--addr", f"127.0.0.1:{port}", "-t", "rl.slide", "-P", str(depth),
                               "-c", "17", "-r", "33333", "--prefix", f"{{{tag}}}{fresh}:", "--limit", "100",
                               "--duration", dur, "-q", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for port, tag in zip(ports, tags)]
    outs = [p.communicate() for p in procs]
    try:
        js = [json.loads(o) for o, _ in outs]
    except ValueError:
        print("cluster.py: rlload failed:", " ".join(e[:200] for _, e in outs), file=sys.stderr)
        return None
    first = next((j.get("first_error", "") for j in js if j["errors"]), "")
    return (sum(j["throughput"] for j in js), sum(j["requests"] for j in js), sum(j["errors"] for j in js), first,
            sum(j.get("client_cpu_ns", 0) for j in js) / 1e9)


def run_rb(port, depth, mode):
    """redis-benchmark against port, -c 50, 100k random keys; mode "aware"
    is --cluster, which gives each node's connections keys that node owns
    ({tag} becomes a tag of the node's: each node's keys share a slot).
    Returns what run_load returns, or None."""
    n = max(20000, int(os.environ.get("RBN", "500000")) * depth // 16)  # fewer without pipelining: as long a run
    key = "k:__rand_int__"
    cmd = ["redis-benchmark", "-p", str(port), "-c", "50", "-P", str(depth), "-n", str(n), "-r", "100000", "-q"]
    if mode == "aware":
        cmd.insert(1, "--cluster")
        key = "k:{tag}:__rand_int__"
    cmd += ["RL.SLIDE", key, "100", "60"]
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = (out.stdout + out.stderr).replace("\r", "\n")
    rates = re.findall(r"([\d.]+) requests per second", text)
    if out.returncode != 0 or not rates or "Error" in text:
        err = next((ln for ln in text.splitlines() if "Error" in ln), text.strip()[-200:])
        print("cluster.py: redis-benchmark failed:", err, file=sys.stderr)
        return None
    client = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
    return float(rates[-1]), n, 0, "", client


def load_row(res, rnd, row, depth, procs, r):
    """Records one run of row at depth (r is run_load's answer) and prints it."""
    if not r or not r[1]:
        return
    c0, c1 = procs
    rate, n, errors, first, client = r
    us = (sum(c1) - sum(c0)) * 1e6 / n
    per_node = " + ".join(f"{(b - a) * 1e6 / n:.2f}" for a, b in zip(c0, c1))
    res.setdefault((row, depth), []).append((rate, us, errors, client * 1e6 / n))
    first = f" (first: {first})" if errors else ""
    print(f"r{rnd} -P {depth} {row[0]} {row[1]}: {rate / 1e3:.1f}k/s, server CPU {us:.2f} µs/req"
          f" ({per_node} by node), {errors} errors{first}", file=sys.stderr, flush=True)


def throughput_alone(rounds, dur, depths):
    """ALONE=1: this build's cluster and BEFORE's, one at a time (above)."""
    modes = {"forwarded": "plain", "aware": "aware", "aware, split": "split"}
    keep = os.environ.get("ROWS", "aware").split(",")
    builds = [("", RLSTORE), (" before", os.environ["BEFORE"])]
    rows = [(RLLOAD_ROWS, name + suffix) for name in modes if name in keep for suffix, _ in builds]
    res = {}
    for rnd in range(rounds):
        for suffix, binary in (builds if rnd % 2 == 0 else builds[::-1]):
            nodes = start_cluster(3, binary=binary)
            procs = [p for p, _ in nodes]
            try:
                for depth in depths:
                    for name in (m for m in modes if m in keep):
                        c0 = [cpu(p.pid) for p in procs]
                        r = run_load(nodes[0][1], depth, dur, modes[name])
                        load_row(res, rnd, (RLLOAD_ROWS, name + suffix), depth, (c0, [cpu(p.pid) for p in procs]), r)
            finally:
                stop(procs)
    return depths, rows, res


def throughput():
    rounds = int(os.environ.get("ROUNDS", "2"))
    dur = os.environ.get("DUR", "3s")
    depths = [int(d) for d in os.environ.get("DEPTHS", "1,16").split(",")]
    if os.environ.get("BEFORE") and os.environ.get("ALONE") == "1":
        return throughput_alone(rounds, dur, depths)
    nodes = start_cluster(3, pprof=os.environ.get("PPROF", ""))
    sport = free_port()
    single = start(["--port", str(sport)])
    wait_until(lambda: resp_cmd(sport, "PING") == "PONG")
    cprocs = [p for p, _ in nodes]
    everyone = cprocs + [single]  # every process to stop at the end
    # (client, system): (processes whose CPU counts, port the client dials, mode)
    systems = {
        (RLLOAD_ROWS, "single"): ([single], sport, "plain"),
        (RLLOAD_ROWS, "forwarded"): (cprocs, nodes[0][1], "plain"),
        (RLLOAD_ROWS, "aware"): (cprocs, nodes[0][1], "aware"),
        (RLLOAD_ROWS, "aware, split"): (cprocs, nodes[0][1], "split"),
    }
    if os.environ.get("BYNODE", "1") != "0":
        tags = tags_by_node(nodes)
        systems[(BYNODE_ROWS, "single")] = ([single], [sport] * 3, "bynode")
        systems[(BYNODE_ROWS, "aware")] = (cprocs, [p for _, p in nodes], "bynode")
    if os.environ.get("RB", "1") != "0" and shutil.which("redis-benchmark"):
        systems[(RB_ROWS, "single")] = ([single], sport, "plain")
        systems[(RB_ROWS, "forwarded")] = (cprocs, nodes[0][1], "plain")
        systems[(RB_ROWS, "aware")] = (cprocs, nodes[0][1], "aware")
    if os.environ.get("BEFORE"):
        before = start_cluster(3, binary=os.environ["BEFORE"])
        bprocs = [p for p, _ in before]
        everyone += bprocs  # not cprocs: the rows of this build count only its own nodes' CPU
        systems[(RLLOAD_ROWS, "forwarded before")] = (bprocs, before[0][1], "plain")
        systems[(RLLOAD_ROWS, "aware before")] = (bprocs, before[0][1], "aware")
        if (RB_ROWS, "single") in systems:
            systems[(RB_ROWS, "forwarded before")] = (bprocs, before[0][1], "plain")
            systems[(RB_ROWS, "aware before")] = (bprocs, before[0][1], "aware")
    if os.environ.get("ROWS"):
        keep = set(os.environ["ROWS"].split(","))
        systems = {row: v for row, v in systems.items() if row[1].removesuffix(" before") in keep}
    res = {}
    try:
        for rnd in range(rounds):
            for depth in depths:
                order = list(systems)
                if rnd % 2:
                    order.reverse()
                for row in order:
                    procs, port, mode = systems[row]
                    each0 = [cpu(p.pid) for p in procs]
                    if row[0] == RB_ROWS:
                        r = run_rb(port, depth, mode)
                    elif mode == "bynode":
                        r = run_bynode(port, tags, depth, dur)
                    else:
                        r = run_load(port, depth, dur, mode)
                    load_row(res, rnd, row, depth, (each0, [cpu(p.pid) for p in procs]), r)
    finally:
        stop(everyone)
    return depths, list(systems), res


def serves(port, key):
    """Whether the node at port answers RL.SLIDE on key with a decision (an
    array), not an error such as -CLUSTERDOWN."""
    with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
        args = [b"RL.SLIDE", key.encode(), b"1000000000", b"60"]
        s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
        return s.recv(1)[:1] == b"*"


def detect(timing, kills):
    """Kills one node of three kills times; returns, for each kill, the
    seconds until both survivors show two nodes, and until both serve a key
    of the dead node's slots (after the death's confirmation by a majority
    and the takeover's wait), or None where that did not happen in 30 s."""
    times = []
    for _ in range(kills):
        nodes = start_cluster(3, timing)
        victim, survivors = nodes[2][0], [p for _, p in nodes[:2]]
        key = "{" + tags_by_node(nodes)[2] + "}detect"
        t0 = time.monotonic()
        victim.send_signal(signal.SIGKILL)
        ok = wait_until(lambda: all(known_nodes(p) == 2 for p in survivors), 30.0)
        dt = time.monotonic() - t0
        served = wait_until(lambda: all(serves(p, key) for p in survivors), max(0.0, 30.0 - dt))
        ds = time.monotonic() - t0
        stop([p for p, _ in nodes])
        times.append((dt if ok else None, ds if served else None))
        print(f"detect {timing}: {dt:.2f} s" + ("" if ok else " (not detected)") +
              f", served {ds:.2f} s" + ("" if served else " (not served)"), file=sys.stderr, flush=True)
    return times


def fmt_rate(v):
    return f"{v / 1e3:.0f}k"


def main():
    print("## " + os.environ.get("TITLE", "Cluster") + "\n")
    print("Produced by `python3 loadtest/cluster.py` (run by `bash loadtest/bench.sh`): every rlstore is its")
    print("own process on loopback, sharing the machine's cores with each other and with the client.")
    setup = []
    if os.environ.get("CLUSTERARGS"):
        setup.append(f"flags `{os.environ['CLUSTERARGS']}`")
    if os.environ.get("NODEPROCS"):
        setup.append(f"`GOMAXPROCS={os.environ['NODEPROCS']}` (one node alone keeps Go's default)")
    if setup:
        print("The cluster's nodes ran with " + " and ".join(setup) + ".")
    print(f"Load at start: {open('/proc/loadavg').read().split()[0]}.\n")
    if os.environ.get("THROUGHPUT", "1") != "0":
        depths, rows, res = throughput()
        print("RL.SLIDE on 100k random keys, 50 connections, against one node alone (single), against node 1 of a")
        print("3-node cluster with plain clients (forwarded: two thirds of the keys belong to the other nodes and")
        print("are forwarded to them), and with cluster-aware clients (aware: each key goes straight to its owner).")
        print("The clients:\n")
        print("- `rlload run -t rl.slide -c 50 -r 100000`; aware is `--cluster`: each client has a connection per node")
        print("  and sends each node pipelines of -P keys that node owns, as clients that batch per node do (ioredis")
        print("  auto-pipelining, redis-benchmark --cluster); aware, split is `--cluster --cluster-split`: each")
        print("  pipeline of -P keys is split per node as go-redis `ClusterClient` splits it, about -P/3 to each node;")
        print("- `redis-benchmark -c 50 -r 100000 RL.SLIDE k:__rand_int__ 100 60` (its -n requests); aware is")
        print("  `--cluster` with the key `k:{tag}:__rand_int__`: its connections are spread over the nodes, each")
        print("  with full pipelines of its node's keys (which share one slot per node);")
        print("- rlload ×3, by node: three rlload processes at once, each `-c 17 -r 33333` with keys `{tag}...` of")
        print("  a tag one node owns, sent to that node (aware) or all to the single node: applications that each")
        print("  own a part of the keys, with the work of routing them left out of the client.\n")
        print("× single compares a row with the same client against the single node. Each cell is the median of")
        print("the rounds, run alternately; server CPU is that of every node of the system, per request; the")
        print("client's own CPU shares the same cores.\n")
        print("| -P | client | system | decisions/s | × single | server CPU per request | client CPU per request | errors |")
        print("|---|---|---|---|---|---|---|---|")
        for depth in depths:
            for row in rows:
                runs = res.get((row, depth), [])
                if not runs:
                    continue
                base = med([r[0] for r in res.get(((row[0], "single"), depth), [])])
                thr, us, cus = med([r[0] for r in runs]), med([r[1] for r in runs]), med([r[3] for r in runs])
                ratio = f"{thr / base:.2f}×" if base else "-"
                rates = ", ".join(fmt_rate(r[0]) for r in runs)
                print(f"| {depth} | {row[0]} | {row[1]} | {fmt_rate(thr)} ({rates}) | {ratio} | {us:.2f} µs | {cus:.2f} µs"
                      f" | {sum(r[2] for r in runs)} |")
        print()
        if os.environ.get("BEFORE"):
            print_before(depths, rows, res)
    kills = int(os.environ.get("DETECT", "3"))
    if kills > 0:
        print("Failure detection and takeover: 3 nodes, one killed with SIGKILL; seconds until both survivors'")
        print("`CLUSTER INFO` show two nodes (detected), and until both answer `RL.SLIDE` on a key of the dead node's")
        print("slots with a decision (served: after a majority confirms the death and the takeover's wait):\n")
        print("| --cluster-timing | detected, each kill | max | served, each kill | max |")
        print("|---|---|---|---|---|")
        for timing in os.environ.get("TIMINGS", "lan,fast").split(","):
            t = detect(timing, kills)
            cols = []
            for i in range(2):
                xs = [x[i] for x in t]
                cols.append(", ".join("-" if x is None else f"{x:.2f}" for x in xs))
                got = [x for x in xs if x is not None]
                cols.append(f"{max(got):.2f}" if got else "-")
            print(f"| {timing} | " + " | ".join(cols) + " |")
        print()


def print_before(depths, rows, res):
    """Each row against its "before" row: the ratio of the medians, and the
    median of the rounds' own ratios (round i of one against round i of the
    other, which ran next to it)."""
    print("Against BEFORE: this build's median over the before build's, and in brackets the median of the")
    print("rounds' own ratios:\n")
    print("| -P | client | system | decisions/s, × before | server CPU per request, × before |")
    print("|---|---|---|---|---|")
    for depth in depths:
        for row in rows:
            runs, old = res.get((row, depth), []), res.get(((row[0], row[1] + " before"), depth), [])
            if not runs or not old:
                continue
            cols = []
            for i in (0, 1):
                pairs = [a[i] / b[i] for a, b in zip(runs, old) if b[i]]
                cols.append(f"{med([r[i] for r in runs]) / med([r[i] for r in old]):.3f}× ({med(pairs):.3f}×)")
            print(f"| {depth} | {row[0]} | {row[1]} | {cols[0]} | {cols[1]} |")
    print()


def med(xs):
    xs = sorted(xs)
    if not xs:
        return 0
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


if __name__ == "__main__":
    main()
