import threading
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

import rlstore_limits  # noqa: F401  registers rlstore://
from flask import Flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

from .support import URI, clear_of_window_edge, needs_rlstore, unique


# Building a Flask app compiles its URL rules with ast.parse, which Debian's
# Python 3.11 does not make safe from threads: its AST constructor counts its
# recursion in state the threads share ("SystemError: AST constructor
# recursion depth mismatch", CPython gh-106905): tests that build apps in
# threads build them one at a time.
_building = threading.Lock()


def make_app(strategy, limit="3 per 10 seconds"):
    with _building:
        app = Flask(__name__)
        limiter = Limiter(
            get_remote_address, app=app, storage_uri=URI, strategy=strategy,
            headers_enabled=True, key_prefix=unique("flask"),
        )

        @app.route("/")
        @limiter.limit(limit)
        def index():
            return "ok"

    return app


@needs_rlstore
class FlaskLimiterTest(unittest.TestCase):
    def run_vector(self, strategy):
        client = make_app(strategy).test_client()
        clear_of_window_edge()
        replies = [client.get("/") for _ in range(5)]
        self.assertEqual([r.status_code for r in replies], [200, 200, 200, 429, 429])
        for i, r in enumerate(replies[:3]):
            self.assertEqual(r.headers["X-RateLimit-Limit"], "3")
            self.assertEqual(r.headers["X-RateLimit-Remaining"], str(2 - i))
        denied = replies[3]
        self.assertEqual(denied.headers["X-RateLimit-Remaining"], "0")
        return int(denied.headers["Retry-After"])

    def test_moving_window(self):
        retry = self.run_vector("moving-window")
        self.assertIn(retry, (9, 10))

    def test_fixed_window(self):
        retry = self.run_vector("fixed-window")
        # the window started at the first request (RL.FIXED ANCHOR FIRST)
        self.assertIn(retry, (9, 10))

    def test_elastic_expiry(self):
        self.assertIn(self.run_vector("fixed-window-elastic-expiry"), (9, 10))


@needs_rlstore
class ConcurrencyTest(unittest.TestCase):
    """An app under concurrency: 40 requests of one client from 8 threads,
    each with its own test client, admit exactly the limit with every
    strategy (each decision is one atomic command; the storage's per-thread
    memory of its last reply must not leak between threads)."""

    def test_exact_under_concurrency(self):
        for strategy in ("moving-window", "fixed-window", "fixed-window-elastic-expiry"):
            app = make_app(strategy, "10 per hour")

            def one(_):
                return app.test_client().get("/").status_code

            with ThreadPoolExecutor(8) as pool:
                codes = list(pool.map(one, range(40)))
            self.assertEqual(codes.count(200), 10, (strategy, codes))
            self.assertEqual(codes.count(429), 30, (strategy, codes))


def just_before_second():
    """Waits until the wall clock is within the last 15 ms of a second (a
    sleep that wakes late, past the second, waits for the next one)."""
    while True:
        frac = time.time() % 1
        if frac >= 0.985:
            return
        time.sleep(0.985 - frac)


class TooSlow(Exception):
    """The host was too busy for the span a check needs: it says nothing
    about the limit."""


