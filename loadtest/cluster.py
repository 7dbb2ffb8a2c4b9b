#!/usr/bin/env python3
# Cluster throughput and failure detection, side by side in one run, on
# loopback. Prints a Markdown "## Cluster" section (bench.sh appends it to
# BENCHMARKS.md).
#
# Throughput: a 3-node cluster and one node alone, each rlstore its own
# process on free ports, all driven by rlload (rl.slide, 50 clients, 100k
# random keys) at -P 1 and -P 16, alternating the order each round:
#   single     - one node alone, the baseline;
#   forwarded  - plain clients all on node 1: two thirds of the keys are
#                owned by the other nodes and forwarded to them;
#   aware      - rlload --cluster: each client reads the slot map and sends
#                each key straight to its owner (a connection per node).
# Server CPU per request is the utime+stime of every rlstore process of the
# system (/proc/<pid>/stat) over the run, divided by the requests served.
#
# Failure detection: 3 nodes at --cluster-timing lan and fast; one is
# killed with SIGKILL, and the time until both survivors' CLUSTER INFO show
# two nodes is printed.
#
#   go build -o /tmp/rlstore ./cmd/rlstore && go build -o /tmp/rlload ./loadtest/cmd/rlload
#   RLSTORE=/tmp/rlstore RLLOAD=/tmp/rlload python3 loadtest/cluster.py
# Optional: ROUNDS (2), DUR (3s), DEPTHS (1,16), DETECT (3: kills per timing,
# 0: none), THROUGHPUT (1; 0: skip), RLARGS (flags for every rlstore),
# CLUSTERARGS (flags for the cluster's nodes only, e.g. --replicas 0; not
# for BEFORE's),
# PPROF (host:port: node 1 of the cluster serves --pprof-addr there),
# BEFORE (another rlstore binary: a second cluster of it adds the rows
# "forwarded before" and "aware before", to compare two builds in one run).
import json, os, signal, socket, subprocess, sys, time

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


