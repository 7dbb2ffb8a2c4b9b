#!/bin/sh
# Records envoyproxy/ratelimit's answers to TestDifferential's traces into
# this folder (see README.md). Needs git, Go, redis-server, and the Go module
# proxy for envoyproxy/ratelimit's dependencies. None of its code is kept.
#
#   gateway/testdata/diff/record.sh [path of an envoyproxy/ratelimit checkout]
set -eu
COMMIT=f2fb15770f7fd1c88ca6c3a1b58ee513917ace96
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=${1:-}
if [ -z "$src" ]; then
	src=$work/ratelimit
	git clone --quiet https://github.com/envoyproxy/ratelimit "$src"
fi
git -C "$src" checkout --quiet "$COMMIT"
(cd "$src" && go build -o "$work/ratelimit-bin" ./src/service_cmd)
redis=$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')
cd "$here/../.."
RLS_REFERENCE_BIN=$work/ratelimit-bin \
RLS_REFERENCE="envoyproxy/ratelimit $(echo $COMMIT | cut -c1-7) ($(go env GOVERSION)) + redis-server $redis" \
	go test -tags rlsrecord -count=1 -run TestRecordDifferential -v . | grep -E '^(---|ok|FAIL)|wrote'
