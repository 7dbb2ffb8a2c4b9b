"""Runs limits' own Redis storage and strategy tests against rlstore with
RlstoreStorage, and compares the outcome with EXPECTED_FAILURES: every test
passes except those listed, each with why; a listed test that passes fails
the run too. Their code is not part of this repository:
integrations/node/suites/suites.sh fetches it into $RLSTORE_SUITES.

    run.py            limits 2.8.0's tests ($RLSTORE_SUITES/limits) with
                      Debian's python3-limits 2.8;
    run.py VERSION    limits VERSION's tests with limits VERSION itself, both
                      from $RLSTORE_SUITES/limits-VERSION (3.14.1, 4.8.0,
                      5.8.0: PyPI is not reachable, so limits is imported
                      from that source, ahead of Debian's).

integrations/TestPythonLimitsSuite runs it; by hand:

    RLSTORE_SUITES=/tmp/suites RLSTORE_ADDR=127.0.0.1:6379 RLSTORE_AUTH_ADDR=127.0.0.1:6380 \\
        /usr/bin/python3 suites/run.py [VERSION]

(the second rlstore, which only 2.8's tests use, started with --requirepass
sekret). With RLSTORE_REFERENCE=redis the same tests run unchanged with
limits' RedisStorage against the Redis servers at those addresses: the
reference the counts are compared with. It needs Debian's python3-pytest,
python3-pytest-mock and python3-pytest-lazy-fixture (limits 3 and later
import it as pytest_lazy_fixtures.lf: a two-line alias is written next to the
tests), and flushes the servers.

The tests are rewritten, in a temporary folder, only where they name Redis: its URLs become the
rlstores' rlstore:// URLs, RedisStorage becomes RlstoreStorage, and the
connection-pool test builds its redis-py pool from the same address with
redis:// (redis-py does not know rlstore://). Of the parametrized strategy
tests, the Redis ones run (-m redis); the Unix-socket and TLS storage
classes do not (rlstore has no Unix socket; its TLS test certificates are
not limits'). From limits 3 on, the Redis cases of tests/test_storage.py
(TestConcreteStorages), tests/storage/test_redis.py and tests/test_strategy.py
(fixed window, elastic expiry, moving window, sliding window counter) run:
-m redis, less the Unix-socket ones."""

import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SUITES = os.environ.get("RLSTORE_SUITES", "")
REFERENCE = os.environ.get("RLSTORE_REFERENCE") == "redis"

# Tests expected to fail, per version, each with why; a test of limits 3 and
# later is named as in 3.x's ids (redis, redis_basic).
_CUSTOM_PREFIX = (
    "increments a key no RateLimitItem made ('test': the limit, which rlstore "
    "decides with, is unknown) and reads the counter back with GET, which "
    "rlstore does not have (a key holds a decision's state, not a string); "
    "key_prefix itself is taken (test_limits.py)")
_PREVIOUS_WINDOW = (
    "checks the sliding window counter's estimate: 3 hits in the previous "
    "window still weigh ~3 when the next starts, and the reset is 1/3 s away; "
    "rlstore answers the strategy with its exact moving window (RL.LOG), in "
    "which those hits have left: 5 remain, reset now")
EXPECTED_FAILURES = {
    "2.8": {},
    "3.14.1": {},
    "4.8.0": {
        "tests.storage.test_redis.TestRedisStorage::test_custom_prefix[redis_basic]": _CUSTOM_PREFIX,
        "tests.test_strategy.TestSlidingWindow::test_sliding_window_counter_previous_window[redis_basic]": _PREVIOUS_WINDOW,
    },
    "5.8.0": {
        "tests.storage.test_redis.TestRedisStorage::test_custom_prefix[redis_basic]": _CUSTOM_PREFIX,
        "tests.test_strategy.TestSlidingWindow::test_sliding_window_counter_previous_window[redis_basic]": _PREVIOUS_WINDOW,
        "tests.test_strategy.TestMovingWindow::test_moving_window_huge_cost[redis_basic]": (
            "a moving window of 1,000,000 per 2 s is RL.SLIDE over 3 s, whole "
            "seconds (RL.LOG takes up to 4000): the first hit, 2 s old, still "
            "counts; Redis 7.0 fails it too: its list holds all 1,000,000 "
            "entries, yet limits' window script counts none (1,000,000 remain)"),
    },
}

# Tests that pass or fail by the clock: either outcome is accepted, and reported.
EITHER = {}

# What limits 3 and later's tests import as pytest_lazy_fixtures (the
# pytest-lazy-fixtures package); Debian has its predecessor.
LAZY_FIXTURES = "from pytest_lazyfixture import lazy_fixture as lf  # noqa: F401\n"


