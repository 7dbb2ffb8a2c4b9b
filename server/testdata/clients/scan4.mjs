// node-redis 4 holds SCAN cursors as JavaScript Numbers (float64). A full
// SCAN over 10,000 keys must end and return every key exactly once.
import { createClient } from 'redis4';

const [addr] = process.argv.slice(2);
const client = createClient({ url: `redis://${addr}` });
client.on('error', (err) => { console.error('client error:', err); process.exit(1); });
await client.connect();

const n = 10000;
for (let i = 0; i < n; i += 1000) {
  const batch = [];
  for (let j = i; j < i + 1000; j++) batch.push(client.sendCommand(['RL.SLIDE', `scan:${j}`, '10', '3600']));
  await Promise.all(batch);
}

const seen = new Map();
let calls = 0;
let cursor = 0;
do {
  if (++calls > 5000) throw new Error(`SCAN did not end after ${calls} calls`);
  const reply = await client.scan(cursor, { COUNT: 100 });
  cursor = reply.cursor; // a Number: above 2^53 it would be rounded
  for (const k of reply.keys) seen.set(k, (seen.get(k) ?? 0) + 1);
} while (cursor !== 0);

const missing = [];
for (let i = 0; i < n; i++) if (!seen.has(`scan:${i}`)) missing.push(`scan:${i}`);
const twice = [...seen].filter(([, c]) => c > 1).map(([k]) => k);
if (seen.size !== n || missing.length || twice.length) {
  throw new Error(`SCAN returned ${seen.size} keys; missing ${missing.slice(0, 5)}; twice ${twice.slice(0, 5)}`);
}
await client.quit();
console.log(`node-redis 4: SCAN returned all ${n} keys once in ${calls} calls`);
