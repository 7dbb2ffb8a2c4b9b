// ioredis 5 and 6 and node-redis 5 (RESP2, RESP3, and RESP3 with its client-side
// cache, which sends CLIENT TRACKING on connect) call RL.SLIDE through their
// generic calls, in a pipeline and in MULTI/EXEC.
import Redis from 'ioredis';
import Redis6 from 'ioredis6';
import { createClient } from 'redis5';
import assert from 'node:assert/strict';

const [addr] = process.argv.slice(2);
const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))];

async function ioredis(Client, name) {
  const r = new Client({ host, port, maxRetriesPerRequest: 1 });
  assert.deepEqual((await r.call('RL.SLIDE', `${name}:k`, '2', '60')).slice(0, 4), [1, 2, 1, 0]);
  const p = await r.pipeline().call('RL.SLIDE', `${name}:k`, '2', '60').call('RL.SLIDE', `${name}:k`, '2', '60').exec();
  assert.equal(p[0][1][0], 1);
  assert.equal(p[1][1][0], 0, 'the third request of a limit of 2 is denied');
  const m = await r.multi().call('RL.TOKEN', `${name}:t`, '5', '1', '1s').call('RL.INFO', `${name}:t`).exec();
  assert.equal(m[0][1][0], 1);
  assert.equal(m[1][1][1], 'token');
  await r.quit();
}

async function nodeRedis5(opts, name) {
  const c = createClient({ url: `redis://${addr}`, ...opts });
  c.on('error', (err) => { console.error(name, 'error:', err); process.exit(1); });
  await c.connect();
  const key = `nr5:${name}`;
  const d = await c.sendCommand(['RL.SLIDE', key, '2', '60']);
  assert.equal(d[0], 1);
  const [a, b] = await c.multi().addCommand(['RL.SLIDE', key, '2', '60']).addCommand(['RL.SLIDE', key, '2', '60']).exec();
  assert.equal(a[0], 1);
  assert.equal(b[0], 0, 'the third request of a limit of 2 is denied');
  const info = await c.sendCommand(['RL.INFO', key]);
  assert.ok(info, 'RL.INFO replies');
  await c.quit();
}

await ioredis(Redis, 'io5');
await ioredis(Redis6, 'io6');
await nodeRedis5({}, 'resp2');
await nodeRedis5({ RESP: 3 }, 'resp3');
await nodeRedis5({ RESP: 3, clientSideCache: { ttl: 0, maxEntries: 0 } }, 'resp3-cache');
console.log('ioredis 5 and 6, node-redis 5 (RESP2, RESP3, RESP3 with client-side cache): every call passed');
