"""The rlstore:// storage class for limits 2.8 (Debian's python3-limits)."""

import time
import urllib.parse

import redis
from limits.storage import MovingWindowSupport, Storage

# Seconds per granularity, as limits names them at the end of every key.
_GRANULARITY = {
    "second": 1,
    "minute": 60,
    "hour": 60 * 60,
    "day": 60 * 60 * 24,
    "month": 60 * 60 * 24 * 30,
    "year": 60 * 60 * 24 * 30 * 12,
}


def _limit_of(key):
    """Reads (limit, window seconds) from a key made by RateLimitItem.key_for:
    ``namespace/identifiers.../amount/multiples/granularity``."""
    try:
        amount, multiples, granularity = key.rsplit("/", 3)[1:]
        return int(amount), int(multiples) * _GRANULARITY[granularity]
    except (ValueError, KeyError):
        raise ValueError(
            "rlstore: key %r does not end in amount/multiples/granularity, "
            "as limits' RateLimitItem.key_for makes it" % key
        ) from None


class _Decision:
    """A reply [allowed, limit, remaining, wait_ms, reset_ms]."""

    def __init__(self, reply):
        if not isinstance(reply, (list, tuple)) or len(reply) < 5:
            raise redis.exceptions.ResponseError("rlstore: unexpected reply %r" % (reply,))
        self.allowed, self.limit, self.remaining, self.wait_ms, self.reset_ms = (
            int(x) for x in reply[:5]
        )

    def available(self):
        """Units the key could still take, read from a PEEK of cost 1."""
        return self.remaining + 1 if self.allowed == 1 else self.remaining


class RlstoreStorage(Storage, MovingWindowSupport):
    """Rate-limit storage on rlstore. ``rlstore://[:password@]host:port``;
    keyword options are passed to ``redis.Redis``.

    The limit is read from the key (limits puts amount, multiples and
    granularity at its end), so ``incr`` can ask rlstore for a decision: it
    admits and counts, or denies and counts nothing, atomically.
    """

    STORAGE_SCHEME = ["rlstore"]

    #: Seconds to wait to connect and for each reply unless the options (or
    #: the URI's query) say otherwise: a stalled rlstore then costs a request
    #: this long, after which the library's error handling (Flask-Limiter's
    #: swallow_errors) decides, instead of redis-py's default of no timeout.
    DEFAULT_TIMEOUT = 0.25

    def __init__(self, uri, **options):
        options.setdefault("socket_timeout", self.DEFAULT_TIMEOUT)
        options.setdefault("socket_connect_timeout", self.DEFAULT_TIMEOUT)
        super().__init__(uri, **options)
        parsed = urllib.parse.urlparse(uri)
        redis_uri = parsed._replace(scheme="redis").geturl()
        self.storage = redis.Redis.from_url(redis_uri, **options)

    def _send(self, *args):
        return self.storage.execute_command(*args)

    def _decide(self, command, key, window, amount=1, peek=False):
        limit, seconds = _limit_of(key)
        args = [command, key, limit, window if window is not None else seconds]
        if amount != 1:
            args += ["COST", amount]
        if peek:
            args.append("PEEK")
        return _Decision(self._send(*args))

    # -- fixed window -----------------------------------------------------

    def incr(self, key, expiry, elastic_expiry=False, amount=1):
        """Charges amount and returns the count after it. A denial counts
        nothing and returns limit + amount, which the strategy reads as
        over the limit."""
        command = "RL.SLIDE" if elastic_expiry else "RL.FIXED"
        d = self._decide(command, key, int(expiry), amount)
        if d.allowed == 1:
            return d.limit - d.remaining
        return d.limit - d.remaining + amount

    def get(self, key):
        """The key's count in its current fixed window, without changing it."""
        kind = self._send("TYPE", key)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "none":
            return 0
        command = "RL.SLIDE" if kind == "slide" else "RL.FIXED"
        d = self._decide(command, key, None, peek=True)
        return d.limit - d.available()

    def get_expiry(self, key):
        """The Unix time at which the key is back to its full limit."""
        return int(max(int(self._send("PTTL", key)), 0) / 1000 + time.time())

    # -- moving window ----------------------------------------------------

    def acquire_entry(self, key, limit, expiry, amount=1):
        args = ["RL.LOG", key, int(limit), int(expiry)]
        if amount != 1:
            args += ["COST", amount]
        return _Decision(self._send(*args)).allowed == 1

    def get_moving_window(self, key, limit, expiry):
        """(start of the window, entries in it): the start is when the oldest
        entry came in, so start + expiry is when one unit frees up."""
        now = time.time()
        d = _Decision(self._send("RL.LOG", key, int(limit), int(expiry), "PEEK"))
        count = int(limit) - d.available()
        if count <= 0:
            return int(now), 0
        # The smallest cost that does not fit waits exactly for the oldest entry.
        oldest = _Decision(
            self._send("RL.LOG", key, int(limit), int(expiry), "COST", int(limit) - count + 1, "PEEK")
        )
        return int(now + oldest.wait_ms / 1000 - int(expiry)), count

    # -- housekeeping -----------------------------------------------------

    def check(self):
        try:
            return bool(self.storage.ping())
        except redis.exceptions.RedisError:
            return False

    def clear(self, key):
        self._send("DEL", key)

    def reset(self):
        """Deletes every key limits made (they start with LIMITER) and
        returns how many."""
        count = 0
        batch = []
        for key in self.storage.scan_iter(match="LIMITER*", count=1000):
            batch.append(key)
            if len(batch) == 500:
                count += int(self._send("DEL", *batch))
                batch = []
        if batch:
            count += int(self._send("DEL", *batch))
        return count