def start(args, binary=RLSTORE):
    return subprocess.Popen([binary, "--log-level", "warn"] + args + EXTRA,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_cluster(n, timing="lan", pprof="", binary=RLSTORE):
    """Starts n nodes joined to the first; returns [(proc, resp port)]."""
    nodes, seed = [], None
    for i in range(n):
        port, gport = free_port(), free_port()
        args = ["--port", str(port), "--node-name", f"n{i + 1}", "--cluster-addr", f"127.0.0.1:{gport}",
                "--cluster-timing", timing]
        if seed:
            args += ["--join", seed]
        if binary == RLSTORE:
            args += os.environ.get("CLUSTERARGS", "").split()
        if i == 0 and pprof:
            args += ["--pprof-addr", pprof]
        nodes.append((start(args, binary), port))
        seed = seed or f"127.0.0.1:{gport}"
    agree = lambda: len({str(sorted(slot_map(p).items())) for _, p in nodes}) == 1
    if not all(wait_until(lambda p=p: known_nodes(p) == n) for _, p in nodes) or not wait_until(agree):
        stop([p for p, _ in nodes])
        sys.exit("cluster.py: the nodes did not see each other within 20 s")
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


def run_load(port, depth, dur, aware):
    cmd = [RLLOAD, "run", "--addr", f"127.0.0.1:{port}", "-t", "rl.slide", "-P", str(depth), "-c", "50",
           "-r", "100000", "--limit", "100", "--duration", dur, "-q", "--json"]
    if aware:
        cmd.append("--cluster")
    out = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return json.loads(out.stdout)
    except ValueError:
        print("cluster.py: rlload failed:", out.stderr[:300], file=sys.stderr)
        return None


def throughput():
    rounds = int(os.environ.get("ROUNDS", "2"))
    dur = os.environ.get("DUR", "3s")
    depths = [int(d) for d in os.environ.get("DEPTHS", "1,16").split(",")]
    nodes = start_cluster(3, pprof=os.environ.get("PPROF", ""))
    sport = free_port()
    single = start(["--port", str(sport)])
    wait_until(lambda: resp_cmd(sport, "PING") == "PONG")
    cprocs = [p for p, _ in nodes]
    systems = {  # name: (processes whose CPU counts, port rlload dials, cluster-aware)
        "single": ([single], sport, False),
        "forwarded": (cprocs, nodes[0][1], False),
        "aware": (cprocs, nodes[0][1], True),
    }
    if os.environ.get("BEFORE"):
        before = start_cluster(3, binary=os.environ["BEFORE"])
        bprocs = [p for p, _ in before]
        cprocs += bprocs
        systems["forwarded before"] = (bprocs, before[0][1], False)
        systems["aware before"] = (bprocs, before[0][1], True)
    res = {}
    try:
        for rnd in range(rounds):
            for depth in depths:
                order = list(systems)
                if rnd % 2:
                    order.reverse()
                for name in order:
                    procs, port, aware = systems[name]
                    c0 = sum(cpu(p.pid) for p in procs)
                    j = run_load(port, depth, dur, aware)
                    c1 = sum(cpu(p.pid) for p in procs)
                    if not j or not j["requests"]:
                        continue
                    us = (c1 - c0) * 1e6 / j["requests"]
                    client_us = j.get("client_cpu_ns", 0) / 1e3 / j["requests"]
                    res.setdefault((name, depth), []).append((j["throughput"], us, j["errors"], client_us))
                    first = f" (first: {j.get('first_error', '')})" if j["errors"] else ""
                    print(f"r{rnd} -P {depth} {name}: {j['throughput'] / 1e3:.1f}k/s, server CPU {us:.2f} µs/req,"
                          f" {j['errors']} errors{first}", file=sys.stderr, flush=True)
    finally:
        stop(cprocs + [single])
    return depths, res


def detect(timing, kills):
    times = []
    for _ in range(kills):
        nodes = start_cluster(3, timing)
        victim, survivors = nodes[2][0], [p for _, p in nodes[:2]]
        t0 = time.monotonic()
        victim.send_signal(signal.SIGKILL)
        ok = wait_until(lambda: all(known_nodes(p) == 2 for p in survivors), 30.0)
        dt = time.monotonic() - t0
        stop([p for p, _ in nodes])
        if ok:
            times.append(dt)
        print(f"detect {timing}: {dt:.2f} s" + ("" if ok else " (not detected)"), file=sys.stderr, flush=True)
    return times


def fmt_rate(v):
    return f"{v / 1e3:.0f}k"


def main():
    print("## Cluster\n")
    print("Produced by `python3 loadtest/cluster.py` (run by `bash loadtest/bench.sh`): every rlstore is its")
    print("own process on loopback, sharing the machine's cores with each other and with rlload.")
    print(f"Load at start: {open('/proc/loadavg').read().split()[0]}.\n")
    if os.environ.get("THROUGHPUT", "1") != "0":
        depths, res = throughput()
        print("`rlload run -t rl.slide -c 50 -r 100000` against one node alone (single), against node 1 of a")
        print("3-node cluster with plain clients (forwarded: two thirds of the keys belong to the other nodes),")
        print("and with `--cluster` (aware: each client sends each key to its owner over a connection per node).")
        print("Each cell is the median of the rounds, run alternately; server CPU is that of every node of the")
        print("system, per request; rlload's own CPU shares the same cores.\n")
        print("| -P | system | decisions/s | × single | server CPU per request | rlload CPU per request | errors |")
        print("|---|---|---|---|---|---|---|")
        for depth in depths:
            base = med([r[0] for r in res.get(("single", depth), [])])
            for name in ("single", "forwarded", "aware", "forwarded before", "aware before"):
                runs = res.get((name, depth), [])
                if not runs:
                    continue
                thr, us, cus = med([r[0] for r in runs]), med([r[1] for r in runs]), med([r[3] for r in runs])
                ratio = f"{thr / base:.2f}×" if base else "-"
                rates = ", ".join(fmt_rate(r[0]) for r in runs)
                print(f"| {depth} | {name} | {fmt_rate(thr)} ({rates}) | {ratio} | {us:.2f} µs | {cus:.2f} µs | {sum(r[2] for r in runs)} |")
        print()
    kills = int(os.environ.get("DETECT", "3"))
    if kills > 0:
        print("Failure detection: 3 nodes, one killed with SIGKILL, time until both survivors' `CLUSTER INFO`")
        print("show two nodes (after which the dead node's slots belong to their new owners):\n")
        print("| --cluster-timing | seconds, each kill | max |")
        print("|---|---|---|")
        for timing in ("lan", "fast"):
            t = detect(timing, kills)
            each = ", ".join(f"{x:.2f}" for x in t) or "-"
            print(f"| {timing} | {each} | {max(t):.2f} |" if t else f"| {timing} | not detected | - |")
        print()


def med(xs):
    xs = sorted(xs)
    if not xs:
        return 0
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


if __name__ == "__main__":
    main()
