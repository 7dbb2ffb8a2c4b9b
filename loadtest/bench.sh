#!/usr/bin/env bash
# Regenerates BENCHMARKS.md and loadtest/benchmarks.svg: builds rlstore and
# rlload from the committed HEAD (BENCH_WORKTREE=1 builds the working tree
# instead), starts rlstore and redis-server on free loopback ports, and runs
# `rlload bench`. Takes a few minutes on 2 cores. Extra arguments go to
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
echo "bench.sh: wrote BENCHMARKS.md and loadtest/benchmarks.svg" >&2
