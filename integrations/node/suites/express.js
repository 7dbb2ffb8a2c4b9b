'use strict';

// Runs express-rate-limit's external-store test
// (test/external/stores/test/stores-test.ts, with the app it tests for
// Redis, test/external/stores/source/redis-store.ts, of its repository in
// $RLSTORE_SUITES/express-rate-limit: see suites.sh; their code is not part
// of this repository) with RlstoreStore in place of rate-limit-redis's RedisStore,
// against the rlstore at RLSTORE_ADDR. The test is jest + supertest in
// TypeScript; this harness reads from the copies what they check (the
// status of each request in order) and how the app is made (its limit and
// message), builds that app with RlstoreStore, once with node-redis's
// sendCommand as the upstream app does and once with an ioredis client,
// and checks the same. integrations/TestNodeExpressSuite runs it; by hand:
//
//   RLSTORE_SUITES=/tmp/suites RLSTORE_ADDR=127.0.0.1:6379 node suites/express.js
const fs = require('node:fs');
const path = require('node:path');
const express = require('express');
const { rateLimit } = require('express-rate-limit');
const { RlstoreStore } = require('..');

const addr = process.env.RLSTORE_ADDR;
if (!addr) {
  console.error('RLSTORE_ADDR is not set: start rlstore and set it to host:port');
  process.exit(2);
}
const [host, port] = addr.split(':');

const suites = process.env.RLSTORE_SUITES;
if (!suites) {
  console.error('RLSTORE_SUITES is not set: run suites/suites.sh and set it to the folder it made');
  process.exit(2);
}
const read = (f) => fs.readFileSync(path.join(suites, 'express-rate-limit', 'test', 'external', 'stores', f), 'utf8');
const testSrc = read('test/stores-test.ts');
const appSrc = read('source/redis-store.ts');
const statuses = [...testSrc.matchAll(/\.get\('\/'\)\.expect\((\d+)\)/g)].map((m) => Number(m[1]));
const limit = Number(/limit: (\d+),/.exec(appSrc)?.[1]);
const message = /message: '([^']*)'/.exec(appSrc)?.[1];
if (statuses.length === 0 || !limit || !message || !appSrc.includes('new RedisStore({\n\t\t\tsendCommand: (...args) => client.sendCommand(args),')) {
  throw new Error('the copied test no longer has the shape this harness reads');
}

// app is redis-store.ts's app with RlstoreStore.
function app(store) {
  const a = express();
  a.use(rateLimit({ limit, message, store }));
  a.get('/', (request, response) => { response.send(`We welcome thee ${request.body?.name}`); });
  return a;
}

async function check(name, store) {
  const server = app(store).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const url = `http://127.0.0.1:${server.address().port}/`;
  try {
    const got = [];
    let last = '';
    for (let i = 0; i < statuses.length; i++) {
      const res = await fetch(url);
      got.push(res.status);
      last = await res.text();
    }
    const ok = got.join() === statuses.join() && (statuses.at(-1) !== 429 || last === message);
    console.log(`${ok ? 'ok' : 'FAIL'}: should work for ${name} store: statuses ${got.join(', ')} (want ${statuses.join(', ')})`);
    return ok;
  } finally {
    server.close();
  }
}

(async () => {
  const { createClient } = require('redis');
  const Redis = require('ioredis');
  const client = createClient({ socket: { host, port: Number(port) } });
  await client.connect();
  const io = new Redis({ host, port: Number(port) });
  const prefix = `ers:${process.pid}:${Date.now()}:`;
  const results = [
    await check('rlstore (node-redis sendCommand)', new RlstoreStore({ sendCommand: (...args) => client.sendCommand(args), prefix: `${prefix}a:` })),
    await check('rlstore (ioredis client)', new RlstoreStore({ client: io, prefix: `${prefix}b:` })),
  ];
  await client.quit();
  io.disconnect();
  const passed = results.filter(Boolean).length;
  console.log(`express-rate-limit external-store test with RlstoreStore: ${passed} of ${results.length} pass`);
  process.exit(passed === results.length ? 0 : 1);
})().catch((e) => { console.error(e); process.exit(1); });
