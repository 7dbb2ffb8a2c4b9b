#!/usr/bin/env python3
# Tail latency without pipelining, side by side in one run: rlstore RL.SLIDE
# against Redis+Lua's sliding window, rlload at -P 1 with 50 connections,
# alternating the order each round. Each system runs twice a round on one
# key prefix: "fill", while its 100k keys are new, then "steady", once a
# sequential pass has created every key. For rlstore it also reads, from
# --metrics-addr, the garbage collections and the stop-the-world pauses
# longer than 0.5 ms during each run; and for every run the load
# generator's own CPU per request, since it shares the cores.
#   go build -o /tmp/rlstore ./cmd/rlstore && go build -o /tmp/rlload ./loadtest/cmd/rlload
#   BIN=/tmp/rlstore RLLOAD=/tmp/rlload python3 loadtest/p99side.py
# Optional: ROUNDS (3), DUR (4s), VARIANTS: rlstore runs to compare, as
# "name=ENV=value ...;name2=BIN=/other/binary" (default "rlstore=");
# FRESH=1 starts every server anew each round, so each fill is a fresh
# server's first; PHASES ("fill,steady") picks the runs; RATE (requests a
# second) makes the measured runs open-loop at that total rate, the same
# for every server, so a faster server does not also load the shared cores
# (and the load generator) more; latency then counts from each request's
# due time. "sched p99" is the
# 99th percentile of Go's wait for a core (/sched/latencies) during the run,
# and "cmd p99"/"p999" those of the command's own time in the server, from its
# request's read to its reply, as a bucket bound of
# rlstore_command_duration_seconds: what the client sees beyond it is
# queueing for a core, the kernel and the client.
# "core wait" is the time the server's threads were runnable but waited
# for a core in the kernel (their run delay in /proc/PID/task/*/schedstat),
# per request, and "preempted" how often the kernel took a core from them.
# BEFORE=/path/to/rlstore adds a run named "before" of that binary (a build
# of main, say) beside the default one, so two builds meet the same host.
import json, os, re, resource, socket, subprocess, sys, time, urllib.request

RLLOAD = os.environ.get("RLLOAD", "rlload")
DUR = os.environ.get("DUR", "4s")


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / 100.0


def kernel_waits(pid):
    """The ns the process's threads spent runnable but waiting for a core
    (the kernel's run delay, /proc/PID/task/*/schedstat), and how many times
    the kernel took a core from them (nonvoluntary context switches)."""
    delay = switches = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            delay += int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[1])
            st = open(f"/proc/{pid}/task/{tid}/status").read()
            switches += int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", st, re.M).group(1))
        except (OSError, AttributeError, IndexError):
            pass  # a thread that ended meanwhile
    return delay, switches


def buckets(t, name):
    """A cumulative histogram from /metrics, by bucket bound."""
    return {float(x.group(1)): int(x.group(2)) for x in
            re.finditer(r'^' + name + r'_bucket\{le="([^"+]+)"\} (\d+)', t, re.M)}


def gc_stats(mport, cmd):
    """Collections so far, and by bucket bound GC pauses, scheduling latencies
    and cmd's own durations, from /metrics."""
    if not mport:
        return 0, {}, {}, {}
    t = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics").read().decode()
    m = re.search(r"^go_gc_cycles_total_gc_cycles_total (\d+)", t, re.M) or \
        re.search(r"^go_gc_duration_seconds_count (\d+)", t, re.M)
    own = {float(x.group(1)): int(x.group(2)) for x in re.finditer(
        r'^rlstore_command_duration_seconds_bucket\{command="' + re.escape(cmd) +
        r'",le="([^"+]+)"\} (\d+)', t, re.M)}
    return (int(m.group(1)) if m else 0), buckets(t, "go_gc_pauses_seconds"), \
        buckets(t, "go_sched_latencies_seconds"), own


def quantile(h0, h1, q):
    """The bucket bound below which a fraction q of the samples between h0 and h1 fall."""
    d = sorted((k, v - h0.get(k, 0)) for k, v in h1.items())
    total = d[-1][1] if d else 0
    return next((k for k, v in d if total and v >= q * total), 0.0)


