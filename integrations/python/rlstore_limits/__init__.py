"""rlstore storage for the ``limits`` library (and so Flask-Limiter and SlowAPI).

Importing this package registers the ``rlstore://host:port`` storage scheme::

    import rlstore_limits  # noqa: F401  (registers rlstore://)
    limiter = Limiter(get_remote_address, app=app, storage_uri="rlstore://127.0.0.1:6379")

Each strategy maps onto one atomic rlstore command instead of a Lua script
(limits 2.8, 3.x, 4.x and 5.x; keys are named as the installed limits'
Redis storage names them):

- fixed window -> ``RL.FIXED ... ANCHOR FIRST`` (a window starts at its
  first hit, as the Redis storage's key does);
- fixed window with elastic expiry -> ``RL.SLIDE``;
- moving window, and limits 4.1's sliding window counter -> ``RL.LOG``
  (exact, millisecond precision; ``RL.SLIDE`` above a limit of 4000).

Denied hits are never counted, unlike the Redis storage, which counts them.
"""

from .storage import RlstoreStorage

__all__ = ["RlstoreStorage"]
__version__ = "0.1.0"
