// node-redis 5's createCluster through a node's death or leave, for
// server/cluster_failover_test.go: node noderedis_failover.cjs host:port...
// It sends decisions on keys over every node, one at a time, prints "ready"
// once it has sent 300, "err <unix ms> <error>" for each that fails,
// "clean <unix ms>" each time 300 in a row (every key once) succeeded, and
// "done <sent>" once a line "stop" arrives on stdin. The cluster has the
// settings docs/clients.md gives node-redis (disableOfflineQueue, a name
// and a command timeout), and each command a deadline of its own
// (withDeadline), as docs/clients.md tells applications to set.
'use strict';
const { createCluster } = require('redis5');

// withDeadline rejects if p has not settled within ms. node-redis's
// commandOptions.timeout stops counting once a command is written: after a
// kill -9 of its node, about one run in five left a written command with
// no reply and no error for good (its connection was gone, the client
// still ready).
function withDeadline(p, ms) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no reply within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

async function main() {
  const cluster = createCluster({
    rootNodes: process.argv.slice(2).map((a) => ({ url: `redis://${a}` })),
    commandOptions: { timeout: 1000 },
    // disableOfflineQueue: a command for a node whose connection is down
    // fails at once rather than wait in the offline queue for the timeout:
    // the script goes on to other nodes' keys, and one of them brings the
    // MOVED that reloads the slot map as soon as the survivors' table
    // changes. name: a reconnect's handshake then needs a reply
    // (noderedis_reset.cjs).
    defaults: { disableOfflineQueue: true, name: 'failover' },
  });
  cluster.on('error', () => {}); // each failed command reports its own
  await cluster.connect();
  let stop = false;
  process.stdin.on('data', () => { stop = true; });
  let sent = 0;
  let clean = 0;
  while (!stop) {
    const key = `failover:${sent % 300}`;
    try {
      await withDeadline(cluster.sendCommand(key, false, ['RL.SLIDE', key, '1000000', '3600']), 2000);
      clean++;
      if (clean % 300 === 0) console.log(`clean ${Date.now()}`);
    } catch (e) {
      clean = 0;
      console.log(`err ${Date.now()} ${e.name}: ${e.message}`);
    }
    sent++;
    if (sent === 300) console.log('ready');
  }
  console.log(`done ${sent}`);
  cluster.destroy();
  process.exit(0);
}

main().catch((e) => { console.error(e); process.exit(1); });