@needs_rlstore
class WindowEdgesTest(unittest.TestCase):
    """Window edges through a real Flask app with the moving window, 5 per
    1 s, 10 s and 60 s: "any window span holds at most limit". A whole-second
    counter would admit 5 at x.985 and 5 more at (x+1).005. The server runs
    on the real clock: each window's burst goes in the last 15 ms of a real
    second and one request just after its edge; the 1 s and 10 s windows are
    then polled until they (and a second more) have passed, the 60 s window
    is checked by its denial's Retry-After. The windows run side by side
    (about 12 s)."""

    LIMIT = 5

    def check(self, seconds):
        app = make_app("moving-window", "%d per %d second" % (self.LIMIT, seconds))
        client = app.test_client()
        client.get("/warm-up")  # connect outside the burst (not limited: no such route)
        just_before_second()
        admitted = []  # (sent, answered) of each admitted request
        for i in range(self.LIMIT):
            sent = time.time()
            code = client.get("/").status_code
            self.assertEqual(code, 200, "%d s: burst request %d" % (seconds, i + 1))
            admitted.append((sent, time.time()))
        first = admitted[0][0]
        time.sleep(max(0, int(first) + 1.005 - time.time()))
        at = time.time()
        r = client.get("/")
        if at - first >= seconds:
            raise TooSlow("%d s: the burst took %.3f s" % (seconds, at - first))
        self.assertEqual(r.status_code, 429, "%d s: a request %.3f s after the burst, just after the second's edge"
                         % (seconds, at - first))
        if seconds > 10:
            self.assertGreaterEqual(int(r.headers["Retry-After"]), seconds - 1)
            return
        while time.time() < first + seconds + 1.3:
            sent = time.time()
            if client.get("/").status_code == 200:
                admitted.append((sent, time.time()))
            time.sleep(0.02)
        self.assertGreater(len(admitted), self.LIMIT, "%d s: let back in once the window passed" % seconds)
        for k in range(len(admitted) - self.LIMIT):
            span = admitted[k + self.LIMIT][1] - admitted[k][0]
            self.assertGreaterEqual(span, seconds - 0.002, "%d s: %d requests admitted within %.3f s"
                                    % (seconds, self.LIMIT + 1, span))

    def retried(self, seconds):
        for attempt in range(3):
            try:
                return self.check(seconds)
            except TooSlow:
                if attempt == 2:
                    raise

    def test_window_edges(self):
        with ThreadPoolExecutor(3) as pool:
            for f in [pool.submit(self.retried, s) for s in (1, 10, 60)]:
                f.result()


@needs_rlstore
class RoundTripsTest(unittest.TestCase):
    """A fixed-window request with headers used to cost 4 round trips
    (RL.FIXED, TYPE, RL.FIXED PEEK, PTTL; Redis: 3): the decision's own reply
    now answers the headers' questions, so it costs 1."""

    def test_one_round_trip_per_request(self):
        app = Flask(__name__)
        limiter = Limiter(get_remote_address, app=app, storage_uri=URI, strategy="fixed-window",
                          headers_enabled=True, key_prefix=unique("trips"))

        @app.route("/")
        @limiter.limit("3 per 10 seconds")
        def index():
            return "ok"

        client = app.test_client()
        client.get("/")  # connect outside the count
        storage = limiter.limiter.storage.storage
        sent = []
        real = storage.execute_command

        def counting(*args, **kwargs):
            sent.append(args[0])
            return real(*args, **kwargs)

        storage.execute_command = counting
        clear_of_window_edge()
        for want in ("1", "0"):
            sent.clear()
            r = client.get("/")
            self.assertEqual(r.status_code, 200)
            self.assertEqual(r.headers["X-RateLimit-Remaining"], want)
            self.assertEqual(sent, ["RL.FIXED"])
        sent.clear()
        r = client.get("/")
        self.assertEqual(r.status_code, 429)
        self.assertEqual(r.headers["X-RateLimit-Remaining"], "0")
        self.assertEqual(sent, ["RL.FIXED"])

    def test_moving_window_round_trips(self):
        """A moving-window request used to cost 3 (RL.LOG, then two PEEKs
        for the headers; Redis: 2, its acquire and window scripts). The
        acquire's reply answers when it is all the window holds, or is a
        denial of cost 1; otherwise one PEEK asks for the oldest entry."""
        app = Flask(__name__)
        limiter = Limiter(get_remote_address, app=app, storage_uri=URI, strategy="moving-window",
                          headers_enabled=True, key_prefix=unique("trips"))

        @app.route("/")
        @limiter.limit("3 per 10 seconds")
        def index():
            return "ok"

        client = app.test_client()
        storage = limiter.limiter.storage.storage
        storage.ping()  # connect outside the count
        sent = []
        real = storage.execute_command

        def counting(*args, **kwargs):
            sent.append(args[0])
            return real(*args, **kwargs)

        storage.execute_command = counting
        for status, remaining, trips in ((200, "2", 1), (200, "1", 2), (200, "0", 2), (429, "0", 1)):
            sent.clear()
            r = client.get("/")
            self.assertEqual((r.status_code, r.headers["X-RateLimit-Remaining"]), (status, remaining))
            self.assertEqual(len(sent), trips, "%s for a %d with %s remaining" % (sent, status, remaining))
            reset = int(r.headers["X-RateLimit-Reset"])
            self.assertAlmostEqual(reset, time.time() + 10, delta=1.5, msg="the oldest entry, just made, leaves in 10 s")
        self.assertIn(int(r.headers["Retry-After"]), (9, 10))



if __name__ == "__main__":
    unittest.main()
