'use strict';

// A wrong or missing password shows when a store is made: verify() rejects
// with code 'RLSTORE_AUTH' and console.error says so at once, and every
// decision then rejects with that Error, which names the refusal. Needs
// RLSTORE_AUTH_ADDR, an rlstore started with --requirepass sekret (the Go
// test integrations/TestNode starts one).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const Redis = require('ioredis');
const { createClient } = require('redis');
const { RlstoreStore, RateLimiterRlstore, RateLimiterRes } = require('..');

const addr = process.env.RLSTORE_AUTH_ADDR;
if (!addr && process.env.CI === 'true') {
  throw new Error('RLSTORE_AUTH_ADDR is not set (CI=true forbids skipping)');
}
const skip = addr ? false : 'RLSTORE_AUTH_ADDR is not set: start rlstore --requirepass sekret and set it';
const [host, port] = (addr ?? '127.0.0.1:6379').split(':');

// logged runs fn with console.error captured.
async function logged(fn) {
  const lines = [];
  const orig = console.error;
  console.error = (...a) => lines.push(a.join(' '));
  try {
    await fn();
  } finally {
    console.error = orig;
  }
  return lines;
}

const refused = (e) => e.code === 'RLSTORE_AUTH' && /refused the client's credentials/.test(e.message);

// Both clients are made without the password, so the server answers NOAUTH
// at once (a wrong password's WRONGPASS comes after the server's guard
// delay, seconds; its wording is checked with a stub below).
test('a missing password (ioredis, node-redis) is found when the store is made', { skip }, async () => {
  const io = new Redis({ host, port: Number(port), maxRetriesPerRequest: 1 });
  io.on('error', () => {});
  const nr = createClient({ socket: { host, port: Number(port), reconnectStrategy: false } });
  nr.on('error', () => {});
  await nr.connect(); // no AUTH is sent without a password: commands get NOAUTH
  try {
    const lines = await logged(async () => {
      const store = new RlstoreStore({ client: io, timeout: 10_000 });
      await assert.rejects(store.verify(), refused);
      store.init({ windowMs: 1000, limit: 3 });
      await assert.rejects(store.increment('k'), refused);
      const rl = new RateLimiterRlstore({ storeClient: nr, points: 3, duration: 1, timeout: 10_000 });
      await assert.rejects(rl.verify(), refused);
      await assert.rejects(rl.consume('k'), (e) => refused(e) && !(e instanceof RateLimiterRes));
    });
    assert.equal(lines.filter((l) => /refused the client's credentials/.test(l)).length, 2, 'one line per store, at once');
  } finally {
    io.disconnect();
    await nr.disconnect();
  }

  const good = new Redis({ host, port: Number(port), password: 'sekret' });
  try {
    await new RlstoreStore({ client: good, timeout: 10_000 }).verify();
  } finally {
    good.disconnect();
  }
});

test('WRONGPASS and NOPERM are credentials too; an outage is not', async () => {
  for (const reply of ['WRONGPASS invalid username-password pair or user is disabled.', 'NOPERM this user has no permissions to run the \'rl.log\' command']) {
    const lines = await logged(async () => {
      const store = new RlstoreStore({ sendCommand: async () => { throw new Error(reply); } });
      await assert.rejects(store.verify(), refused);
    });
    assert.equal(lines.length, 1);
  }
  const lines = await logged(async () => {
    const down = new RateLimiterRlstore({ sendCommand: async () => { throw new Error('connect ECONNREFUSED'); } });
    await assert.rejects(down.verify(), (e) => e.code !== 'RLSTORE_AUTH' && /ECONNREFUSED/.test(e.message));
  });
  assert.deepEqual(lines, [], 'an outage at startup is not logged as a configuration error');
});
