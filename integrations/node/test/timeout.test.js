'use strict';

// A stalled rlstore (a listener that accepts and never answers, like a
// SIGSTOPped server) costs each decision the timeout (default 250 ms), then
// the library's own fail-open/closed setting decides. Needs no rlstore.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const express = require('express');
const { rateLimit } = require('express-rate-limit');
const Redis = require('ioredis');
const { RlstoreStore, RateLimiterRlstore, RateLimiterRes } = require('..');

let stalled;
const sockets = [];
before(async () => {
  stalled = net.createServer((s) => sockets.push(s));
  await new Promise((r) => stalled.listen(0, '127.0.0.1', r));
});
after(() => { for (const s of sockets) s.destroy(); stalled.close(); });

// The clients as docs/integrations.md configures them: short timeouts, no
// offline queue.
function ioredis() {
  const c = new Redis({ port: stalled.address().port, host: '127.0.0.1', enableOfflineQueue: false, lazyConnect: true,
    connectTimeout: 250, commandTimeout: 250, maxRetriesPerRequest: 1,
    enableReadyCheck: false }); // the ready check's INFO would stall too
  c.on('error', () => {});
  return c;
}

test('express-rate-limit: a stalled store answers 500, or 200 with passOnStoreError, within the timeout', { timeout: 20_000 }, async () => {
  const never = new RlstoreStore({ sendCommand: () => new Promise(() => {}) });
  const quiet = { error: () => {}, warn: () => {} };
  for (const [pass, want] of [[false, 500], [true, 200]]) {
    const app = express();
    app.set('env', 'test');
    app.use(rateLimit({ windowMs: 1000, limit: 5, store: never, passOnStoreError: pass, logger: quiet }));
    app.get('/', (req, res) => res.send('ok'));
    const server = await new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
    try {
      const r = await fetch(`http://127.0.0.1:${server.address().port}/`, { signal: AbortSignal.timeout(20_000) });
      await r.text();
      assert.equal(r.status, want);
    } finally {
      await new Promise((r) => server.close(r));
    }
  }
});

test('rate-limiter-flexible: a stalled store rejects with an Error (ioredis, a sendCommand)', { timeout: 20_000 }, async () => {
  const io = ioredis();
  await io.connect();
  try {
    for (const opts of [{ storeClient: io }, { sendCommand: () => new Promise(() => {}) }]) {
      const rl = new RateLimiterRlstore({ ...opts, points: 1, duration: 1, timeout: 100 });
      const err = await rl.consume('k').then(() => null, (e) => e);
      assert.ok(err instanceof Error && !(err instanceof RateLimiterRes), `${err}`);
      assert.match(err.message, /no reply to .* within 100 ms/);
    }
  } finally {
    io.disconnect();
  }
  assert.throws(() => new RateLimiterRlstore({ sendCommand: async () => [], timeout: -1 }), /timeout/);
});
