#!/usr/bin/env bash
# Measures lease and reservation pairs side by side: redis-server running
# the sorted-set Lua of loadtest/cmd/leasepairs, and rlstore's RL.ACQUIRE +
# RL.RELEASE and RL.RESERVE + RL.COMMIT, one after another in each round,
# printing pairs per second (the issue's metric, at -P 16: 16 commands in
# flight on each connection), the server's CPU (utime + stime from
# /proc/PID/stat) per pair and the client's, and each rlstore mode's ratios
# to Lua's pairs per second and CPU per pair within the round. The client
# shares the host's cores: where it takes a large share, pairs per second
# measures it as much as the server, and CPU per pair is the steadier
# ratio. On a shared host, run nothing else heavy beside it.
# Environment: ROUNDS (3), DUR (6s), CONNS (50), DEPTH (16), MODES (the
# rlstore modes, "native reserve"; "fixed" and "ping" are floors: two
# RL.FIXED or two PING a pair), REDIS_MODES ("lua"; "ping" is Redis's
# floor), BEFORE (a second rlstore binary, measured in the same rounds as
# "before"),
# PROFILE (a directory: a Go CPU profile of each rlstore mode's last round
# is written there as <build>-<mode>.pprof).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
rounds=${ROUNDS:-3}
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
go build -o "$tmp/rlstore" ./cmd/rlstore
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

declare -A port pid
rport=$(freeport)
redis-server --port "$rport" --save '' --appendonly no --daemonize no --loglevel warning >/dev/null &
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
	"${bins[$i]}" --port "$p" --pprof-addr "127.0.0.1:$pp" --log-level warn &
	pids+=($!)
	pid[$b]=$!
	port[$b]=$p
	port[$b-pprof]=$pp
	waitport "$p"
done
hz=$(getconf CLK_TCK)
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); conns=$conns P=$depth dur=$dur"
for r in $(seq "$rounds"); do
	declare -A cpu=() pps=()
	for run in $(for m in ${REDIS_MODES:-lua}; do echo "redis:$m"; done) \
		$(for b in "${builds[@]}"; do for m in ${MODES:-native reserve}; do echo "$b:$m"; done; done); do
		b=${run%%:*} mode=${run#*:}
		[ "$b" = redis ] && b=lua
		t0=$(ticks "${pid[$b]}")
		prof=""
		if [ -n "${PROFILE:-}" ] && [ "$b" != lua ] && [ "$r" = "$rounds" ]; then
			mkdir -p "$PROFILE"
			secs=$(( ${dur%s} - 1 ))
			curl -s -o "$PROFILE/$b-$mode.pprof" "http://127.0.0.1:${port[$b-pprof]}/debug/pprof/profile?seconds=$secs" &
			prof=$!
		fi
		out=$("$tmp/leasepairs" -addr "127.0.0.1:${port[$b]}" -mode "$mode" -conns "$conns" -P "$depth" -duration "$dur")
		[ -n "$prof" ] && wait "$prof"
		t1=$(ticks "${pid[$b]}")
		n=$(sed -E 's/.*: ([0-9]+) pairs in.*/\1/' <<<"$out")
		rate=$(sed -E 's/.*= ([0-9]+) pairs\/s.*/\1/' <<<"$out")
		client=$(sed -E 's/.*client CPU ([0-9.]+) us.*/\1/' <<<"$out")
		us=$(awk -v d="$((t1 - t0))" -v n="$n" -v hz="$hz" 'BEGIN{printf "%.2f", d / hz * 1e6 / n}')
		cpu[$run]=$us
		pps[$run]=$rate
		ratio=""
		[ "$b" != lua ] && [ -n "${cpu[redis:lua]:-}" ] && ratio=$(awk -v a="${cpu[redis:lua]}" -v b="$us" -v p="${pps[redis:lua]}" -v q="$rate" \
			'BEGIN{printf " (this/Lua pairs/s: %.2fx; Lua/this CPU per pair: %.2fx)", q / p, a / b}')
		printf 'round %d %-16s %8s pairs/s %7s us CPU/pair (client %s us)%s\n' "$r" "$run" "$rate" "$us" "$client" "$ratio"
	done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
