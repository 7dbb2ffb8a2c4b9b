'use strict';

const { toSender, decision, available, slidingArgs } = require('./command');
const { peer } = require('./peer');

// rate-limiter-flexible as the application installed it (see peer), so that
// `instanceof RateLimiterRes` holds and RateLimiterUnion takes the limiter
// (it wants an instance of RateLimiterCompatibleAbstract, which versions 5.x
// and later export); without it, classes of the same shape.
const flexible = peer('rate-limiter-flexible');
const RateLimiterRes = (flexible && flexible.RateLimiterRes) || require('./res');
const Base = (flexible && flexible.RateLimiterCompatibleAbstract) || class {};

// RateLimiterRlstore has rate-limiter-flexible's interface (consume, get,
// penalty, reward, delete, block) over rlstore. consume is one atomic
// sliding-window (RL.LOG, or RL.SLIDE above 4000; see slidingArgs) or
// RL.TOKEN decision; a rejected consume charges nothing and
// rejects with a RateLimiterRes, a store failure with an Error.
class RateLimiterRlstore extends Base {
  // options: storeClient (ioredis or node-redis) or sendCommand; points
  // (default 4); duration in whole seconds (default 1); keyPrefix (default
  // 'rlflx'); blockDuration in seconds (default 0); algorithm 'slide'
  // (default) or 'token' (a token bucket, which reward needs); timeout, ms to
  // wait for each command (default 250; 0: none), after which the call
  // rejects with an Error.
  constructor(opts = {}) {
    const points = opts.points ?? 4;
    const duration = opts.duration ?? 1;
    const keyPrefix = opts.keyPrefix ?? 'rlflx';
    const blockDuration = opts.blockDuration ?? 0;
    validate({ points, duration }, opts);
    super();
    this.send = toSender(opts, 'storeClient');
    this.storeClient = opts.storeClient;
    this.rejectIfRedisNotReady = Boolean(opts.rejectIfRedisNotReady);
    this.points = points;
    this.duration = duration;
    this.keyPrefix = keyPrefix;
    this.blockDuration = blockDuration;
    this.algorithm = (opts.algorithm ?? 'slide').toLowerCase();
    validateAlgorithm(this.algorithm);
  }

  // RateLimiterCompatibleAbstract declares these accessors and throws until
  // a subclass defines them.
  get keyPrefix() { return this._keyPrefix; }

  set keyPrefix(v) {
    if (typeof v !== 'string') throw new TypeError('rlstore: keyPrefix must be a string');
    this._keyPrefix = v;
  }

  get blockDuration() { return this._blockDuration; }

  set blockDuration(v) { this._blockDuration = v; }

  get execEvenly() { return false; }

  set execEvenly(v) {
    if (v) throw new TypeError('rlstore: option execEvenly is not supported (see docs/integrations.md)');
  }

  get msDuration() {
    return this.duration * 1000;
  }

  getKey(key) {
    return this.keyPrefix.length > 0 ? `${this.keyPrefix}:${key}` : key;
  }

  // blockKey holds a block; '!' keeps it apart from every getKey result.
  blockKey(key) {
    return `${this.keyPrefix}!block:${key}`;
  }

  args(key, extra) {
    const k = this.getKey(key);
    const base = this.algorithm === 'slide'
      ? slidingArgs(k, this.points, this.msDuration)
      : ['RL.TOKEN', k, this.points, this.points, this.duration];
    return base.concat(extra);
  }

  async blockedMs(key) {
    return Math.max(Number(await this.send('PTTL', this.blockKey(key))), 0);
  }

  // ready throws, with rejectIfRedisNotReady, when the client says it is
  // not connected, instead of queueing or sending the command.
  ready() {
    if (this.rejectIfRedisNotReady && notReady(this.storeClient)) {
      throw new Error('Redis connection is not ready');
    }
  }

  // blockRes is the result of a key blocked for ms more.
  blockRes(ms, consumed) {
    return new RateLimiterRes(0, ms > FOREVER_MS - 365 * 24 * 3600 * 1000 ? -1 : ms, consumed, false);
  }

  async consume(key, pointsToConsume = 1) {
    const n = positive(pointsToConsume);
    this.ready();
    if (this.points === 0) {
      throw new RateLimiterRes(0, this.msDuration, n, false);
    }
    // One round trip: the block and the decision are asked together. A
    // consume during a block is therefore charged, as RateLimiterRedis
    // charges it (its block is the counter itself, kept over the limit).
    const [blocked, reply] = await Promise.all([
      this.blockedMs(key),
      this.send(...this.args(key, ['COST', n])),
    ]);
    if (blocked > 0) {
      throw this.blockRes(blocked, this.points + n);
    }
    const d = decision(reply);
    const consumed = this.points - d.remaining;
    if (d.allowed) {
      return new RateLimiterRes(d.remaining, d.resetMs, consumed, consumed === n);
    }
    if (this.blockDuration > 0) {
      await this.setBlock(key, this.blockDuration * 1000);
      throw new RateLimiterRes(0, this.blockDuration * 1000, consumed + n, false);
    }
    const wait = d.waitMs >= 0 ? d.waitMs : this.msDuration;
    throw new RateLimiterRes(0, wait, consumed + n, false);
  }

