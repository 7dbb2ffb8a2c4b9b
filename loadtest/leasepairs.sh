#!/usr/bin/env bash
# Measures lease and reservation pairs side by side: redis-server running
# the sorted-set Lua of loadtest/cmd/leasepairs, and rlstore's RL.ACQUIRE +
# RL.RELEASE and RL.RESERVE + RL.COMMIT. Each run prints pairs per second
# (the issue's metric, at -P 16: 16 commands in flight on each
# connection), the server's CPU (utime + stime from /proc/PID/stat) per
# pair, how busy the server's core was, and the client's CPU per pair.
#
# So that the ratio is decidable on a small shared host:
#   - every server runs pinned to one core (SERVER_CPU, 0) and the client
#     to another (CLIENT_CPU, 1), with taskset: Redis serves commands on one
#     thread, and rlstore on one core gets GOMAXPROCS=1, so each server has
#     exactly one core and never competes with its own load;
#   - where other work shares those cores, pinning alone is not enough:
#     at a load of 10 on 2 cores each side waited for its turn after every
#     wakeup, and neither core was a third busy (Lua 16k-30k pairs/s).
#     CHRT=1, as root, runs the servers and the client at a real-time
#     priority (SCHED_RR 1): they run as soon as they are woken, each core
#     was then about 90% busy, and the rounds agreed within a few percent.
#     Linux keeps 5% of each core for the other tasks (sched_rt_runtime_us),
#     so the host stays usable, if slow, for the minutes this takes;
#   - the runs of a round go in order, the next round's in reverse (A B, B
#     A, ...), so that a drift of the host's load falls on both sides;
#   - each rlstore mode's ratios to Lua's pairs/s and CPU per pair are taken
#     within a round, and the end prints their median and range over the
#     rounds. The server's core's busy share says who set the pace: below
#     about 85% it was the client or the scheduler, not the server, and
#     CPU per pair is then the steadier ratio (1 / CPU per pair is the
#     pairs/s of a saturated core).
# A progress line goes to stderr before each run; the runs take about
# ROUNDS * runs * (DUR + 1s) after the builds, each bounded by a timeout.
#
# Environment: ROUNDS (5), DUR (6s), CONNS (50), DEPTH (16), MODES (the
# rlstore modes, "native reserve"; "fixed" and "ping" are floors: two
# RL.FIXED or two PING a pair), REDIS_MODES ("lua"; "ping" is Redis's
# floor), NOW (an rlstore binary to measure instead of building this
# tree's), BEFORE (a second rlstore binary, measured in the same rounds as
# "before"), SERVER_CPU and CLIENT_CPU (the cores; PIN=0 pins nothing),
# CHRT (a SCHED_RR priority for the servers and the client, as above),
# NICE (a niceness for them instead, e.g. -15: it did not help at a load of
# 10), PROFILE (a directory: a Go CPU profile of each rlstore mode's last
# round is written there as <build>-<mode>.pprof).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
rounds=${ROUNDS:-5}
dur=${DUR:-6s}
conns=${CONNS:-50}
depth=${DEPTH:-16}
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
if [ -n "${NOW:-}" ]; then
	cp "$NOW" "$tmp/rlstore"
else
	go build -o "$tmp/rlstore" ./cmd/rlstore
fi
go build -o "$tmp/leasepairs" ./loadtest/cmd/leasepairs
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
waitport() {
	for _ in $(seq 100); do
		redis-cli -p "$1" PING >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "leasepairs.sh: nothing answers on port $1" >&2
	return 1
}
srv=() cli=()
if [ "${PIN:-1}" = 1 ] && [ "$(nproc)" -ge 2 ]; then
	srv=(taskset -c "${SERVER_CPU:-0}")
	cli=(taskset -c "${CLIENT_CPU:-1}")
fi
if [ -n "${CHRT:-}" ]; then
	srv=(chrt -r "$CHRT" "${srv[@]}")
	cli=(chrt -r "$CHRT" "${cli[@]}")
fi
if [ -n "${NICE:-}" ]; then
	srv=(nice -n "$NICE" "${srv[@]}")
	cli=(nice -n "$NICE" "${cli[@]}")
fi

declare -A port pid
rport=$(freeport)
"${srv[@]}" redis-server --port "$rport" --save '' --appendonly no --daemonize no --loglevel warning >/dev/null &
pids+=($!)
pid[lua]=$!
port[lua]=$rport
waitport "$rport"
builds=(now)
bins[0]=$tmp/rlstore
if [ -n "${BEFORE:-}" ]; then
	builds+=(before)
	bins[1]=$BEFORE
fi
for i in "${!builds[@]}"; do
	b=${builds[$i]}
	p=$(freeport)
	pp=$(freeport)
	"${srv[@]}" "${bins[$i]}" --port "$p" --pprof-addr "127.0.0.1:$pp" --log-level warn &
	pids+=($!)
	pid[$b]=$!
	port[$b]=$p
	port[$b-pprof]=$pp
	waitport "$p"
