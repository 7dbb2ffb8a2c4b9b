#!/usr/bin/env bash
# Measures the RSS each key costs a fresh rlstore with persistence on, in
# several fresh runs of two workloads:
#
#   slide2    1M keys like user:1000001:api, each hit twice by RL.SLIDE 100 60
#   throttle  1M keys like mk:1000001, each hit once by CL.THROTTLE 15 1 3600
#
# Each run starts rlstore with --data-dir in a new temporary directory, reads
# its VmRSS, fills it with rlload (8 connections, -P 64), and reads VmRSS and
# DBSIZE again right after the fill, and VmRSS 2 s later. It prints one line
# per run: the growth of VmRSS per key, and of RssAnon, which leaves out the
# binary's own pages as they are touched; then, per workload, the range and
# the maximum of VmRSS growth right after the fill over the runs. The runs
# are sequential: RSS does not depend on timing, but two fills at once would
# share the cores.
#
#   bash loadtest/memrss.sh [runs] [keys] [extra rlstore flags...]
#
# Defaults: 5 runs, 1000000 keys. Set RLSTORE_BIN or RLLOAD_BIN to use given
# binaries instead of building them; MEMRSS_WORKLOADS to pick workloads;
# MEMRSS_NODATA=1 to run without --data-dir.
set -euo pipefail

runs=${1:-5}
keys=${2:-1000000}
shift $(($# < 2 ? $# : 2))
extra=("$@")
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rlstore=${RLSTORE_BIN:-$tmp/rlstore}
rlload=${RLLOAD_BIN:-$tmp/rlload}
[[ -n ${RLSTORE_BIN:-} ]] || (cd "$root" && go build -o "$rlstore" ./cmd/rlstore)
[[ -n ${RLLOAD_BIN:-} ]] || (cd "$root" && go build -o "$rlload" ./loadtest/cmd/rlload)

rss() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$1/status"; }
anon() { awk '/^RssAnon:/ {print $2 * 1024}' "/proc/$1/status"; }

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# one WORKLOAD RUN: a fresh server, one fill, one line of output.
one() {
	local wl=$1 run=$2 port dir pid before after n anon0 anon1 later
	port=$(freeport)
	dir=$tmp/data-$wl-$run
	local data=(--data-dir "$dir")
	[[ -z ${MEMRSS_NODATA:-} ]] || data=()
	"$rlstore" --port "$port" "${data[@]}" "${extra[@]}" 2>"$tmp/log" &
	pid=$!
	for _ in $(seq 100); do
		redis-cli -p "$port" PING >/dev/null 2>&1 && break
		sleep 0.1
	done
	before=$(rss "$pid")
	anon0=$(anon "$pid")
	case $wl in
	slide2) "$rlload" run -q --addr "127.0.0.1:$port" --cmd "RL.SLIDE user:{key}:api 100 60" --prefix 1 \
		-r "$keys" --dist seq -n $((2 * keys)) -c 8 -P 64 --duration 10m >/dev/null ;;
	throttle) "$rlload" run -q --addr "127.0.0.1:$port" --cmd "CL.THROTTLE mk:{key} 15 1 3600" --prefix 1 \
		-r "$keys" --dist seq -n "$keys" -c 8 -P 64 --duration 10m >/dev/null ;;
	esac
	after=$(rss "$pid")
	anon1=$(anon "$pid")
	n=$(redis-cli -p "$port" DBSIZE)
	sleep 2
	later=$(rss "$pid")
	kill "$pid"
	wait "$pid" || true
	awk -v wl="$wl" -v run="$run" -v b="$before" -v a="$after" -v l="$later" -v n="$n" -v a0="$anon0" -v a1="$anon1" \
		'BEGIN { printf "%-9s run %d: %d keys, RSS %.1f -> %.1f MB: %.1f B/key right after the fill (anonymous RSS %.1f B/key), %.1f B/key 2 s later\n", wl, run, n, b/1e6, a/1e6, (a-b)/n, (a1-a0)/n, (l-b)/n }'
}

for wl in ${MEMRSS_WORKLOADS:-slide2 throttle}; do
	for run in $(seq "$runs"); do
		one "$wl" "$run"
	done
done | tee "$tmp/runs"
# The goal is a bound on every run, so the summary is each workload's worst.
awk '{ v = $0; sub(/.*MB: /, "", v); sub(/ B\/key.*/, "", v); v += 0
	if (!($1 in max) || v > max[$1]) max[$1] = v; if (!($1 in min) || v < min[$1]) min[$1] = v; n[$1]++ }
	END { for (w in max) printf "%-9s %d runs: %.1f-%.1f B/key right after the fill, max %.1f\n", w, n[w], min[w], max[w], max[w] }' "$tmp/runs"
