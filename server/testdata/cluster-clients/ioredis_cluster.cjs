// ioredis's Cluster client against a 3-node rlstore: node ioredis_cluster.cjs host:port...
// ioredis comes from ../clients/node_modules (NODE_PATH), pinned by that lockfile.
'use strict';
const Redis = require('ioredis');

async function main() {
  const nodes = process.argv.slice(2).map((a) => {
    const i = a.lastIndexOf(':');
    return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
  });
  const cluster = new Redis.Cluster(nodes, { enableReadyCheck: true });
  try {
    for (let k = 0; k < 20; k++) {
      const key = `ioredis:${k}`;
      let allowed = 0;
      for (let i = 0; i < 8; i++) {
        const rep = await cluster.call('RL.SLIDE', key, 5, 3600);
        allowed += Number(rep[0]);
      }
      if (allowed !== 5) throw new Error(`${key}: ${allowed} admitted, want 5 (one limit per key)`);
    }
    const slot = await cluster.call('CLUSTER', 'KEYSLOT', '{user1000}.following');
    if (Number(slot) !== 3443) throw new Error(`CLUSTER KEYSLOT = ${slot}`);
    const pipe = cluster.pipeline();
    for (let i = 0; i < 10; i++) pipe.call('RL.TOKEN', `{tag}:${i}`, 10, 1, '1s');
    const res = await pipe.exec();
    for (const [err, rep] of res) {
      if (err || Number(rep[1]) !== 10) throw new Error(`pipeline: ${err} ${rep}`);
    }
    console.log('ioredis Cluster: one limit per key over', nodes.length, 'nodes');
  } finally {
    cluster.disconnect();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
