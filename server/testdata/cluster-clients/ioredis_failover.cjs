// ioredis's Cluster through a node's death or leave, for
// server/cluster_failover_test.go: node ioredis_failover.cjs host:port...
// It sends decisions on keys over every node, one at a time, prints "ready"
// once it has sent 300, "err <unix ms> <error>" for each that fails,
// "clean <unix ms>" each time 300 in a row (every key once) succeeded, and
// "done <sent>" once a line "stop" arrives on stdin.
'use strict';
const Redis = require('ioredis');

async function main() {
  const nodes = process.argv.slice(2).map((a) => {
    const i = a.lastIndexOf(':');
    return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
  });
  const cluster = new Redis.Cluster(nodes);
  cluster.on('error', () => {}); // each failed command reports its own
  let stop = false;
  process.stdin.on('data', () => { stop = true; });
  let sent = 0;
  let clean = 0;
  while (!stop) {
    try {
      await cluster.call('RL.SLIDE', `failover:${sent % 300}`, 1000000, 3600);
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
  cluster.disconnect();
  process.exit(0);
}

main().catch((e) => { console.error(e); process.exit(1); });
