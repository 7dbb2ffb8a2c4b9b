#!/usr/bin/env bash
# Runs rate-limiter-flexible's own RateLimiterRedis tests with
# RateLimiterRlstore substituted, against an rlstore, and prints mocha's
# counts. CI cannot fetch repositories, so this is run by hand; the counts it
# gave are in docs/integrations.md.
#
#   suites/flexible-redis-suite.sh /path/to/node-rate-limiter-flexible host:port
#
# The checkout's test/RateLimiterRedis.ioredis.test.js is copied into a
# scratch folder with mocha 10, chai 4.5 and sinon 17 (its own pins), this
# package and the checkout's rate-limiter-flexible; RateLimiterRedis is
# replaced by RateLimiterRlstore and port 6379 by the given address. The
# suite's FLUSHDB fixture needs an rlstore with FLUSHDB.
set -euo pipefail
src=$1 addr=$2
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
echo '{"name":"rlf-suite","private":true}' >package.json
npm install --no-audit --no-fund mocha@10 chai@4.5.0 sinon@17 ioredis@5 redis@4 "$here" "$src" >/dev/null
mkdir t
sed -e "s|port: 6379|port: ${addr##*:}|; s|host: '127.0.0.1'|host: '${addr%:*}'|" \
	-e "s|const RateLimiterRedis = require('../lib/RateLimiterRedis');|const { RateLimiterRlstore: RateLimiterRedis } = require('rlstore-ratelimit');|" \
	-e "s|require('../lib/|require('rate-limiter-flexible/lib/|g" \
	"$src/test/RateLimiterRedis.ioredis.test.js" >t/rlstore.test.js
npx mocha --exit t/rlstore.test.js 2>&1 | grep -E '^\s+([0-9]+\) |✔)|passing|failing|pending' || true