done
hz=$(getconf CLK_TCK)
secs=${dur%s}
runs=()
for m in ${REDIS_MODES:-lua}; do runs+=("redis:$m"); done
for b in "${builds[@]}"; do for m in ${MODES:-native reserve}; do runs+=("$b:$m"); done; done
total=$((rounds * ${#runs[@]}))
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); conns=$conns P=$depth dur=$dur rounds=$rounds; pinned: ${srv[*]:-none} (servers), ${cli[*]:-none} (client); about $((total * (secs + 1)))s"
results=$tmp/results # round run pairs/s cpu_us busy%
t0all=$(date +%s)
k=0
for r in $(seq "$rounds"); do
	order=("${runs[@]}")
	if [ $((r % 2)) = 0 ]; then # every other round in reverse: A B, B A
		order=()
		for ((i = ${#runs[@]} - 1; i >= 0; i--)); do order+=("${runs[$i]}"); done
	fi
	for run in "${order[@]}"; do
		k=$((k + 1))
		el=$(($(date +%s) - t0all))
		echo "leasepairs.sh: [$k/$total] round $r $run (${el}s gone, about $(((total - k + 1) * (secs + 1)))s left)" >&2
		b=${run%%:*} mode=${run#*:}
		[ "$b" = redis ] && b=lua
		t0=$(ticks "${pid[$b]}")
		w0=$(date +%s%N)
		prof=""
		if [ -n "${PROFILE:-}" ] && [ "$b" != lua ] && [ "$r" = "$rounds" ]; then
			mkdir -p "$PROFILE"
			curl -s -o "$PROFILE/$b-$mode.pprof" "http://127.0.0.1:${port[$b-pprof]}/debug/pprof/profile?seconds=$((secs - 1))" &
			prof=$!
		fi
		out=$(timeout $((secs + 60)) "${cli[@]}" "$tmp/leasepairs" -addr "127.0.0.1:${port[$b]}" -mode "$mode" -conns "$conns" -P "$depth" -duration "$dur")
		[ -n "$prof" ] && wait "$prof"
		t1=$(ticks "${pid[$b]}")
		w1=$(date +%s%N)
		n=$(sed -E 's/.*: ([0-9]+) pairs in.*/\1/' <<<"$out")
		rate=$(sed -E 's/.*= ([0-9]+) pairs\/s.*/\1/' <<<"$out")
		client=$(sed -E 's/.*client CPU ([0-9.]+) us.*/\1/' <<<"$out")
		us=$(awk -v d="$((t1 - t0))" -v n="$n" -v hz="$hz" 'BEGIN{printf "%.2f", d / hz * 1e6 / n}')
		busy=$(awk -v d="$((t1 - t0))" -v hz="$hz" -v w="$((w1 - w0))" 'BEGIN{printf "%.0f", d / hz / (w / 1e9) * 100}')
		echo "$r $run $rate $us $busy" >>"$results"
		printf 'round %d %-16s %8s pairs/s %7s us CPU/pair, server core %3s%% busy (client %s us)\n' "$r" "$run" "$rate" "$us" "$busy" "$client"
	done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
# Within each round, each rlstore run's ratios to Lua's run; then their
# median and range over the rounds.
echo "over $rounds rounds: median [min-max]"
awk -v lua=redis:lua '
	{ rate[$1, $2] = $3; cpu[$1, $2] = $4; busy[$1, $2] = $5; if (!($2 in seen)) { seen[$2] = 1; names[++nn] = $2 } ; if ($1 > R) R = $1 }
	function med(a, n,   i, j, t) {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		for (k = 1; k <= nn; k++) {
			name = names[k]; n = 0; m = 0; split("", pr); split("", cr); split("", us); split("", bz)
			for (r = 1; r <= R; r++) {
				if (!((r, name) in rate)) continue
				n++; us[n] = cpu[r, name]; bz[n] = busy[r, name]
				if ((r, lua) in rate && name != lua) { m++; pr[m] = rate[r, name] / rate[r, lua]; cr[m] = cpu[r, lua] / cpu[r, name] }
			}
			mu = med(us, n); mb = med(bz, n)
			line = sprintf("%-16s CPU/pair %.2f us [%.2f-%.2f], core busy %.0f%%", name, mu, us[1], us[n], mb)
			if (m > 0) {
				mp = med(pr, m); mc = med(cr, m)
				line = line sprintf("; this/Lua pairs/s %.2fx [%.2f-%.2f]; Lua/this CPU per pair %.2fx [%.2f-%.2f]", mp, pr[1], pr[m], mc, cr[1], cr[m])
			}
			print line
		}
	}' "$results"
