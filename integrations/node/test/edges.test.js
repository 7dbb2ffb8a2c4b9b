'use strict';

// Window edges: "any windowMs span holds at most limit" for 1 s, 10 s and
// 60 s windows. rlstore's RL.SLIDE counts whole seconds, so a burst at x.990
// and another at (x+1).002 used to be 2 × limit in 12 ms. The server runs on
// the real clock, so these tests wait for real edges, each a bounded wait:
// the 1 s and 10 s windows are watched until they have passed; the 60 s
// window is checked by when its denial says the next request will be
// admitted (no earlier than the burst's first hit plus the window).

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const express = require('express');
const { rateLimit } = require('express-rate-limit');
const { RlstoreStore, RateLimiterRlstore } = require('..');
const { skip, unique, clients, PATIENCE } = require('../test-support/helpers');

let c;
before(async () => { if (!skip) c = await clients(); });
after(async () => { if (c) await c.close(); });

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(ms, 0)));

// untilMsOfSecond waits (at most a second) until the wall clock's
// milliseconds within the second reach ms.
async function untilMsOfSecond(ms) {
  const now = Date.now();
  await sleep((ms - (now % 1000) + 1000) % 1000);
}

// justBeforeSecond waits until the wall clock is within the last 15 ms of a
// second (a timer that fires late, past the second, waits for the next one).
async function justBeforeSecond() {
  do await untilMsOfSecond(985); while (Date.now() % 1000 < 985);
}

// untilNextSecond waits until 5 ms past the first whole second after t.
async function untilNextSecond(t) {
  await sleep((Math.floor(t / 1000) + 1) * 1000 + 5 - Date.now());
}

// TooSlow marks a run the host was too busy for: its requests did not fit in
// the span the check needs, which says nothing about the limit.
class TooSlow extends Error {}

// retried runs fn up to 3 times while it throws TooSlow.
async function retried(fn) {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof TooSlow) || i === 3) throw e;
    }
  }
}

// checkEdges drives one limiter through a window edge. hit(cost) resolves
// { admitted, admitAt } (admitAt: epoch ms at which a denied request would be
// admitted). It sends limit units at x.985 (burst hits of cost limit/burst),
// one hit just after the next whole second, then, for windows of 10 s or
// less, a hit every 20 ms until the window (and a second) has passed, and asserts that no
// windowMs span held more than limit units.
async function checkEdges(hit, windowMs, limit, burst, label) {
  await justBeforeSecond();
  const admitted = []; // [sent, received, cost] of each admitted hit
  for (let i = 0; i < burst; i++) {
    const sent = Date.now();
    const r = await hit(limit / burst);
    assert.ok(r.admitted, `${label}: burst hit ${i + 1} admitted`);
    admitted.push([sent, Date.now(), limit / burst]);
  }
  const first = admitted[0][0];
  await untilNextSecond(first);
  const at = Date.now();
  const r = await hit(1);
  if (at >= first + windowMs) throw new TooSlow(`${label}: the burst took ${at - first} ms`);
  assert.ok(!r.admitted, `${label}: a hit ${at - first} ms after the burst, just after the second's edge, is denied`);
  assert.ok(r.admitAt >= first + windowMs - 2,
    `${label}: admitted again ${r.admitAt - first} ms after the burst's first hit, want >= ${windowMs}`);
  if (windowMs > 10_000) return;
  // RL.SLIDE over the window plus a second frees a burst that ended in the
  // second after x.985 only a whole second later: watch that long.
  while (Date.now() < first + windowMs + 1300) {
    const sent = Date.now();
    if ((await hit(1)).admitted) admitted.push([sent, Date.now(), 1]);
    await sleep(20);
  }
  assert.ok(admitted.length > burst, `${label}: let back in once the window passed`);
  for (let k = 0; k < admitted.length; k++) {
    let units = 0;
    for (let j = k; j < admitted.length; j++) {
      units += admitted[j][2];
      if (units > limit) {
        const span = admitted[j][1] - admitted[k][0];
        assert.ok(span >= windowMs - 2, `${label}: ${units} units admitted within ${span} ms`);
        break;
      }
    }
  }
}

function expressHit(store) {
  return async () => {
    const { totalHits, resetTime } = await store.increment('k');
    return { admitted: totalHits <= store.limit, admitAt: resetTime.getTime() };
  };
}

function flexibleHit(rl) {
  return async (cost) => {
    try {
      await rl.consume('k', cost);
      return { admitted: true };
    } catch (rej) {
      if (rej instanceof Error) throw rej;
      return { admitted: false, admitAt: Date.now() + rej.msBeforeNext };
    }
  };
}

test('window edges, 1 s, 10 s and 60 s: express-rate-limit store and rate-limiter-flexible', { skip }, async () => {
  const runs = [];
  for (const seconds of [1, 10, 60]) {
    runs.push(retried(async () => {
      const store = new RlstoreStore({ client: c.ioredis, timeout: PATIENCE, prefix: unique('edge') });
      store.init({ windowMs: seconds * 1000, limit: 5 });
      await checkEdges(expressHit(store), seconds * 1000, 5, 5, `express 5/${seconds}s`);
    }));
    for (const points of [5, 5000]) { // 5000: above RL.LOG's 4000 entries
      runs.push(retried(async () => {
        const rl = new RateLimiterRlstore({ storeClient: c.nodeRedis, points, duration: seconds, timeout: PATIENCE, keyPrefix: unique('edge') });
        await checkEdges(flexibleHit(rl), seconds * 1000, points, 5, `flexible ${points}/${seconds}s`);
      }));
    }
  }
  await Promise.all(runs);
});

test('express app, windowMs 1000, limit 5: 5 of 10 across a second edge', { skip }, async () => {
  const app = express();
  app.use(rateLimit({ windowMs: 1000, limit: 5, standardHeaders: 'draft-8', store: new RlstoreStore({ client: c.ioredis, timeout: PATIENCE, prefix: unique('edge') }) }));
  app.get('/', (req, res) => res.send('ok'));
  const server = await new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
  const url = `http://127.0.0.1:${server.address().port}/`;
  try {
    const codes = [];
    const get = async () => { const r = await fetch(url); await r.text(); codes.push(r.status); };
    await get(); // warm the connection
    await retried(async () => {
      await sleep(1100); // the earlier requests leave the window
      codes.length = 0;
      await justBeforeSecond();
      const first = Date.now();
      for (let i = 0; i < 5; i++) await get();
      await untilNextSecond(first);
      for (let i = 0; i < 5; i++) await get();
      const took = Date.now() - first;
      if (took >= 1000) throw new TooSlow(`the ten requests took ${took} ms`);
      assert.equal(codes.filter((s) => s === 200).length, 5, `codes ${codes} in ${took} ms`);
    });
  } finally {
    await new Promise((r) => server.close(r));
  }
});
