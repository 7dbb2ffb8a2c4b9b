"""A wrong or missing password fails when the storage is made (at
startup) with limits' ConfigurationError, also under Flask-Limiter with
swallow_errors, instead of at every request; an rlstore that does not
answer then is an outage, logged, not a configuration error. Needs
RLSTORE_AUTH_ADDR, an rlstore started with --requirepass sekret."""

import os
import socket
import unittest

import rlstore_limits  # noqa: F401  registers rlstore://
from flask import Flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits import parse, strategies
from limits.errors import ConfigurationError
from limits.storage import storage_from_string

AUTH_ADDR = os.environ.get("RLSTORE_AUTH_ADDR", "")
if not AUTH_ADDR and os.environ.get("CI") == "true":
    raise RuntimeError("RLSTORE_AUTH_ADDR is not set (CI=true forbids skipping)")


@unittest.skipUnless(AUTH_ADDR, "RLSTORE_AUTH_ADDR is not set: start rlstore --requirepass sekret and set it")
class AuthAtStartupTest(unittest.TestCase):
    def test_wrong_or_missing_password(self):
        for uri, word in (("rlstore://:wrong@" + AUTH_ADDR, "WRONGPASS|invalid"),
                          ("rlstore://" + AUTH_ADDR, "NOAUTH|Authentication required")):
            with self.assertRaisesRegex(ConfigurationError, word):
                storage_from_string(uri)

    def test_right_password(self):
        storage = storage_from_string("rlstore://:sekret@" + AUTH_ADDR)
        self.assertTrue(strategies.MovingWindowRateLimiter(storage).hit(parse("1/minute"), "auth-ok"))

    def test_flask_limiter_fails_at_startup_even_swallowing_errors(self):
        app = Flask(__name__)
        with self.assertRaises(ConfigurationError):
            Limiter(get_remote_address, app=app, storage_uri="rlstore://:wrong@" + AUTH_ADDR, swallow_errors=True)

    def test_outage_is_not_a_configuration_error(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        with self.assertLogs("rlstore_limits.storage", "WARNING") as logs:
            storage_from_string("rlstore://127.0.0.1:%d" % port)
        self.assertIn("did not answer", logs.output[0])