def client_cpu():
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def load(port, wl, prefix, extra):
    out = subprocess.run([RLLOAD, "run", "--addr", f"127.0.0.1:{port}", "-t", wl, "-P", "1", "-c", "50",
                          "-r", "100000", "--limit", "1000", "--prefix", prefix, "-q", "--json"] + extra,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def variants():
    """The rlstore runs: VARIANTS, plus "before" when BEFORE names a binary."""
    v = os.environ.get("VARIANTS", "rlstore=")
    if os.environ.get("BEFORE"):
        v += ";before=BIN=" + os.environ["BEFORE"]
    return v.split(";")


def start_systems():
    systems = []
    for spec in variants():
        name, extra = spec.split("=", 1)
        env, binp = dict(os.environ), os.environ.get("BIN", "rlstore")
        for kv in extra.split():
            k, v = kv.split("=", 1)
            if k == "BIN":
                binp = v
            else:
                env[k] = v
        port, mport = free_port(), free_port()
        p = subprocess.Popen([binp, "--port", str(port), "--log-level", "error", "--metrics-addr",
                              f"127.0.0.1:{mport}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        systems.append((name, port, "rl.slide", p, mport))
    port = free_port()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                         stdout=subprocess.DEVNULL)
    systems.append(("redis+lua", port, "lua.slide", p, 0))
    return systems


def stop(systems):
    for s in systems:
        s[3].terminate()
    for s in systems:
        s[3].wait()


def measure(rnd, name, port, wl, proc, mport, prefix, phase):
    """One measured run: prints its line and returns its p99 in ms."""
    if phase == "steady":  # every key exists before the measured run
        load(port, wl, prefix, ["--dist", "seq", "-n", "100000", "--duration", "0"])
    cmd = wl if mport else ""  # the workload is named after its command
    g0, p0, s0, o0 = gc_stats(mport, cmd)
    c0, k0, w0 = cpu(proc.pid), client_cpu(), kernel_waits(proc.pid)
    rate = ["--rate", os.environ["RATE"]] if os.environ.get("RATE") else []
    j = load(port, wl, prefix, ["--duration", DUR] + rate)
    c1, k1, w1 = cpu(proc.pid), client_cpu(), kernel_waits(proc.pid)
    g1, p1, s1, o1 = gc_stats(mport, cmd)
    n = max(j["requests"], 1)
    d = {k: v - p0.get(k, 0) for k, v in p1.items()}
    pauses = max(d.values(), default=0)
    long = pauses - max([v for k, v in d.items() if k <= 0.0005], default=0)
    lat = {k: v / 1e6 for k, v in j["latency"].items()}
    own = f", cmd p99 {quantile(o0, o1, 0.99)*1e6:.0f} p999 {quantile(o0, o1, 0.999)*1e6:.0f} us" if o1 else ""
    print(f"r{rnd} {name:10s} {phase:6s} {j['throughput']/1e3:5.0f}k/s "
          f"p50 {lat['p50_ns']:.2f} p99 {lat['p99_ns']:.2f} p999 {lat['p999_ns']:.2f} "
          f"max {lat['max_ns']:.1f} ms | server {(c1-c0)*1e6/n:.2f} us/req, "
          f"client {(k1-k0)*1e6/n:.2f} us/req, core wait {(w1[0]-w0[0])/1e3/n:.2f} us/req, "
          f"preempted {(w1[1]-w0[1])*1e3/n:.1f}/1k req | GCs {g1-g0}, pauses {pauses}, "
          f">0.5ms {long}, sched p99 {quantile(s0, s1, 0.99)*1e3:.2f} ms{own}", flush=True)
    return lat["p99_ns"]


def summary(p99s, names, phases, rounds):
    """For each rlstore run and phase: the rounds whose p99 was at or below the script's."""
    for name in names:
        for phase in phases:
            pairs = [(p99s[(r, name, phase)], p99s[(r, "redis+lua", phase)]) for r in range(rounds)
                     if (r, name, phase) in p99s and (r, "redis+lua", phase) in p99s]
            below = sum(1 for a, b in pairs if a <= b)
            ratios = sorted(a / b for a, b in pairs if b)
            med = f", median p99 / Redis+Lua's {ratios[len(ratios) // 2]:.2f}" if ratios else ""
            print(f"{name} {phase}: p99 at or below Redis+Lua's in {below} of {len(pairs)} rounds{med}")


def main():
    fresh = os.environ.get("FRESH") == "1"
    phases = os.environ.get("PHASES", "fill,steady").split(",")
    rounds = int(os.environ.get("ROUNDS", "3"))
    systems = start_systems()
    time.sleep(1.0)
    print("load average", open("/proc/loadavg").read().split()[:3], flush=True)
    p99s = {}
    try:
        for rnd in range(rounds):
            if fresh and rnd > 0:
                stop(systems)
                systems = start_systems()
                time.sleep(1.0)
            order = systems if rnd % 2 == 0 else systems[::-1]
            for name, port, wl, proc, mport in order:
                for phase in phases:
                    p99s[(rnd, name, phase)] = measure(rnd, name, port, wl, proc, mport, f"p99r{rnd}:", phase)
    finally:
        stop(systems)
        print("load average", open("/proc/loadavg").read().split()[:3], flush=True)
    summary(p99s, [s[0] for s in systems if s[0] != "redis+lua"], phases, rounds)


if __name__ == "__main__":
    sys.exit(main())
