'use strict';

// The tests need a running rlstore: RLSTORE_ADDR=host:port (the Go test
// integrations/TestNode starts one and sets it). Without it they skip, unless
// CI=true, where a skip would hide a broken setup.
const addr = process.env.RLSTORE_ADDR;
if (!addr && process.env.CI === 'true') {
  throw new Error('RLSTORE_ADDR is not set (CI=true forbids skipping)');
}
const skip = addr ? false : 'RLSTORE_ADDR is not set: start rlstore and set it to host:port';
const [host, port] = (addr ?? '127.0.0.1:6379').split(':');

let seq = 0;
// unique makes a key no other test (or earlier run) uses.
function unique(name) {
  seq += 1;
  return `${name}:${process.pid}:${Date.now()}:${seq}`;
}

// clients returns one connected client of each kind (ioredis 5, node-redis 4 and 5), and a close function.
async function clients() {
  const Redis = require('ioredis');
  const { createClient } = require('redis');
  const ioredis = new Redis({ host, port: Number(port), lazyConnect: true, maxRetriesPerRequest: 1 });
  await ioredis.connect();
  const nodeRedis = createClient({ socket: { host, port: Number(port) } });
  await nodeRedis.connect();
  const nodeRedis5 = require('redis5').createClient({ socket: { host, port: Number(port) } });
  await nodeRedis5.connect();
  return {
    ioredis,
    nodeRedis,
    nodeRedis5,
    close: async () => { ioredis.disconnect(); await nodeRedis.quit(); await nodeRedis5.quit(); },
  };
}

// PATIENCE is the store timeout of tests that are not about timeouts: the
// default 250 ms is for production, and a busy CI host (with -race
// builds beside it) can answer later than that.
const PATIENCE = 10_000;

module.exports = { skip, unique, clients, PATIENCE };
