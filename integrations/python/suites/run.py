"""Runs limits 2.8's own Redis storage and strategy tests (tests/ of limits'
repository at 2.8.0, in $RLSTORE_SUITES/limits: see
integrations/node/suites/suites.sh; their code is not part of this
repository) against rlstore with
RlstoreStorage, and compares the outcome with EXPECTED_FAILURES: every test
passes except those listed, each with why; a listed test that passes fails
the run too. integrations/TestPythonLimitsSuite runs it; by hand:

    RLSTORE_SUITES=/tmp/suites RLSTORE_ADDR=127.0.0.1:6379 RLSTORE_AUTH_ADDR=127.0.0.1:6380 \\
        /usr/bin/python3 suites/run.py

(the second rlstore started with --requirepass sekret). It needs Debian's
python3-pytest, python3-pytest-mock and python3-pytest-lazy-fixture, and
flushes both rlstores.

The tests are rewritten, in a temporary folder, only where they name Redis: its URLs become the
rlstores' rlstore:// URLs, RedisStorage becomes RlstoreStorage, and the
connection-pool test builds its redis-py pool from the same address with
redis:// (redis-py does not know rlstore://). Of the parametrized strategy
tests, the Redis ones run (-m redis); the Unix-socket and TLS storage
classes do not (rlstore has no Unix socket; its TLS test certificates are
not limits')."""

import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.environ.get("RLSTORE_SUITES", ""), "limits")

# Tests expected to fail, each with why. None today: RL.FIXED ANCHOR FIRST
# gives test_fixed_window its first-hit window, and a limit of 0 counts its
# hits in a key, so test_reset finds all ten.
EXPECTED_FAILURES = {}

# Tests that pass or fail by the clock: either outcome is accepted, and reported.
EITHER = {}


def rewrite(text, addr, auth_addr):
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
    return text


def copy(tmp, addr, auth_addr):
    for rel in ("tests/__init__.py", "tests/storage/__init__.py"):
        os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
        open(os.path.join(tmp, rel), "w").close()
    for rel in ("tests/utils.py", "tests/test_strategy.py", "tests/storage/test_redis.py"):
        with open(os.path.join(SRC, rel)) as f:
            text = rewrite(f.read(), addr, auth_addr)
        with open(os.path.join(tmp, rel), "w") as f:
            f.write(text)
    shutil.copy(os.path.join(HERE, "conftest.py"), tmp)


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
    addr, auth_addr = os.environ.get("RLSTORE_ADDR"), os.environ.get("RLSTORE_AUTH_ADDR")
    if not addr or not auth_addr:
        sys.exit("RLSTORE_ADDR and RLSTORE_AUTH_ADDR (an rlstore with --requirepass sekret) must be set")
    tmp = tempfile.mkdtemp(prefix="limits-suite-")
    try:
        copy(tmp, addr, auth_addr)
        xml = os.path.join(tmp, "out.xml")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "redis",
               "--junitxml", xml, "-k", "TestRedisStorage or TestRedisAuthStorage or TestWindow",
               "tests/storage/test_redis.py", "tests/test_strategy.py"]
        subprocess.run(cmd, cwd=tmp, env=env, check=False)
        got = outcomes(xml)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # The test ids name the rewritten URL; report them as limits names them.
    got = {k.replace("rlstore://" + addr, "redis://localhost:7379"): v for k, v in got.items()}
    problems = []
    for name, problem in sorted(got.items()):
        if name in EITHER:
            continue
        if problem is not None and name not in EXPECTED_FAILURES:
            problems.append("FAILED (not expected): %s: %s" % (name, problem))
        if problem is None and name in EXPECTED_FAILURES:
            problems.append("PASSED but listed as failing in run.py: %s" % name)
    for name in EXPECTED_FAILURES:
        if name not in got:
            problems.append("listed but not run: %s" % name)
    passed = sum(1 for v in got.values() if v is None)
    print("\nlimits 2.8 storage and strategy tests with RlstoreStorage: %d of %d pass" % (passed, len(got)))
    for name, problem in sorted(got.items()):
        if problem is not None:
            print("  failing: %s: %s" % (name, EXPECTED_FAILURES.get(name) or EITHER.get(name) or problem))
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
