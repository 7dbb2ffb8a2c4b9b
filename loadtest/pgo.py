#!/usr/bin/env python3
# Writes cmd/rlstore/default.pgo, the CPU profile `go build` uses for
# profile-guided optimization of rlstore (-pgo=auto, Go's default): Go
# inlines the calls the profile shows hot and lays out their code for them.
#
# It starts a 3-node cluster of RLSTORE (a build without PGO, -pgo=off, so
# the profile is the plain code's) with --pprof-addr on every node, and
# runs the loads docs/performance.md measures, each while every node takes
# a CPU profile: rlload --cluster at -P 16 and -P 1 (each node decides its
# own keys and ships them to their backups, and imports the copies of the
# others'), and plain rlload at -P 16 on node 1 (two thirds forwarded).
# The nodes' profiles are merged into one.
#
#   go build -pgo=off -trimpath -o /tmp/rlstore-nopgo ./cmd/rlstore
#   go build -o /tmp/rlload ./loadtest/cmd/rlload
#   RLSTORE=/tmp/rlstore-nopgo RLLOAD=/tmp/rlload python3 loadtest/pgo.py
#
# Optional: OUT (cmd/rlstore/default.pgo), SECS (10: seconds per load).
# Refresh it when the hot path changes much; a stale profile costs only the
# optimizations it no longer finds (Go matches it by function and line).
import os, subprocess, sys, tempfile, threading, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster as c  # noqa: E402

SECS = int(os.environ.get("SECS", "10"))
OUT = os.environ.get("OUT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cmd", "rlstore",
                                         "default.pgo"))


def start3():
    """Three nodes joined to the first, each serving pprof; returns
    ([(proc, resp port)], [pprof address])."""
    nodes, pprofs, seed = [], [], None
    for i in range(3):
        port, gport, pp = c.free_port(), c.free_port(), f"127.0.0.1:{c.free_port()}"
        args = ["--port", str(port), "--node-name", f"n{i + 1}", "--cluster-addr", f"127.0.0.1:{gport}",
                "--cluster-timing", "lan", "--pprof-addr", pp]
        if seed:
            args += ["--join", seed]
        nodes.append((c.start(args), port))
        pprofs.append(pp)
        seed = seed or f"127.0.0.1:{gport}"
    if not all(c.wait_until(lambda p=p: c.known_nodes(p) == 3 and c.settled(p)) for _, p in nodes):
        c.stop([p for p, _ in nodes])
        sys.exit("pgo.py: the cluster did not settle within 20 s")
    return nodes, pprofs


def profile_during(pprofs, load, dir, name):
    """Runs load() while every node takes a CPU profile of SECS seconds."""
    files = [os.path.join(dir, f"{name}.{i}.pb.gz") for i in range(len(pprofs))]

    def grab(pp, f):
        url = f"http://{pp}/debug/pprof/profile?seconds={SECS}"
        open(f, "wb").write(urllib.request.urlopen(url, timeout=SECS + 30).read())

    threads = [threading.Thread(target=grab, args=(pp, f)) for pp, f in zip(pprofs, files)]
    for t in threads:
        t.start()
    r = load()
    for t in threads:
        t.join()
    print(f"pgo.py: {name}: {r[0] / 1e3:.0f}k decisions/s" if r else f"pgo.py: {name}: rlload failed",
          file=sys.stderr)
    return files


def main():
    nodes, pprofs = start3()
    dur = f"{SECS + 1}s"
    port = nodes[0][1]
    files = []
    try:
        with tempfile.TemporaryDirectory() as dir:
            for name, depth, mode in (("aware16", 16, "aware"), ("aware1", 1, "aware"), ("plain16", 16, "plain")):
                files += profile_during(pprofs, lambda: c.run_load(port, depth, dur, mode), dir, name)
            merged = subprocess.run(["go", "tool", "pprof", "-proto"] + files, capture_output=True, check=True)
            open(OUT, "wb").write(merged.stdout)
    finally:
        c.stop([p for p, _ in nodes])
    print(f"pgo.py: wrote {os.path.normpath(OUT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
