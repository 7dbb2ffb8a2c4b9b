'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const express = require('express');
const { rateLimit } = require('express-rate-limit');
const { RlstoreStore } = require('..');
const { skip, unique, clients, PATIENCE } = require('../test-support/helpers');

let c;
before(async () => { if (!skip) c = await clients(); });
after(async () => { if (c) await c.close(); });

// app serves GET / behind express-rate-limit with store, 3 per 10 s.
async function serve(store, extra = {}) {
  const app = express();
  app.set('env', 'test'); // express prints handled errors' stacks otherwise
  app.use(rateLimit({ windowMs: 10_000, limit: 3, standardHeaders: 'draft-8', legacyHeaders: true, store, ...extra }));
  app.get('/', (req, res) => res.send('ok'));
  const server = await new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((r) => server.close(r)) };
}

const stores = {
  'ioredis client': () => new RlstoreStore({ client: c.ioredis, timeout: PATIENCE, prefix: unique('erl') }),
  'node-redis client': () => new RlstoreStore({ client: c.nodeRedis, timeout: PATIENCE, prefix: unique('erl') }),
  'node-redis 5 client': () => new RlstoreStore({ client: c.nodeRedis5, timeout: PATIENCE, prefix: unique('erl') }),
  'node-redis sendCommand': () => new RlstoreStore({ sendCommand: (...args) => c.nodeRedis.sendCommand(args), timeout: PATIENCE, prefix: unique('erl') }),
  'ioredis sendCommand': () => new RlstoreStore({ sendCommand: (cmd, ...args) => c.ioredis.call(cmd, ...args), timeout: PATIENCE, prefix: unique('erl') }),
};

for (const [name, makeStore] of Object.entries(stores)) {
  test(`express app, ${name}: 200 200 200 429 429 with headers`, { skip }, async () => {
    const app = await serve(makeStore());
    try {
      const got = [];
      for (let i = 0; i < 5; i++) {
        const r = await fetch(app.url);
        got.push(r.status);
        await r.text();
        if (i < 3) {
          assert.equal(r.headers.get('ratelimit-policy'), `"3-in-10sec"; q=3; w=10; pk=${r.headers.get('ratelimit-policy').split('pk=')[1]}`);
          assert.match(r.headers.get('ratelimit'), new RegExp(`^"3-in-10sec"; r=${2 - i}; t=(9|10)$`));
          assert.equal(r.headers.get('x-ratelimit-remaining'), String(2 - i));
        } else {
          const retry = Number(r.headers.get('retry-after'));
          assert.ok(retry >= 9 && retry <= 10, `Retry-After ${retry}`);
          assert.match(r.headers.get('ratelimit'), /; r=0; t=(9|10)$/);
          assert.equal(r.headers.get('x-ratelimit-limit'), '3');
        }
      }
      assert.deepEqual(got, [200, 200, 200, 429, 429]);
    } finally {
      await app.close();
    }
  });
}

// An app under concurrency: 40 requests of one client at once, limit 10,
// admit exactly 10 with every algorithm (each decision is one atomic
// command, so no two requests can both take the last unit).
test('express app under concurrency: exactly 10 of 40 concurrent requests pass', { skip }, async () => {
  for (const algorithm of ['slide', 'fixed', 'log', 'token']) {
    const store = new RlstoreStore({ client: c.ioredis, timeout: PATIENCE, prefix: unique('conc'), algorithm });
    const app = await serve(store, { windowMs: 3_600_000, limit: 10 });
    try {
      const codes = await Promise.all(Array.from({ length: 40 }, async () => {
        const r = await fetch(app.url);
        await r.text();
        return r.status;
      }));
      assert.equal(codes.filter((s) => s === 200).length, 10, `${algorithm}: ${codes}`);
      assert.equal(codes.filter((s) => s === 429).length, 30, `${algorithm}: ${codes}`);
    } finally {
      await app.close();
    }
  }
});

