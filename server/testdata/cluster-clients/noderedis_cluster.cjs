// node-redis 5's createCluster against a 3-node rlstore: node noderedis_cluster.cjs host:port...
// node-redis comes from ../clients/node_modules (NODE_PATH), pinned by that lockfile.
'use strict';
const { createCluster } = require('redis5');

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
        const rep = await cluster.sendCommand(key, false, ['RL.SLIDE', key, '5', '3600']);
        allowed += Number(rep[0]);
      }
      if (allowed !== 5) throw new Error(`${key}: ${allowed} admitted, want 5 (one limit per key)`);
    }
    const reps = await Promise.all([...Array(10).keys()].map((i) =>
      cluster.sendCommand(`{tag}:${i}`, false, ['RL.TOKEN', `{tag}:${i}`, '10', '1', '1s'])));
    for (const rep of reps) {
      if (Number(rep[1]) !== 10) throw new Error(`pipelined: ${rep}`);
    }
    console.log('node-redis createCluster: one limit per key over', cluster.masters.length, 'nodes');
  } finally {
    cluster.destroy();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
