import time
import unittest

import rlstore_limits  # noqa: F401  registers rlstore://
from limits import parse, strategies
from limits.storage import storage_from_string

from .support import URI, clear_of_window_edge, needs_rlstore, unique


@needs_rlstore
class StrategiesTest(unittest.TestCase):
    def setUp(self):
        self.storage = storage_from_string(URI)

    def test_registers_scheme(self):
        self.assertIsInstance(self.storage, rlstore_limits.RlstoreStorage)
        self.assertTrue(self.storage.check())

    def three_per_ten(self, name):
        """limits' own vector: 3 per 10 s admits 3 then denies; denials count nothing."""
        limiter = strategies.STRATEGIES[name](self.storage)
        item, who = parse("3 per 10 seconds"), unique(name)
        clear_of_window_edge()
        self.assertEqual([limiter.hit(item, who) for _ in range(5)], [True, True, True, False, False])
        self.assertFalse(limiter.test(item, who))
        reset, remaining = limiter.get_window_stats(item, who)
        self.assertEqual(remaining, 0)
        return limiter, item, who, reset - time.time()

    def test_fixed_window_is_rl_fixed(self):
        before = time.time()
        limiter, item, who, wait = self.three_per_ten("fixed-window")
        key = item.key_for(who)
        self.assertEqual(self.storage.storage.type(key), b"fixed")
        # RL.FIXED ANCHOR FIRST: the window ends 10 s after its first hit,
        # as the key of limits' Redis storage expires, not at an aligned edge
        info = self.storage.storage.execute_command("RL.INFO", key)
        self.assertIn(b"anchor", info)
        self.assertLessEqual(wait, 10)
        self.assertAlmostEqual(time.time() + wait, before + 10, delta=1.01)
        self.assertEqual(self.storage.get(key), 3, "the two denials were not counted")

    def test_limit_zero_counts_hits(self):
        """A limit of 0 denies, and counts each hit in a key that get,
        get_expiry and reset see, as limits' Redis storage does."""
        limiter = strategies.FixedWindowRateLimiter(self.storage)
        item, who = parse("0/minute"), unique("zero")
        before = time.time()
        self.assertFalse(limiter.hit(item, who))
        self.assertFalse(limiter.hit(item, who))
        key = item.key_for(who)
        self.assertEqual(self.storage.get(key), 2)
        self.assertAlmostEqual(self.storage.get_expiry(key), before + 60, delta=1.01)
        self.assertEqual(limiter.get_window_stats(item, who)[1], 0)
        self.assertGreaterEqual(self.storage.reset(), 1)
        self.assertEqual(self.storage.get(key), 0)

    def test_moving_window_is_rl_log(self):
        limiter, item, who, wait = self.three_per_ten("moving-window")
        self.assertEqual(self.storage.storage.type(item.key_for(who)), b"log")
        self.assertGreater(wait, 8)
        self.assertLessEqual(wait, 10)

    def test_elastic_expiry_is_rl_slide(self):
        limiter, item, who, wait = self.three_per_ten("fixed-window-elastic-expiry")
        self.assertEqual(self.storage.storage.type(item.key_for(who)), b"slide")
        self.assertEqual(self.storage.get(item.key_for(who)), 3)
        self.assertGreater(wait, 8)

    def test_cost_and_clear(self):
        limiter = strategies.MovingWindowRateLimiter(self.storage)
        item, who = parse("5/minute"), unique("cost")
        self.assertTrue(limiter.hit(item, who, cost=4))
        self.assertFalse(limiter.hit(item, who, cost=2))
        self.assertEqual(limiter.get_window_stats(item, who)[1], 1, "the denied cost 2 was not charged")
        self.assertTrue(limiter.hit(item, who, cost=1))
        limiter.clear(item, who)
        self.assertEqual(limiter.get_window_stats(item, who)[1], 5)
        fixed = strategies.FixedWindowRateLimiter(self.storage)
        self.assertTrue(fixed.hit(item, who + "f", cost=5))
        self.assertFalse(fixed.hit(item, who + "f"))

    def test_empty_key(self):
        item, who = parse("2/second"), unique("empty")
        self.assertEqual(self.storage.get(item.key_for(who)), 0)
        start, count = self.storage.get_moving_window(item.key_for(who), 2, 1)
        self.assertEqual(count, 0)
        self.assertAlmostEqual(start, time.time(), delta=1.01)

    def test_reset_deletes_limiter_keys(self):
        limiter = strategies.FixedWindowRateLimiter(self.storage)
        item = parse("1/hour")
        limiter.hit(item, unique("reset"))
        self.assertGreaterEqual(self.storage.reset(), 1)
        self.assertEqual(list(self.storage.storage.scan_iter(match="LIMITER*")), [])

    def test_key_prefix(self):
        """key_prefix (limits 4's RedisStorage option) goes before every key
        with a colon, and reset() deletes only the keys under it, whatever
        their namespace, as limits 3 and later's RedisStorage does."""
        prefix = unique("app")
        storage = storage_from_string(URI, key_prefix=prefix)
        limiter = strategies.FixedWindowRateLimiter(storage)
        item, who = parse("1/hour"), unique("prefix")
        self.assertTrue(limiter.hit(item, who))
        self.assertFalse(limiter.hit(item, who))
        other = parse("1/hour")
        other.namespace = "OTHER"
        self.assertTrue(limiter.hit(other, who))
        self.assertEqual(self.storage.storage.type(prefix + ":" + item.key_for(who)), b"fixed")
        self.assertEqual(self.storage.get(item.key_for(who)), 0, "the unprefixed key is another key")
        self.assertEqual(limiter.get_window_stats(item, who)[1], 0)
        self.assertTrue(strategies.FixedWindowRateLimiter(self.storage).hit(item, who))
        self.assertEqual(storage.reset(), 2)
        self.assertEqual(self.storage.get(item.key_for(who)), 1, "reset kept the key outside the prefix")

    def test_default_prefix_is_redis_storages(self):
        from limits.storage import RedisStorage
        prefix = getattr(RedisStorage, "PREFIX", None)
        self.assertEqual(self.storage._prefix, prefix + ":" if prefix else "")


class UnreachableTest(unittest.TestCase):
    def test_check_is_false(self):
        storage = storage_from_string("rlstore://127.0.0.1:1", socket_connect_timeout=1)
        self.assertFalse(storage.check())


if __name__ == "__main__":
    unittest.main()