test('denied requests are not counted; get and resetKey', { skip }, async () => {
  const store = new RlstoreStore({ client: c.ioredis, timeout: PATIENCE, prefix: unique('erl') });
  store.init({ windowMs: 10_000, limit: 3 });
  assert.equal(await store.get('a'), undefined);
  for (let i = 1; i <= 3; i++) assert.equal((await store.increment('a')).totalHits, i);
  for (let i = 0; i < 3; i++) assert.equal((await store.increment('a')).totalHits, 4);
  const info = await store.get('a');
  assert.equal(info.totalHits, 3, 'three denials later, still 3 hits');
  const wait = info.resetTime.getTime() - Date.now();
  assert.ok(wait > 8000 && wait <= 10_000, `resetTime in ${wait} ms`);
  await store.resetKey('a');
  assert.equal(await store.get('a'), undefined);
  assert.equal((await store.increment('a')).totalHits, 1);
});

// algorithm 'fixed' keeps express-rate-limit's fixed window (MemoryStore's,
// rate-limit-redis's): it starts at the first hit and lasts windowMs
// (RL.FIXED ANCHOR FIRST), so resetTime is first hit + windowMs, and the
// key's own PTTL says the same.
test('fixed: the window starts at the first hit', { skip }, async () => {
  const store = new RlstoreStore({ client: c.ioredis, timeout: PATIENCE, prefix: unique('erl'), algorithm: 'fixed' });
  store.init({ windowMs: 10_000, limit: 2 });
  const t = Date.now();
  const first = await store.increment('f');
  const firstEnd = first.resetTime.getTime();
  assert.ok(firstEnd - t > 9000 && firstEnd - t <= 10_050, `resetTime in ${firstEnd - t} ms`);
  await store.increment('f');
  const denied = await store.increment('f');
  assert.equal(denied.totalHits, 3);
  assert.ok(Math.abs(denied.resetTime.getTime() - firstEnd) < 100, 'the same window end');
  const got = await store.get('f');
  assert.equal(got.totalHits, 2);
  assert.ok(Math.abs(got.resetTime.getTime() - firstEnd) < 100);
  const info = await c.ioredis.call('RL.INFO', store.prefixKey('f'));
  assert.ok(info.includes('anchor'), `RL.INFO ${info}`);
});

test('algorithms and option checks', { skip }, async () => {
  for (const algorithm of ['fixed', 'log', 'token']) {
    const store = new RlstoreStore({ client: c.nodeRedis, timeout: PATIENCE, prefix: unique('erl'), algorithm });
    store.init({ windowMs: 1500, limit: 2 });
    assert.equal((await store.increment('k')).totalHits, 1, algorithm);
    assert.equal((await store.increment('k')).totalHits, 2, algorithm);
    assert.equal((await store.increment('k')).totalHits, 3, algorithm);
  }
  const slide = new RlstoreStore({ client: c.ioredis, timeout: PATIENCE, prefix: unique('erl') });
  slide.init({ windowMs: 1500, limit: 2 });
  assert.equal((await slide.increment('k')).totalHits, 1, 'a sliding window of milliseconds');
  assert.throws(() => slide.init({ windowMs: 0, limit: 2 }), /windowMs/);
  assert.throws(() => slide.init({ windowMs: 1000, limit: 0 }), /limit must be a positive integer/);
  assert.throws(() => new RlstoreStore({ client: c.ioredis, algorithm: 'token' }).init({ windowMs: 1000, limit: () => 2 }), /numeric limit/);
  assert.throws(() => new RlstoreStore({}), /pass client/);
  assert.throws(() => new RlstoreStore({ client: c.ioredis, algorithm: 'lua' }), /algorithm/);
});

test('a store error answers 500, or passes with passOnStoreError', { skip }, async () => {
  const broken = () => new RlstoreStore({ sendCommand: async () => { throw new Error('connection refused'); } });
  const quiet = { error: () => {}, warn: () => {} };
  for (const [pass, want] of [[false, 500], [true, 200]]) {
    const app = await serve(broken(), { passOnStoreError: pass, logger: quiet });
    try {
      const r = await fetch(app.url);
      await r.text();
      assert.equal(r.status, want);
    } finally {
      await app.close();
    }
  }
});

