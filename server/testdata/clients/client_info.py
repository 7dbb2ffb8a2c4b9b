"""redis-py 4.3.4 (Debian's python3-redis) parses CLIENT INFO and CLIENT LIST
with int() on Redis's integer fields, so a missing one raises KeyError."""
import sys

import redis

host, port = sys.argv[1].rsplit(":", 1)
r = redis.Redis(host=host, port=int(port))
info = r.client_info()
assert info["tot-mem"] >= 0 and info["argv-mem"] > 0, info
assert info["cmd"] == "client|info", info
listed = r.client_list()
assert any(int(c["id"]) == info["id"] for c in listed), listed
assert r.execute_command("RL.SLIDE", "py:k", 10, 60)[0] == 1
print("redis-py %s: client_info() and client_list() parsed every field" % redis.__version__)
