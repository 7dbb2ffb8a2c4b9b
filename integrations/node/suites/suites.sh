#!/usr/bin/env bash
# Fetches the libraries' own test suites that integrations' TestNodeFlexibleSuite,
# TestNodeExpressSuite and TestPythonLimitsSuite run against rlstore (and
# SlowAPI's source, which TestPythonSlowAPI imports, and limits 3.x-5.x,
# whose tests TestPythonLimitsSuite runs with their own limits), at the
# versions their expected outcomes were recorded with, into the folder given
# (default /tmp/rlstore-suites). Their code is theirs, so this repository does
# not keep it; those tests run when RLSTORE_SUITES names the folder:
#
#   integrations/node/suites/suites.sh /tmp/rlstore-suites
#   RLSTORE_SUITES=/tmp/rlstore-suites go test -run 'Suite|SlowAPI' ./integrations/
set -euo pipefail
dir=${1:-/tmp/rlstore-suites}
mkdir -p "$dir"
get() { # folder, repository, commit
  [ -d "$dir/$1/.git" ] || git clone -q "$2" "$dir/$1"
  git -C "$dir/$1" checkout -q "$3"
}
get rate-limiter-flexible https://github.com/animir/node-rate-limiter-flexible 3c9c826   # 11.1.0
get express-rate-limit https://github.com/express-rate-limit/express-rate-limit 0b5b5244ef0758623c4fc799071b289983e35242
get limits https://github.com/alisaifee/limits 2.8.0
for v in 3.14.1 4.8.0 5.8.0; do   # tests and library, from source: PyPI is not reachable
  get limits-$v https://github.com/alisaifee/limits $v
done
get slowapi https://github.com/laurentS/slowapi v0.1.9   # not in Debian; PyPI is not reachable
echo "RLSTORE_SUITES=$dir"
