"""Fixtures for limits 2.8's own tests (fetched into $RLSTORE_SUITES/limits by
integrations/node/suites/suites.sh; run.py rewrites them into a temporary folder),
in place of its conftest, which starts Redis, Memcached and MongoDB in
Docker: redis_basic is the rlstore at RLSTORE_ADDR, redis_auth the one at
RLSTORE_AUTH_ADDR (started with --requirepass sekret, as limits' redis-auth
container is), each flushed before a test as limits' fixtures do."""

import os

import pytest
import redis

import rlstore_limits  # noqa: F401  registers rlstore://


def pytest_configure(config):
    for mark in ("redis", "redis_cluster", "redis_sentinel", "memcached", "mongodb", "flaky", "memory", "valkey", "valkey_cluster"):
        config.addinivalue_line("markers", mark + ": a mark of limits' own tests")


def _flushed(url):
    client = redis.from_url(url)
    client.flushall()
    return client


@pytest.fixture
def redis_basic():
    return _flushed("redis://" + os.environ["RLSTORE_ADDR"])


@pytest.fixture
def redis_auth():
    return _flushed("redis://:sekret@" + os.environ["RLSTORE_AUTH_ADDR"])
