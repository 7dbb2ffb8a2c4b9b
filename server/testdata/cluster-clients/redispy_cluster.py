"""redis-py's RedisCluster against a 3-node rlstore: python3 redispy_cluster.py host:port..."""
import sys

from redis.cluster import ClusterNode, RedisCluster


def main():
    nodes = []
    for a in sys.argv[1:]:
        host, port = a.rsplit(":", 1)
        nodes.append(ClusterNode(host, int(port)))
    rc = RedisCluster(startup_nodes=nodes)
    for k in range(20):
        key = "redispy:%d" % k
        allowed = sum(int(rc.execute_command("RL.SLIDE", key, 5, 3600)[0]) for _ in range(8))
        assert allowed == 5, "%s: %d admitted, want 5 (one limit per key)" % (key, allowed)
        owner = rc.get_node_from_key(key)
        assert owner is not None, key
    assert rc.keyslot("{user1000}.following") == 3443
    assert int(rc.execute_command("CLUSTER", "KEYSLOT", "{user1000}.following")) == 3443
    print("redis-py RedisCluster: one limit per key over %d nodes" % len(nodes))
    rc.close()


main()
