'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { RateLimiterRes: FlexibleRes } = require('rate-limiter-flexible');
const { RateLimiterRlstore, RateLimiterRes } = require('..');
const { skip, unique, clients, PATIENCE } = require('../test-support/helpers');

let c;
before(async () => { if (!skip) c = await clients(); });
after(async () => { if (c) await c.close(); });

const kinds = ['ioredis', 'nodeRedis', 'nodeRedis5'];

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('expected a rejection');
}

for (const kind of kinds) {
  test(`${kind}: 3 per 10 s consumes 3, then rejects with a RateLimiterRes`, { skip }, async () => {
    const rl = new RateLimiterRlstore({ storeClient: c[kind], points: 3, duration: 10, timeout: PATIENCE, keyPrefix: unique('rlf') });
    for (let i = 1; i <= 3; i++) {
      const res = await rl.consume('u');
      assert.ok(res instanceof FlexibleRes, 'the library\'s own class');
      assert.equal(res.remainingPoints, 3 - i);
      assert.equal(res.consumedPoints, i);
      assert.equal(res.isFirstInDuration, i === 1);
      assert.ok(res.msBeforeNext > 9000 && res.msBeforeNext <= 10_000);
    }
    for (let i = 0; i < 3; i++) {
      const rej = await rejection(rl.consume('u'));
      assert.ok(rej instanceof RateLimiterRes, `rejects with a RateLimiterRes, got ${rej}`);
      assert.equal(rej.remainingPoints, 0);
      assert.equal(rej.consumedPoints, 4, 'what this consume would have brought it to: never stored');
      assert.ok(rej.msBeforeNext > 8000 && rej.msBeforeNext <= 10_000, `msBeforeNext ${rej.msBeforeNext}`);
    }
    const got = await rl.get('u');
    assert.equal(got.consumedPoints, 3, 'the rejections consumed nothing');
    assert.equal(got.remainingPoints, 0);
    assert.ok(got.msBeforeNext > 8000 && got.msBeforeNext <= 10_000);
    assert.equal(await rl.get('nobody'), null);
    assert.equal(await rl.delete('u'), true);
    assert.equal(await rl.delete('u'), false);
    assert.equal((await rl.consume('u', 2)).remainingPoints, 1);
  });
}

test('consume more than points rejects with a wait of one duration', { skip }, async () => {
  const rl = new RateLimiterRlstore({ storeClient: c.ioredis, points: 2, duration: 5, timeout: PATIENCE, keyPrefix: unique('rlf') });
  const rej = await rejection(rl.consume('u', 3));
  assert.ok(rej instanceof RateLimiterRes);
  assert.equal(rej.msBeforeNext, 5000);
  assert.equal(await rl.get('u'), null);
});

test('penalty, block and blockDuration', { skip }, async () => {
  const rl = new RateLimiterRlstore({ storeClient: c.nodeRedis, points: 5, duration: 60, timeout: PATIENCE, keyPrefix: unique('rlf') });
  assert.equal((await rl.penalty('p', 2)).consumedPoints, 2);
  assert.equal((await rl.penalty('p', 10)).consumedPoints, 5, 'charged up to the limit');
  await rejection(rl.consume('p'));

  const blocked = await rl.block('b', 30);
  assert.equal(blocked.msBeforeNext, 30_000);
  const rej = await rejection(rl.consume('b'));
  assert.ok(rej instanceof RateLimiterRes);
  assert.ok(rej.msBeforeNext > 29_000 && rej.msBeforeNext <= 30_000, `${rej.msBeforeNext}`);
  assert.equal((await rl.get('b')).remainingPoints, 0);
  assert.equal(await rl.delete('b'), true);
  assert.equal((await rl.consume('b')).remainingPoints, 4, 'delete lifts the block');

  const bd = new RateLimiterRlstore({ storeClient: c.ioredis, points: 1, duration: 1, blockDuration: 20, timeout: PATIENCE, keyPrefix: unique('rlf') });
  await bd.consume('x');
  const first = await rejection(bd.consume('x'));
  assert.equal(first.msBeforeNext, 20_000, 'the denial that crosses the limit starts the block');
  const again = await rejection(bd.consume('x'));
  assert.ok(again.msBeforeNext > 19_000 && again.msBeforeNext <= 20_000);
});