// Defect: with a limit function the store denied at its own limit without
// counting, so a higher tier was never limited. It must count every hit, as
// rate-limit-redis does, and let express-rate-limit compare with each
// request's limit.
test('a limit function: each tier gets its own limit, counted as rate-limit-redis counts', { skip }, async () => {
  for (const storeOpts of [{}, { limit: 3 }]) { // { limit: 3 }: what the docs used to say
    const store = new RlstoreStore({ client: c.ioredis, timeout: PATIENCE, prefix: unique('erl'), ...storeOpts });
    const app = await serve(store, {
      limit: (req) => (req.query.tier === 'premium' ? 8 : 3),
      keyGenerator: (req) => req.query.tier,
    });
    try {
      for (const [tier, limit] of [['premium', 8], ['basic', 3]]) {
        const got = [];
        for (let i = 0; i < limit + 3; i++) {
          const r = await fetch(`${app.url}?tier=${tier}`);
          got.push(r.status);
          await r.text();
          if (i < limit) assert.match(r.headers.get('ratelimit'), new RegExp(`; r=${limit - 1 - i}; `), `${tier} hit ${i + 1}`);
        }
        assert.deepEqual(got, [...Array(limit).fill(200), 429, 429, 429], `${tier} ${JSON.stringify(storeOpts)}`);
      }
    } finally {
      await app.close();
    }
  }
});

// skipFailedRequests / skipSuccessfulRequests: express-rate-limit calls
// decrement for each request it skips, and the store refunds it (RL.REFUND),
// counting every hit, denied ones too, as rate-limit-redis does.
test('skipped requests are refunded: skipFailedRequests and skipSuccessfulRequests', { skip }, async () => {
  for (const algorithm of ['slide', 'fixed', 'log']) {
    const app = express();
    app.set('env', 'test');
    const limiter = (extra) => rateLimit({ windowMs: 10_000, limit: 2, store: new RlstoreStore({ client: c.ioredis, timeout: PATIENCE, prefix: unique('erl'), algorithm }), ...extra });
    const failed = limiter({ skipFailedRequests: true });
    const succeeded = limiter({ skipSuccessfulRequests: true });
    const handler = (req, res) => res.status(req.query.fail ? 500 : 200).send('x');
    app.get('/f', failed, handler);
    app.get('/s', succeeded, handler);
    const server = await new Promise((resolve) => { const sv = app.listen(0, '127.0.0.1', () => resolve(sv)); });
    const base = `http://127.0.0.1:${server.address().port}`;
    // express-rate-limit refunds after the response has finished: wait for
    // the refund to land before the next request, as a client that reads
    // the whole reply does not (polling the count, never sleeping).
    const get = async (path) => { const r = await fetch(base + path); await r.text(); return r.status; };
    try {
      const f = [];
      for (let i = 0; i < 4; i++) {
        f.push(await get('/f?fail=1'));
        await settle(failed, 0);
      }
      f.push(await get('/f'), await get('/f'), await get('/f'));
      assert.deepEqual(f, [500, 500, 500, 500, 200, 200, 429], `${algorithm}, skipFailedRequests: failures refunded`);
      await settle(failed, 2);
      f.push(await get('/f?fail=1'));
      assert.equal(f.at(-1), 429, `${algorithm}: a denial (failed, refunded) does not free a slot`);

      const s = [];
      for (let i = 0; i < 4; i++) {
        s.push(await get('/s'));
        await settle(succeeded, 0);
      }
      s.push(await get('/s?fail=1'), await get('/s?fail=1'), await get('/s?fail=1'), await get('/s'));
      assert.deepEqual(s, [200, 200, 200, 200, 500, 500, 429, 429], `${algorithm}, skipSuccessfulRequests: successes refunded, denials counted`);
    } finally {
      server.closeAllConnections(); // fetch keeps its connections alive
      await new Promise((r) => server.close(r));
    }
  }
});

// settle waits until limiter's only key has count hits (the refund after a
// response lands asynchronously).
async function settle(limiter, count) {
  const deadline = Date.now() + PATIENCE;
  for (;;) {
    const info = await limiter.getKey('::ffff:127.0.0.1') ?? await limiter.getKey('127.0.0.1');
    if ((info?.totalHits ?? 0) === count) return;
    if (Date.now() > deadline) throw new Error(`count ${info?.totalHits} never became ${count}`);
    await new Promise((r) => setImmediate(r));
  }
}
