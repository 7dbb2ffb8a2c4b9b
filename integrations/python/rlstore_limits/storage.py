"""The rlstore:// storage class for limits 2.8 (Debian's python3-limits)."""

import logging
import threading
import time
import urllib.parse

import limits
import redis
from limits.errors import ConfigurationError
from limits.storage import MovingWindowSupport, RedisStorage, Storage

try:
    from limits.storage import SlidingWindowCounterSupport
except ImportError:  # limits before 4.1 has no sliding window counter
    SlidingWindowCounterSupport = None

log = logging.getLogger(__name__)

# RL.LOG, exact to the millisecond, takes limits up to 4000 (one entry per
# busy millisecond); above it a moving window is RL.SLIDE over the window
# plus one second, which still holds any window-long span to the limit.
MAX_LOG_LIMIT = 4000

# A limit of 0 denies every hit, and limits' Redis storage still counts
# each one in the key (INCR, then compare): the key exists, get() and
# get_expiry() report it, reset() deletes it. rlstore refuses a limit of 0,
# so such a key is counted at the largest limit RL.FIXED and RL.SLIDE take,
# and the strategy, comparing the count with 0, denies.
COUNT_CEILING = 4294967295

# limits 3 and later's RedisStorage puts a prefix and a colon before every
# key ("LIMITS:", or its key_prefix option from limits 4 on) and its reset()
# deletes the keys under it; 2.8's uses the bare key and deletes LIMITER*.
# The storage names and resets keys as the installed limits' RedisStorage
# does.
REDIS_PREFIX = getattr(RedisStorage, "PREFIX", None)


def _whole_seconds(version):
    """Whether limits VERSION reads times in whole seconds: before 4.0 its
    Redis storage truncated expiries and window starts to int; from 4.0 on
    they are floats, since truncating made a reset up to a second early."""
    try:
        return int(str(version).split(".")[0]) < 4
    except ValueError:
        return False


# The type of the times get_expiry and get_moving_window return, as the
# installed limits' Redis storage returns them.
_time = int if _whole_seconds(getattr(limits, "__version__", "")) else float

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


_BASES = (Storage, MovingWindowSupport) + ((SlidingWindowCounterSupport,) if SlidingWindowCounterSupport else ())