test('reward refunds with every algorithm: the sliding window (RL.LOG, RL.SLIDE above 4000 points), fixed and token', { skip }, async () => {
  const tok = new RateLimiterRlstore({ storeClient: c.ioredis, points: 3, duration: 30, timeout: PATIENCE, keyPrefix: unique('rlf'), algorithm: 'token' });
  await tok.consume('r', 3);
  await rejection(tok.consume('r'));
  const res = await tok.reward('r', 2);
  assert.equal(res.remainingPoints, 2);
  assert.equal((await tok.consume('r')).remainingPoints, 1);

  const fixed = new RateLimiterRlstore({ storeClient: c.nodeRedis, points: 3, duration: 30, timeout: PATIENCE, keyPrefix: unique('rlf'), algorithm: 'fixed' });
  await fixed.consume('r', 3);
  await rejection(fixed.consume('r'));
  assert.equal((await fixed.reward('r', 2)).remainingPoints, 2, 'RL.REFUND gave 2 back');
  assert.equal((await fixed.consume('r')).remainingPoints, 1);

  const slide = new RateLimiterRlstore({ storeClient: c.ioredis, points: 3, duration: 30, timeout: PATIENCE, keyPrefix: unique('rlf') });
  await slide.consume('r', 3);
  await rejection(slide.consume('r'));
  assert.equal((await slide.reward('r', 2)).remainingPoints, 2, 'RL.REFUND took 2 back from the log');
  assert.equal((await slide.consume('r')).remainingPoints, 1);
  assert.equal((await slide.reward('r', 100)).remainingPoints, 3, 'never beyond full');

  const big = new RateLimiterRlstore({ storeClient: c.nodeRedis, points: 5000, duration: 30, timeout: PATIENCE, keyPrefix: unique('rlf') });
  await big.consume('r', 5000);
  await rejection(big.consume('r'));
  assert.equal((await big.reward('r', 10)).remainingPoints, 10, 'RL.SLIDE above 4000 points');
});

test('fixed: a key rewarded to 0 keeps its window, as RateLimiterRedis\'s counter at 0 does', { skip }, async () => {
  const fixed = new RateLimiterRlstore({ storeClient: c.ioredis, points: 2, duration: 30, timeout: PATIENCE, keyPrefix: unique('rlf'), algorithm: 'fixed' });
  const first = await fixed.consume('z');
  await fixed.reward('z', 1);
  const got = await fixed.get('z');
  assert.ok(got, 'get() finds the key rewarded to 0, where it found null before');
  assert.equal(got.consumedPoints, 0);
  assert.ok(got.msBeforeNext > 0 && got.msBeforeNext <= first.msBeforeNext, `msBeforeNext ${got.msBeforeNext}: the rest of the window`);
  const again = await fixed.consume('z');
  assert.equal(again.consumedPoints, 1);
  assert.ok(again.msBeforeNext <= first.msBeforeNext, `msBeforeNext ${again.msBeforeNext}: the next consume counts in the same window`);
  const slide = new RateLimiterRlstore({ storeClient: c.ioredis, points: 2, duration: 30, timeout: PATIENCE, keyPrefix: unique('rlf') });
  await slide.consume('z');
  await slide.reward('z', 1);
  assert.equal(await slide.get('z'), null, 'a sliding log rewarded to empty is gone');
});

