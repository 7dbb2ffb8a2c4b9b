"""One package for limits 2.8 (Debian's, installed here) and the 3.x, 4.x and
5.x storage interface. Newer limits cannot be installed here (no PyPI), so
the interface is checked against golden data: each version's abstract
storage methods and their parameters, read from limits' source
(testdata/limits_storage_api.json). Behaviour is tested here against rlstore
with limits 2.8; limits 3.14.1, 4.8.0 and 5.8.0 run their own tests against
rlstore with limits imported from source (suites/run.py), and TestReplay
replays their traffic."""

import inspect
import json
import os
import time
import unittest

import redis
import rlstore_limits
from limits import parse, strategies
from limits.storage import storage_from_string

from .support import URI, ADDR, needs_rlstore, unique

GOLDEN = os.path.join(os.path.dirname(__file__), "testdata", "limits_storage_api.json")


class InterfaceTest(unittest.TestCase):
    def test_every_version_interface(self):
        versions = json.load(open(GOLDEN))["versions"]
        cls = rlstore_limits.RlstoreStorage
        for version, classes in versions.items():
            for base, methods in classes.items():
                for name, spec in methods.items():
                    where = "limits %s %s.%s" % (version, base, name)
                    self.assertTrue(hasattr(cls, name), where + " is missing")
                    attr = inspect.getattr_static(cls, name)
                    if spec["property"]:
                        self.assertIsInstance(attr, property, where + " must be a property")
                        continue
                    ours = inspect.signature(getattr(cls, name)).parameters
                    theirs = spec["params"]
                    required = theirs[: len(theirs) - spec["defaults"]]
                    self.assertEqual(list(ours)[: len(required)], required, where + ": positional parameters")
                    for p in theirs:
                        self.assertIn(p, ours, where + ": takes " + p)
                    for p, param in ours.items():
                        if p not in theirs:
                            self.assertIsNot(param.default, inspect.Parameter.empty, where + ": extra " + p + " needs a default")

    def test_times_as_the_version_returns_them(self):
        """Expiries and window starts are whole seconds before limits 4.0,
        as its Redis storage truncated them, and floats from 4.0 on."""
        from rlstore_limits import storage
        for version, whole in (("2.8.0", True), ("3.14.1", True), ("4.0.0", False), ("5.8.0", False), ("", False)):
            self.assertEqual(storage._whole_seconds(version), whole, version)
        import limits
        self.assertIs(storage._time, int if limits.__version__.startswith(("2.", "3.")) else float)

    def test_base_exceptions(self):
        self.assertTrue(issubclass(redis.exceptions.ConnectionError, rlstore_limits.RlstoreStorage.base_exceptions.fget(None)))

    def test_schemes(self):
        tls = storage_from_string("rlstores://127.0.0.1:6380")
        self.assertIs(tls.storage.connection_pool.connection_class, redis.connection.SSLConnection)
        plain = storage_from_string("rlstore://127.0.0.1:6380")
        self.assertIs(plain.storage.connection_pool.connection_class, redis.connection.Connection)

    def test_config_errors_at_startup(self):
        with self.assertRaises(TypeError):
            storage_from_string("rlstore://127.0.0.1:6380", no_such_option=1)
        with self.assertRaises(ValueError):
            storage_from_string("rlstore://127.0.0.1:notaport")


@needs_rlstore
class LimitsTest(unittest.TestCase):
    def setUp(self):
        self.storage = storage_from_string(URI)

    def test_moving_window_above_4000(self):
        limiter = strategies.MovingWindowRateLimiter(self.storage)
        item, who = parse("5000/minute"), unique("big")
        self.assertTrue(limiter.hit(item, who, cost=4999))
        self.assertTrue(limiter.hit(item, who))
        self.assertFalse(limiter.hit(item, who))
        reset, remaining = limiter.get_window_stats(item, who)
        self.assertEqual(remaining, 0)
        self.assertGreater(reset, time.time() + 55)

    def test_limit_zero_denies(self):
        for name in ("fixed-window", "moving-window", "fixed-window-elastic-expiry"):
            limiter = strategies.STRATEGIES[name](self.storage)
            item, who = parse("0/minute"), unique("zero")
            self.assertFalse(limiter.hit(item, who), name)
            self.assertFalse(limiter.test(item, who), name)
            self.assertEqual(limiter.get_window_stats(item, who)[1], 0, name)

    def test_connection_pool(self):
        host, port = ADDR.rsplit(":", 1)
        pool = redis.ConnectionPool(host=host, port=int(port))
        storage = storage_from_string("rlstore://", connection_pool=pool)
        self.assertIs(storage.storage.connection_pool, pool)
        limiter = strategies.FixedWindowRateLimiter(storage)
        item, who = parse("1/hour"), unique("pool")
        self.assertTrue(limiter.hit(item, who))
        self.assertFalse(limiter.hit(item, who))