class RlstoreStorage(*_BASES):
    """Rate-limit storage on rlstore. ``rlstore://[:password@]host:port``;
    keyword options are passed to ``redis.Redis``.

    The limit is read from the key (limits puts amount, multiples and
    granularity at its end), so ``incr`` can ask rlstore for a decision: it
    admits and counts, or denies and counts nothing, atomically.

    ``key_prefix`` (limits 4's RedisStorage option) goes before every key
    with a colon; the default is the installed limits' RedisStorage's
    (``LIMITS`` from limits 3 on, none in 2.8).
    """

    STORAGE_SCHEME = ["rlstore", "rlstores"]

    #: Seconds to wait to connect and for each reply unless the options (or
    #: the URI's query) say otherwise: a stalled rlstore then costs a request
    #: this long, after which the library's error handling (Flask-Limiter's
    #: swallow_errors) decides, instead of redis-py's default of no timeout.
    DEFAULT_TIMEOUT = 0.25

    def __init__(self, uri, **options):
        pool = options.pop("connection_pool", None)
        prefix = options.pop("key_prefix", REDIS_PREFIX)
        self._prefix = "" if prefix is None else prefix + ":"
        super().__init__(uri, **_base_options(options))
        options.pop("wrap_exceptions", None)
        if pool is not None:
            self.storage = redis.Redis(connection_pool=pool)
        else:
            options.setdefault("socket_timeout", self.DEFAULT_TIMEOUT)
            options.setdefault("socket_connect_timeout", self.DEFAULT_TIMEOUT)
            parsed = urllib.parse.urlparse(uri)
            scheme = "rediss" if parsed.scheme == "rlstores" else "redis"
            # redis.from_url, as limits' RedisStorage calls it (its tests spy on it)
            self.storage = redis.from_url(parsed._replace(scheme=scheme).geturl(), **options)
            _check_options(self.storage)
        self._verify()

    def _verify(self):
        """Asks rlstore, once, whether it takes the credentials, so that a
        wrong or missing password fails when the storage is made (at
        startup) with ConfigurationError, not at every request. No answer
        is an outage, not a configuration error: it is logged, and each
        request then fails as the library's error handling says."""
        try:
            _ping(self.storage.connection_pool)
        except (redis.exceptions.AuthenticationError, redis.exceptions.NoPermissionError) as e:
            raise ConfigurationError("rlstore refused the storage's credentials (check the password in the URI or options): %s" % e) from e
        except redis.exceptions.ResponseError as e:
            if str(e).startswith(("NOAUTH", "WRONGPASS", "NOPERM")):
                raise ConfigurationError("rlstore refused the storage's credentials (check the password in the URI or options): %s" % e) from e
            raise
        except redis.exceptions.RedisError as e:
            log.warning("rlstore did not answer when the storage was made; requests fail until it does: %s", e)

    @property
    def base_exceptions(self):
        """What limits 4 and later wrap in StorageError (wrap_exceptions)."""
        return redis.exceptions.RedisError

    def _send(self, *args):
        return self.storage.execute_command(*args)

    def _key(self, key):
        return self._prefix + key

    def _decide(self, command, key, window, amount=1, peek=False):
        """A fixed-window decision: RL.FIXED with ANCHOR FIRST (a window
        starts at its first hit and lasts the window, as the INCR + EXPIRE
        key of limits' Redis storage does), or with elastic expiry RL.SLIDE."""
        limit, seconds = _limit_of(key)
        args = [command, key, limit or COUNT_CEILING, window if window is not None else seconds]
        if command == "RL.FIXED":
            args += ["ANCHOR", "FIRST"]
        if amount != 1:
            args += ["COST", amount]
        if peek:
            args.append("PEEK")
        return _Decision(self._send(*args))

    # -- fixed window -----------------------------------------------------

    def incr(self, key, expiry, elastic_expiry=False, amount=1):
        """Charges amount and returns the count after it. A denial counts
        nothing and returns limit + amount, which the strategy reads as
        over the limit. A limit of 0 counts every hit (COUNT_CEILING)."""
        key = self._key(key)
        command = "RL.SLIDE" if elastic_expiry else "RL.FIXED"
        d = self._decide(command, key, int(expiry), amount)
        self._remember(key, d)
        if d.allowed == 1:
            return d.limit - d.remaining
        return d.limit - d.remaining + amount

    # A strategy's get_window_stats (which Flask-Limiter calls for its
    # headers right after hit) asks get and get_expiry: two more round trips,
    # three with get's TYPE. The reply incr got already says both, so the
    # thread that made it answers the next get and the next get_expiry of
    # that key from it, once each and within _REPLY_FRESH seconds; any other
    # call asks rlstore.
    _REPLY_FRESH = 1.0

    def _remember(self, key, d):
        self._local().last = (key, time.monotonic(), d.limit - d.remaining, time.time() + d.reset_ms / 1000)

    def _local(self):
        local = self.__dict__.get("_thread_local")
        if local is None:
            local = self.__dict__.setdefault("_thread_local", threading.local())
        return local

    def _recall(self, key, part):
        """The count (part 2) or the expiry (part 3) incr's reply gave for
        key, once, if this thread's last incr was on key and fresh."""
        local = self._local()
        last = getattr(local, "last", None)
        if last is None or last[0] != key or last[part] is None or time.monotonic() - last[1] > self._REPLY_FRESH:
            return None
        value = last[part]
        local.last = last[:part] + (None,) + last[part + 1:]
        return value

    def get(self, key):
        """The key's count in its current fixed window, without changing it."""
        key = self._key(key)
        count = self._recall(key, 2)
        if count is not None:
            return count
        kind = self._send("TYPE", key)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "none":
            return 0
        command = "RL.SLIDE" if kind == "slide" else "RL.FIXED"
        d = self._decide(command, key, None, peek=True)
        return d.limit - d.available()

    def get_expiry(self, key):
        """The Unix time at which the key is back to its full limit."""
        key = self._key(key)
        at = self._recall(key, 3)
        if at is not None:
            return _time(at)
        return _time(max(int(self._send("PTTL", key)), 0) / 1000 + time.time())

    # -- moving window ----------------------------------------------------

    def _moving(self, key, limit, expiry, *extra):
        """A moving-window decision: RL.LOG, or RL.SLIDE over expiry + 1 s
        above MAX_LOG_LIMIT."""
        if int(limit) <= MAX_LOG_LIMIT:
            args = ["RL.LOG", key, int(limit), int(expiry)]
        else:
            args = ["RL.SLIDE", key, int(limit), int(expiry) + 1]
        return _Decision(self._send(*(args + list(extra))))

    def acquire_entry(self, key, limit, expiry, amount=1):
        if int(limit) == 0:
            return False
        key = self._key(key)
        extra = ["COST", amount] if amount != 1 else []
        d = self._moving(key, limit, expiry, *extra)
        self._local().moving = (key, time.monotonic(), time.time(), amount, d)
        return d.allowed == 1

    def get_moving_window(self, key, limit, expiry):
        """(start of the window, entries in it): the start is when the oldest
        entry came in, so start + expiry is when one unit frees up."""
        return self._moving_window(self._key(key), limit, expiry)

    # A strategy's get_window_stats (Flask-Limiter's headers, right after
    # hit) asks for the window's oldest entry, which no single reply says.
    # The thread's last acquire_entry on the key, once and within
    # _REPLY_FRESH, says how many entries there are, and sometimes when the
    # oldest leaves: when the acquire is all the window holds (its reset),
    # or when a cost of 1 was denied (its wait). Otherwise one PEEK asks
    # for it; without that reply, a PEEK of cost 1 first counts them.

    def _recall_moving(self, key):
        local = self._local()
        last = getattr(local, "moving", None)
        local.moving = None
        if last is None or last[0] != key or time.monotonic() - last[1] > self._REPLY_FRESH:
            return None
        return last[2:]

    def _moving_window(self, key, limit, expiry):
        now = time.time()
        if int(limit) == 0:
            return _time(now), 0
        last = self._recall_moving(key)
        if last is not None:
            at, cost, d = last
            count = int(limit) - d.remaining
            if count <= 0:
                return _time(now), 0
            if d.allowed == 1 and count == cost:
                return _time(at + d.reset_ms / 1000 - int(expiry)), count
            if d.allowed == 0 and cost == 1:
                return _time(at + d.wait_ms / 1000 - int(expiry)), count
            start = self._oldest(key, limit, expiry, count, now)
            if start is not None:
                return start, count
        for _ in range(3):  # again only if an entry left between two PEEKs
            d = self._moving(key, limit, expiry, "PEEK")
            count = int(limit) - d.available()
            if count <= 0:
                return _time(now), 0
            if d.allowed == 0:  # full: a cost of 1 waits for the oldest entry
                return _time(now + d.wait_ms / 1000 - int(expiry)), count
            start = self._oldest(key, limit, expiry, count, now)
            if start is not None:
                return start, count
        return _time(now), count

    def _oldest(self, key, limit, expiry, count, now):
        """The start of the window holding count entries: the smallest cost
        that does not fit waits exactly for the oldest. None if it fits (an
        entry has left since count was read)."""
        d = self._moving(key, limit, expiry, "COST", int(limit) - count + 1, "PEEK")
        if d.allowed == 1:
            return None
        return _time(now + d.wait_ms / 1000 - int(expiry))

    # -- sliding window counter (limits 4.1 and later) ---------------------

    def acquire_sliding_window_entry(self, key, limit, expiry, amount=1):
        """limits' sliding-window-counter strategy estimates a sliding
        window from two fixed windows; rlstore's moving window is exact, so
        it answers the strategy's question without the estimate."""
        return self.acquire_entry(key, limit, expiry, amount)

    def get_sliding_window(self, key, expiry):
        """(previous count, its TTL, current count, its TTL): everything is
        in the current window, whose TTL is when its oldest entry frees."""
        key = self._key(key)
        limit, _ = _limit_of(key)
        start, count = self._moving_window(key, limit, expiry)
        if count == 0:
            return 0, 0.0, 0, 0.0
        return 0, 0.0, count, max(start + int(expiry) - time.time(), 0.0)

    def clear_sliding_window(self, key, expiry):
        self.clear(key)

    # -- housekeeping -----------------------------------------------------

    def check(self):
        try:
            return bool(self.storage.ping())
        except redis.exceptions.RedisError:
            return False

    def clear(self, key):
        self._send("DEL", self._key(key))

    def reset(self):
        """Deletes every key limits made and returns how many: those under
        the key prefix, or with limits 2.8 those starting with LIMITER."""
        count = 0
        batch = []
        for key in self.storage.scan_iter(match=self._prefix + "*" if self._prefix else "LIMITER*", count=1000):
            batch.append(key)
            if len(batch) == 500:
                count += int(self._send("DEL", *batch))
                batch = []
        if batch:
            count += int(self._send("DEL", *batch))
        return count


def _base_options(options):
    """The options limits' own Storage.__init__ takes (wrap_exceptions, in
    limits 4 and later); the rest go to redis-py."""
    return {"wrap_exceptions": options["wrap_exceptions"]} if "wrap_exceptions" in options else {}


def _check_options(client):
    """Builds (without connecting) one connection from the pool's settings,
    so an option redis-py does not know fails when the storage is made, at
    startup, not on the first request."""
    pool = client.connection_pool
    pool.connection_class(**pool.connection_kwargs)


def _ping(pool, least=1.0):
    """PING on a connection of its own that waits at least `least` seconds
    to connect and for the reply (a busy server's late answer must not pass
    for an outage), with the pool's other settings."""
    kwargs = dict(pool.connection_kwargs)
    for k in ("socket_timeout", "socket_connect_timeout"):
        if kwargs.get(k) is not None:
            kwargs[k] = max(kwargs[k], least)
    conn = pool.connection_class(**kwargs)
    try:
        conn.connect()
        conn.send_command("PING")
        conn.read_response()
    finally:
        conn.disconnect()