def rewrite(text, addr, auth_addr):
    if REFERENCE:
        subs = [
            ('"redis://localhost:7379"', '"redis://%s"' % addr),
            ('"redis://:sekret@localhost:7389"', '"redis://:sekret@%s"' % auth_addr),
        ]
    else:
        subs = [
            ('"redis://localhost:7379"', '"rlstore://%s"' % addr),
            ('"redis://:sekret@localhost:7389"', '"rlstore://:sekret@%s"' % auth_addr),
            ("from limits.storage import RedisStorage, storage_from_string",
             "from limits.storage import storage_from_string\nfrom rlstore_limits import RlstoreStorage as RedisStorage"),
            ("BlockingConnectionPool.from_url(self.storage_url)",
             'BlockingConnectionPool.from_url(self.storage_url.replace("rlstore://", "redis://", 1))'),
            ('storage_from_string("redis://", connection_pool=pool)', 'storage_from_string("rlstore://", connection_pool=pool)'),
        ]
    for old, new in subs:
        text = text.replace(old, new)
    if not REFERENCE and "    RedisStorage,\n" in text:
        # limits 3 and later import RedisStorage among others, in parentheses:
        # the class the tests expect is then RlstoreStorage.
        end = text.index(")\n", text.index("    RedisStorage,\n")) + 2
        text = text[:end] + "from rlstore_limits import RlstoreStorage as RedisStorage\n" + text[end:]
    return text


def copy(tmp, src, rels, addr, auth_addr):
    for rel in ("tests/__init__.py", "tests/storage/__init__.py"):
        os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
        open(os.path.join(tmp, rel), "w").close()
    for rel in rels:
        if not os.path.exists(os.path.join(src, rel)):
            continue
        with open(os.path.join(src, rel)) as f:
            text = rewrite(f.read(), addr, auth_addr)
        with open(os.path.join(tmp, rel), "w") as f:
            f.write(text)
    shutil.copy(os.path.join(HERE, "conftest.py"), tmp)


def newer(tmp, src, version):
    """Puts limits VERSION's package (from its source) and the
    pytest_lazy_fixtures alias where the tests import them first."""
    shutil.copytree(os.path.join(src, "limits"), os.path.join(tmp, "limits"))
    version_py = os.path.join(tmp, "limits", "_version.py")
    if not os.path.exists(version_py):  # written by hatch-vcs at build time (5.x)
        with open(version_py, "w") as f:
            f.write("__version__ = %r\n" % version)
    with open(os.path.join(tmp, "pytest_lazy_fixtures.py"), "w") as f:
        f.write(LAZY_FIXTURES)


def outcomes(xml):
    """{test id: None (passed) or the first line of its failure}."""
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = "%s::%s" % (case.get("classname").rsplit(".", 1)[0] + "." + case.get("classname").rsplit(".", 1)[1], case.get("name"))
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if case.find("skipped") is not None:
            out[name] = "skipped"
        else:
            out[name] = None if problem is None else (problem.get("message") or "failed").splitlines()[0]
    return out


def main():
    version = sys.argv[1] if len(sys.argv) > 1 else "2.8"
    addr, auth_addr = os.environ.get("RLSTORE_ADDR"), os.environ.get("RLSTORE_AUTH_ADDR")
    if not addr or (version == "2.8" and not auth_addr):
        sys.exit("RLSTORE_ADDR and, for 2.8, RLSTORE_AUTH_ADDR (an rlstore with --requirepass sekret) must be set")
    tmp = tempfile.mkdtemp(prefix="limits-suite-")
    try:
        xml = os.path.join(tmp, "out.xml")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "redis", "--junitxml", xml]
        if version == "2.8":
            src = os.path.join(SUITES, "limits")
            copy(tmp, src, ("tests/utils.py", "tests/test_strategy.py", "tests/storage/test_redis.py"), addr, auth_addr)
            cmd += ["-k", "TestRedisStorage or TestRedisAuthStorage or TestWindow",
                    "tests/storage/test_redis.py", "tests/test_strategy.py"]
        else:
            src = os.path.join(SUITES, "limits-" + version)
            rels = ("tests/utils.py", "tests/test_storage.py", "tests/storage/test_redis.py", "tests/test_strategy.py")
            copy(tmp, src, rels, addr, auth_addr)
            newer(tmp, src, version)
            env["PYTHONPATH"] = tmp + os.pathsep + env["PYTHONPATH"]
            cmd += ["-k", "not uds"] + [r for r in rels[1:] if os.path.exists(os.path.join(tmp, r))]
        subprocess.run(cmd, cwd=tmp, env=env, check=False)
        got = outcomes(xml)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    expected = {} if REFERENCE else EXPECTED_FAILURES.get(version, {})
    # The test ids name the rewritten URL; report them as limits names them.
    got = {k.replace("rlstore://" + addr, "redis://localhost:7379").replace("redis://" + addr, "redis://localhost:7379"): v for k, v in got.items()}
    problems = []
    for name, problem in sorted(got.items()):
        if name in EITHER:
            continue
        if problem is not None and name not in expected:
            problems.append("FAILED (not expected): %s: %s" % (name, problem))
        if problem is None and name in expected:
            problems.append("PASSED but listed as failing in run.py: %s" % name)
    for name in expected:
        if name not in got:
            problems.append("listed but not run: %s" % name)
    passed = sum(1 for v in got.values() if v is None)
    print("\nlimits %s storage and strategy tests with %s: %d of %d pass" % (
        version, "RedisStorage on Redis" if REFERENCE else "RlstoreStorage", passed, len(got)))
    for name, problem in sorted(got.items()):
        if problem is not None:
            print("  failing: %s: %s" % (name, expected.get(name) or EITHER.get(name) or problem))
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