  // get resolves the key's state, or null if it holds nothing.
  async get(key) {
    this.ready();
    if (this.points === 0) return null;
    const [blocked, peek, pttl] = await Promise.all([
      this.blockedMs(key),
      this.send(...this.args(key, ['PEEK'])),
      this.send('PTTL', this.getKey(key)),
    ]);
    if (blocked > 0) {
      return this.blockRes(blocked, this.points + 1);
    }
    const left = available(decision(peek));
    const consumed = this.points - left;
    if (consumed <= 0) return null;
    return new RateLimiterRes(left, Math.max(Number(pttl), 0), consumed, false);
  }

  // penalty charges points without a limit check. rlstore never counts past
  // the limit, so it charges what is left, at most points: the key is then
  // exhausted for as long as a Redis store would keep it over the limit or less.
  async penalty(key, points = 1) {
    const n = positive(points);
    if (this.points === 0) return new RateLimiterRes(0, 0, 0, false);
    const left = available(decision(await this.send(...this.args(key, ['PEEK']))));
    const charge = Math.min(n, left);
    if (charge === 0) {
      const pttl = Number(await this.send('PTTL', this.getKey(key)));
      return new RateLimiterRes(0, Math.max(pttl, 0), this.points, false);
    }
    const d = decision(await this.send(...this.args(key, ['COST', charge])));
    return new RateLimiterRes(d.remaining, d.resetMs, this.points - d.remaining, false);
  }

  // reward refunds points. Only a token bucket can refund (CL.THROTTLE with a
  // negative quantity, on the same state as RL.TOKEN).
  async reward(key, points = 1) {
    const n = positive(points);
    if (this.points === 0) return new RateLimiterRes(0, 0, 0, false);
    if (this.algorithm !== 'token') {
      throw new Error("rlstore: reward needs algorithm 'token'; RL.SLIDE windows cannot refund");
    }
    await this.send('CL.THROTTLE', this.getKey(key), this.points - 1, this.points, this.duration, -n);
    const peek = decision(await this.send(...this.args(key, ['PEEK'])));
    const left = available(peek);
    return new RateLimiterRes(left, peek.resetMs, this.points - left, false);
  }

  // block denies the key for secDuration seconds, replacing any block.
  // block denies the key for secDuration seconds (0: forever, that is
  // 3650 days), replacing any block.
  async block(key, secDuration) {
    const ms = secDuration > 0 ? Math.ceil(secDuration * 1000) : FOREVER_MS;
    await this.setBlock(key, ms);
    return this.blockRes(ms, this.points + 1);
  }

  async setBlock(key, ms) {
    await this.send('DEL', this.blockKey(key));
    await this.send('RL.LOG', this.blockKey(key), 1, `${ms}ms`);
  }

  // delete removes the key and any block, resolving whether there was one.
  async delete(key) {
    return Number(await this.send('DEL', this.getKey(key), this.blockKey(key))) > 0;
  }
}

// positive reads points to consume as rate-limiter-flexible does: an
// integer, or a string of one; decimals are refused with its wording.
function positive(n) {
  if (typeof n === 'string') {
    if (!/^\d+$/.test(n)) {
      throw new Error('Consuming string different than integer values is not supported by this package');
    }
    n = Number(n);
  }
  if (typeof n === 'number' && Number.isFinite(n) && !Number.isInteger(n)) {
    throw new Error('Consuming decimal number of points is not supported by this package');
  }
  if (!Number.isInteger(n) || n < 1) {
    throw new TypeError(`rlstore: points must be a positive integer, got ${n}`);
  }
  return n;
}

// FOREVER_MS is a block of "forever" (block(key, 0)): the longest window
// rlstore keeps, 3650 days. get reports its msBeforeNext as -1, as
// RateLimiterRedis reports a key without expiry.
const FOREVER_MS = 3650 * 24 * 3600 * 1000;

// notReady reports a client that says it is not connected: ioredis's status,
// node-redis's isReady.
function notReady(client) {
  if (!client) return false;
  if (typeof client.status === 'string') return client.status !== 'ready';
  if (typeof client.isReady === 'boolean') return !client.isReady;
  return false;
}

function validate(l, opts) {
  if (!Number.isInteger(l.points) || l.points < 0) {
    throw new TypeError('rlstore: points must be a whole number, at least 0 (0 rejects every consume)');
  }
  if (!Number.isInteger(l.duration) || l.duration < 1) {
    throw new TypeError('rlstore: duration must be a whole number of seconds, at least 1 (0, "never expires", is not supported)');
  }
  for (const o of ['insuranceLimiter', 'execEvenly', 'inMemoryBlockOnConsumed']) {
    if (opts[o]) {
      throw new TypeError(`rlstore: option ${o} is not supported (see docs/integrations.md)`);
    }
  }
}

function validateAlgorithm(a) {
  if (!['slide', 'token'].includes(a)) {
    throw new TypeError("rlstore: algorithm must be 'slide' or 'token'");
  }
}

module.exports = { RateLimiterRlstore, RateLimiterRes };
