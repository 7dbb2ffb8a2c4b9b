"""redis-py's RedisCluster through a node's death or leave, for
server/cluster_failover_test.go: python3 redispy_failover.py host:port...

It sends decisions on keys over every node, one at a time, prints "ready"
once it has sent 300, "err <unix ms> <error>" for each that fails,
"clean <unix ms>" each time 300 in a row (every key once) succeeded, and
"done <sent>" once a line "stop" arrives on stdin."""
import sys
import threading
import time

from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisError


def main():
    nodes = []
    for a in sys.argv[1:]:
        host, port = a.rsplit(":", 1)
        nodes.append(ClusterNode(host, int(port)))
    rc = RedisCluster(startup_nodes=nodes, socket_connect_timeout=1, socket_timeout=1,
                      cluster_error_retry_attempts=5)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    sent = 0
    clean = 0
    while not stop.is_set():
        try:
            rc.execute_command("RL.SLIDE", "failover:%d" % (sent % 300), 1000000, 3600)
            clean += 1
            if clean % 300 == 0:
                print("clean %d" % (time.time() * 1000), flush=True)
        except (RedisError, OSError) as e:
            clean = 0
            print("err %d %s: %s" % (time.time() * 1000, type(e).__name__, e), flush=True)
        sent += 1
        if sent == 300:
            print("ready", flush=True)
    print("done %d" % sent, flush=True)
    rc.close()


main()
