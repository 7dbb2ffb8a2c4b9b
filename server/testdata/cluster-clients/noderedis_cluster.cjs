// node-redis 5's createCluster against a 3-node rlstore: node noderedis_cluster.cjs host:port...
// node-redis comes from ../clients/node_modules (NODE_PATH), pinned by that lockfile.
'use strict';
const { createCluster } = require('redis5');

// send retries a command the cluster answered CLUSTERDOWN, as ioredis and
// redis-py do by themselves and node-redis does not: a node whose lease
// lapsed on a loaded host (a -race run) decided nothing, so the count of
// admissions stays exact.
let downs = 0;
async function send(cluster, key, args) {
  for (let i = 0; ; i++) {
    try {
      return await cluster.sendCommand(key, false, args);
    } catch (e) {
      if (i >= 50 || !String(e.message).startsWith('CLUSTERDOWN')) throw e;
      downs++;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function main() {
  const cluster = createCluster({
    rootNodes: process.argv.slice(2).map((a) => ({ url: `redis://${a}` })),
    commandOptions: { timeout: 1000 },
  });
  cluster.on('error', (e) => console.error('cluster:', e));
  await cluster.connect();
  try {
    if (cluster.masters.length !== process.argv.length - 2) {
      throw new Error(`${cluster.masters.length} masters, want ${process.argv.length - 2}`);
    }
    for (let k = 0; k < 20; k++) {
      const key = `noderedis:${k}`;
      let allowed = 0;
      for (let i = 0; i < 8; i++) {
        const rep = await send(cluster, key, ['RL.SLIDE', key, '5', '3600']);
        allowed += Number(rep[0]);
      }
      if (allowed !== 5) throw new Error(`${key}: ${allowed} admitted, want 5 (one limit per key)`);
    }
    const reps = await Promise.all([...Array(10).keys()].map((i) =>
      send(cluster, `{tag}:${i}`, ['RL.TOKEN', `{tag}:${i}`, '10', '1', '1s'])));
    for (const rep of reps) {
      if (Number(rep[1]) !== 10) throw new Error(`pipelined: ${rep}`);
    }
    console.log('node-redis createCluster: one limit per key over', cluster.masters.length, 'nodes;', downs, 'CLUSTERDOWN retried');
  } finally {
    cluster.destroy();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
