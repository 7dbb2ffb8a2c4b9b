#!/usr/bin/env bash
# Profiles rlstore's CPU under load with Linux perf, from outside and with
# kernel time (rlstore --pprof-addr serves Go's own profiles instead): builds rlstore and rlload,
# starts rlstore on a free port, runs one rlload workload against it and
# records the server meanwhile, then prints the hottest functions.
#   bash loadtest/profile.sh [workload] [pipeline depth] [seconds]
# Needs perf (apt-get install linux-perf) and permission to trace a child.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
workload=${1:-rl.slide}
depth=${2:-16}
secs=${3:-5}
command -v perf >/dev/null || { echo "profile.sh: perf is not installed" >&2; exit 1; }
tmp=$(mktemp -d)
go build -o "$tmp/rlstore" ./cmd/rlstore
go build -o "$tmp/rlload" ./loadtest/cmd/rlload
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$tmp/rlstore" --port "$port" --log-level warn &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do
	"$tmp/rlload" run --addr "127.0.0.1:$port" -t ping -n 1 -c 1 -q >/dev/null 2>&1 && break
	sleep 0.1
done
"$tmp/rlload" run --addr "127.0.0.1:$port" -t "$workload" -P "$depth" --duration "$((secs + 2))s" -q --limit 100 >"$tmp/run.txt" &
load=$!
sleep 1
perf record -F 499 -g -p "$pid" -o "$tmp/perf.data" -- sleep "$secs" 2>/dev/null
wait "$load"
cat "$tmp/run.txt"
echo
perf report -i "$tmp/perf.data" --stdio --no-children --sort symbol 2>/dev/null | grep -E '^ +[0-9]' | head -30
echo
echo "with callers (children):"
perf report -i "$tmp/perf.data" --stdio --children --sort symbol -g none 2>/dev/null | grep -E '^ +[0-9]' | head -30
