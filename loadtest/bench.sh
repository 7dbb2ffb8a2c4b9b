#!/usr/bin/env bash
# Regenerates BENCHMARKS.md and loadtest/benchmarks.svg: builds rlstore and
# rlload from the committed HEAD (BENCH_WORKTREE=1 builds the working tree
# instead), starts rlstore and redis-server on free loopback ports, and runs
# `rlload bench`, then appends two cluster sections (loadtest/cluster.py: at
# the defaults, then without replicas at GOMAXPROCS=1 per node;
# BENCH_CLUSTER=0 skips both) and the replicas section (loadtest/replicas.py;
# BENCH_REPLICAS=0 skips it). Takes a few minutes on 2 cores. Extra arguments go to
# `rlload bench` (see `rlload bench -help`).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
if ! command -v redis-server >/dev/null; then
	echo "bench.sh: redis-server is not installed (apt-get install -y redis-server)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=.
if [ -z "${BENCH_WORKTREE:-}" ]; then
	src="$tmp/src"
	mkdir "$src"
	git archive HEAD | tar -x -C "$src"
fi
(cd "$src" && go build -o "$tmp/rlstore" ./cmd/rlstore && go build -o "$tmp/rlload" ./loadtest/cmd/rlload)
"$tmp/rlload" bench --rlstore-bin "$tmp/rlstore" \
	--out BENCHMARKS.md --chart loadtest/benchmarks.svg \
	--notes loadtest/bench-notes.md --command "bash loadtest/bench.sh" "$@" >/dev/null
if [ "${BENCH_CLUSTER:-1}" != 0 ]; then # BENCH_CLUSTER=0 skips the cluster section
	{ echo; RLSTORE="$tmp/rlstore" RLLOAD="$tmp/rlload" python3 loadtest/cluster.py; } >>BENCHMARKS.md
	# The same without replicas, and with one Go thread per node: three nodes share this host's cores.
	{ echo; TITLE="Cluster without replicas, GOMAXPROCS=1 per node" CLUSTERARGS="--replicas 0" NODEPROCS=1 DETECT=0 \
		RLSTORE="$tmp/rlstore" RLLOAD="$tmp/rlload" python3 loadtest/cluster.py; } >>BENCHMARKS.md
fi
if [ "${BENCH_REPLICAS:-1}" != 0 ]; then # BENCH_REPLICAS=0 skips the replicas section
	# One key, 1,000 and 100,000, every decision allowed: a denied decision changes no key and ships nothing.
	{ echo; KEYS=1,1000,100000 LIMIT=1000000000 RLSTORE="$tmp/rlstore" RLLOAD="$tmp/rlload" python3 loadtest/replicas.py; } >>BENCHMARKS.md
fi
echo "bench.sh: wrote BENCHMARKS.md and loadtest/benchmarks.svg" >&2
