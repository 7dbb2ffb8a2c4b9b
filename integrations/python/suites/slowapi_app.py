"""A Starlette app rate-limited by SlowAPI with RlstoreStorage, checked as
a client sees it: 3 per 10 seconds per client gives 200, 200, 200, then 429
with Retry-After, X-RateLimit-* headers, one window per client, and a fixed
window that starts at the first request (RL.FIXED ANCHOR FIRST).

SlowAPI is not in Debian and PyPI is not reachable here, so its source
(laurentS/slowapi at v0.1.9, MIT) comes from $RLSTORE_SUITES/slowapi, which
integrations/node/suites/suites.sh fetches; Starlette and httpx come from
Debian (python3-starlette, python3-httpx). integrations/TestPythonSlowAPI
runs it; by hand:

    PYTHONPATH=integrations/python:$RLSTORE_SUITES/slowapi RLSTORE_ADDR=127.0.0.1:6379 \\
        /usr/bin/python3 integrations/python/suites/slowapi_app.py
"""

import os
import sys
import time

import rlstore_limits  # noqa: F401  registers rlstore://
from slowapi import Limiter, _rate_limit_exceeded_handler
from slowapi.errors import RateLimitExceeded
from slowapi.util import get_remote_address
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient


def make_app(uri, prefix):
    def key(request):  # SlowAPI passes the request to a parameter of this name
        return prefix + get_remote_address(request)

    limiter = Limiter(key_func=key, storage_uri=uri, strategy="fixed-window", headers_enabled=True)

    @limiter.limit("3/10 seconds")
    async def home(request: Request):
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/", home)])
    app.state.limiter = limiter
    app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)
    return app


def main():
    addr = os.environ.get("RLSTORE_ADDR")
    if not addr:
        sys.exit("RLSTORE_ADDR is not set: start rlstore and set it to host:port")
    app = make_app("rlstore://" + addr, "slowapi-%d-%d-" % (os.getpid(), time.time_ns()))
    client = TestClient(app)
    problems = []
    started = time.time()
    replies = [client.get("/") for _ in range(5)]
    codes = [r.status_code for r in replies]
    if codes != [200, 200, 200, 429, 429]:
        problems.append("statuses %s, want [200, 200, 200, 429, 429]" % codes)
    for i, r in enumerate(replies[:3]):
        if r.headers.get("X-RateLimit-Remaining") != str(2 - i) or r.headers.get("X-RateLimit-Limit") != "3":
            problems.append("reply %d: X-RateLimit-Limit %s, -Remaining %s" % (
                i, r.headers.get("X-RateLimit-Limit"), r.headers.get("X-RateLimit-Remaining")))
    denied = replies[3]
    retry = int(denied.headers.get("Retry-After", "-1"))
    # The window started at the first request: it ends 10 s after it.
    if not 9 <= retry <= 10:
        problems.append("Retry-After %d, want 9 or 10 (10 s from the first request)" % retry)
    reset = float(denied.headers.get("X-RateLimit-Reset", "0"))
    if abs(reset - (started + 10)) > 1.5:
        problems.append("X-RateLimit-Reset %s, want about %s" % (reset, started + 10))
    other = TestClient(make_app("rlstore://" + addr, "slowapi-other-%d-" % time.time_ns()))
    if other.get("/").status_code != 200:
        problems.append("another client's first request was not admitted")
    print("SlowAPI 0.1.9 app with RlstoreStorage: statuses %s, Retry-After %d" % (codes, retry))
    for p in problems:
        print("FAILED: " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
