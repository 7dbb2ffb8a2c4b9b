#!/usr/bin/env bash
# Measures the bytes each live lease and each outstanding reservation
# costs, side by side with Redis's sorted set of lease ids (the Lua of
# loadtest/cmd/leasepairs): for each FILLS entry keys x held, a fresh
# server is started, `leasepairs -fill keys -held held` leaves held
# one-hour leases (or reservations, of a TOKEN key) on each of keys keys,
# and INFO memory's used_memory and used_memory_dataset are read before
# and after. The key is included in each figure.
#
# Environment: FILLS ("100000x1 25000x4 6250x16": 100,000 live leases
# each), MODES ("lua native reserve").
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
tmp=$(mktemp -d)
pid=""
cleanup() {
	[ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/rlstore" ./cmd/rlstore
go build -o "$tmp/leasepairs" ./loadtest/cmd/leasepairs
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
waitport() {
	for _ in $(seq 100); do
		redis-cli -p "$1" PING >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "leasepairs_mem.sh: nothing answers on port $1" >&2
	return 1
}
for fill in ${FILLS:-100000x1 25000x4 6250x16}; do
	keys=${fill%x*} held=${fill#*x}
	for mode in ${MODES:-lua native reserve}; do
		p=$(freeport)
		if [ "$mode" = lua ]; then
			redis-server --port "$p" --save '' --appendonly no --daemonize no --loglevel warning >/dev/null &
		else
			"$tmp/rlstore" --port "$p" --log-level warn 2>/dev/null &
		fi
		pid=$!
		waitport "$p"
		echo "leasepairs_mem.sh: $mode, $keys keys x $held" >&2
		timeout 300 "$tmp/leasepairs" -addr "127.0.0.1:$p" -mode "$mode" -fill "$keys" -held "$held"
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		pid=""
	done
done