// algorithm 'fixed' is RateLimiterRedis's window: it starts at the first
// consume and lasts duration, wherever that falls (RL.FIXED ANCHOR FIRST);
// aligned to the epoch, a 2 s window could end within milliseconds.
test('fixed: the window starts at the first consume, as RateLimiterRedis\'s', { skip }, async () => {
  const rl = new RateLimiterRlstore({ storeClient: c.ioredis, points: 2, duration: 2, timeout: PATIENCE, keyPrefix: unique('rlf'), algorithm: 'fixed' });
  // Start just past an odd second: an aligned 2 s window would end within a second.
  await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + (Math.floor(Date.now() / 1000) % 2 === 0 ? 1000 : 0) + 5));
  const first = await rl.consume('w');
  assert.ok(first.isFirstInDuration);
  assert.ok(first.msBeforeNext > 1900 && first.msBeforeNext <= 2000, `msBeforeNext ${first.msBeforeNext}`);
  await rl.consume('w');
  const rej = await rejection(rl.consume('w'));
  assert.ok(rej.msBeforeNext > 1000, `the window ends 2 s after its first consume, not at the even second: ${rej.msBeforeNext}`);
  const got = await rl.get('w');
  assert.equal(got.consumedPoints, 2);
  assert.ok(got.msBeforeNext > 1000 && got.msBeforeNext <= 2000);
});

test('a store failure rejects with an Error, not a RateLimiterRes', { skip }, async () => {
  const rl = new RateLimiterRlstore({ sendCommand: async () => { throw new Error('connection refused'); }, points: 1, duration: 1 });
  const err = await rejection(rl.consume('x'));
  assert.ok(err instanceof Error);
  assert.ok(!(err instanceof RateLimiterRes));
});

test('options it cannot honour are refused', () => {
  const sendCommand = async () => [1, 1, 0, 0, 0];
  assert.throws(() => new RateLimiterRlstore({ sendCommand, points: 1.5, duration: 1 }), /points/);
  assert.throws(() => new RateLimiterRlstore({ sendCommand, points: 1, algorithm: 'log' }), /algorithm/);
  assert.throws(() => new RateLimiterRlstore({}), /storeClient/);
  assert.throws(() => new RateLimiterRlstore({ storeClient: {} }), /storeClient/);
});

// consume is one round trip: both of its commands (the override set() and
// block() write, and the decision) are sent before either reply is awaited
// (ioredis and node-redis pipeline them on one connection).
test('consume sends its commands in one round trip', async () => {
  const sent = [];
  let release;
  const gate = new Promise((r) => { release = r; });
  const sendCommand = async (...args) => {
    sent.push(args[0]);
    await gate;
    return args[0] === 'RL.INFO' ? null : [1, 5, 4, 0, 1000];
  };
  const rl = new RateLimiterRlstore({ sendCommand, points: 5, duration: 1 });
  sent.length = 0; // the PING sent when it was made
  const pending = rl.consume('k');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(sent.sort(), ['RL.INFO', 'RL.LOG'], 'both sent before any reply');
  release();
  assert.equal((await pending).remainingPoints, 4);
});

// rate-limiter-flexible's own behaviours its suite checks: points 0 rejects
// every consume; points as decimals or decimal strings are refused with the
// library's wording, integer strings taken; block(key, 0) blocks forever
// (msBeforeNext -1); rejectIfRedisNotReady rejects while the client is down.
test('points 0, string and decimal points, block forever, rejectIfRedisNotReady', { skip }, async () => {
  const zero = new RateLimiterRlstore({ storeClient: c.ioredis, points: 0, duration: 5, timeout: PATIENCE, keyPrefix: unique('rlf') });
  const rej = await rejection(zero.consume('z'));
  assert.ok(rej instanceof RateLimiterRes && rej.msBeforeNext >= 0);
  assert.equal(await zero.get('z'), null);

  const rl = new RateLimiterRlstore({ storeClient: c.ioredis, points: 3, duration: 5, timeout: PATIENCE, keyPrefix: unique('rlf') });
  assert.equal((await rl.consume('s', '2')).consumedPoints, 2);
  await assert.rejects(rl.consume('s', 1.1), /^Error: Consuming decimal number of points is not supported by this package$/);
  await assert.rejects(rl.consume('s', '2.0'), /^Error: Consuming string different than integer values is not supported by this package$/);
  assert.equal((await rl.consume('t', 2.0)).consumedPoints, 2);

  const forever = await rl.block('f', 0);
  assert.equal(forever.msBeforeNext, -1);
  const got = await rl.get('f');
  assert.equal(got.msBeforeNext, -1);
  assert.equal(got.consumedPoints, 4);
  assert.equal((await rejection(rl.consume('f'))).msBeforeNext, -1);

  const Redis = require('ioredis');
  const down = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false });
  const strict = new RateLimiterRlstore({ storeClient: down, points: 1, duration: 1, rejectIfRedisNotReady: true });
  await assert.rejects(strict.consume('k'), /^Error: Redis connection is not ready$/);
  down.disconnect();
});

