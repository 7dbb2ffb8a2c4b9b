"""A stalled rlstore (a listener that accepts and never answers, like a
SIGSTOPped server) costs a request the storage's timeout (0.25 s by
default), then Flask-Limiter's swallow_errors decides: 500, or the request
is served. Needs no rlstore."""

import socket
import threading
import time
import unittest

import rlstore_limits  # noqa: F401  registers rlstore://
from flask import Flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits.storage import storage_from_string


class Stalled:
    def __enter__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.conns = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()
        return "rlstore://127.0.0.1:%d" % self.sock.getsockname()[1]

    def _accept(self):
        try:
            while True:
                self.conns.append(self.sock.accept()[0])
        except OSError:
            pass

    def __exit__(self, *exc):
        self.sock.close()
        for c in self.conns:
            c.close()


class TimeoutTest(unittest.TestCase):
    def test_default_timeout(self):
        with Stalled() as uri:
            storage = storage_from_string(uri)
            self.assertEqual(storage.storage.connection_pool.connection_kwargs["socket_timeout"], 0.25)
            start = time.monotonic()
            with self.assertRaises(Exception):
                storage.incr("LIMITER/k/5/1/second", 1)
            # far beyond 0.25 s: the call waited for the stall, it is not slow
            self.assertLess(time.monotonic() - start, 20)

    def test_flask_swallow_errors(self):
        with Stalled() as uri:
            for swallow, want in ((False, 500), (True, 200)):
                app = Flask(__name__)
                limiter = Limiter(get_remote_address, app=app, storage_uri=uri, swallow_errors=swallow,
                                  storage_options={"socket_timeout": 0.1})
                app.logger.disabled = True

                @app.route("/")
                @limiter.limit("3 per 10 seconds")
                def index():
                    return "ok"

                self.assertEqual(app.test_client().get("/").status_code, want)