// What RateLimiterRedis's own suite checks beyond a consume: set() of any
// count (above points too) for a time or forever, duration 0 (never
// expires), customDuration, and the library's own machinery around a store
// (insuranceLimiter, RateLimiterUnion), which RateLimiterStoreAbstract brings.
test('set, duration 0, customDuration, insuranceLimiter and RateLimiterUnion', { skip }, async () => {
  const flexible = require('rate-limiter-flexible');
  const rl = new RateLimiterRlstore({ storeClient: c.ioredis, points: 5, duration: 60, timeout: PATIENCE, keyPrefix: unique('rlf') });
  assert.ok(rl instanceof require('rate-limiter-flexible/lib/RateLimiterAbstract'));

  const set = await rl.set('s', 12, 30);
  assert.deepEqual([set.consumedPoints, set.msBeforeNext], [12, 30_000]);
  let got = await rl.get('s');
  assert.equal(got.consumedPoints, 12);
  assert.ok(got.msBeforeNext > 29_000 && got.msBeforeNext <= 30_000, `${got.msBeforeNext}`);
  const rej = await rejection(rl.consume('s'));
  assert.ok(rej instanceof RateLimiterRes && rej.msBeforeNext <= 30_000 && rej.msBeforeNext > 29_000, `${rej.msBeforeNext}`);
  await rl.set('s', 0);
  assert.equal((await rl.consume('s')).consumedPoints, 1, 'set 0 clears the key');
  await rl.set('big', 9000, 0);
  got = await rl.get('big');
  assert.deepEqual([got.consumedPoints, got.msBeforeNext], [9000, -1], 'above 4000 and forever');

  const never = new RateLimiterRlstore({ storeClient: c.nodeRedis, points: 2, duration: 0, timeout: PATIENCE, keyPrefix: unique('rlf') });
  await never.consume('n');
  await never.consume('n');
  got = await never.get('n');
  assert.deepEqual([got.consumedPoints, got.msBeforeNext], [2, -1]);
  assert.equal((await rejection(never.consume('n'))).msBeforeNext, -1);

  const custom = await rl.consume('c', 1, { customDuration: 1 });
  assert.ok(custom.msBeforeNext <= 1000, `${custom.msBeforeNext}`);

  const down = new RateLimiterRlstore({
    sendCommand: async () => { throw new Error('connection refused'); },
    points: 1,
    duration: 1,
    insuranceLimiter: new RateLimiterRlstore({ storeClient: c.ioredis, points: 2, duration: 2, timeout: PATIENCE, keyPrefix: unique('rlf') }),
  });
  const insured = await down.consume('i');
  assert.equal(insured.remainingPoints, 1, 'the insurance limiter answered');

  const union = new flexible.RateLimiterUnion(
    new RateLimiterRlstore({ storeClient: c.ioredis, points: 1, duration: 10, timeout: PATIENCE, keyPrefix: unique('u1') }),
    new RateLimiterRlstore({ storeClient: c.ioredis, points: 3, duration: 10, timeout: PATIENCE, keyPrefix: unique('u2') }),
  );
  await union.consume('k');
  const both = await rejection(union.consume('k'));
  assert.equal(Object.keys(both).length, 1, 'the 1-point limiter rejects');
});
