'use strict';

const path = require('node:path');
const { toSender, startupCheck, decision, available, slidingArgs, fixedArgs, MAX_LOG_LIMIT } = require('./command');
const { peer } = require('./peer');

// rate-limiter-flexible as the application installed it (see peer), so that
// `instanceof RateLimiterRes` holds and RateLimiterUnion, RateLimiterQueue
// and insuranceLimiter take the limiter: it extends the app's own
// RateLimiterStoreAbstract, as RateLimiterRedis does, which also brings
// execEvenly, the in-memory block, blockOnConsumed, insuranceLimiter and
// customDuration unchanged.
const flexible = peer('rate-limiter-flexible');
const RateLimiterRes = flexible ? flexible.mod.RateLimiterRes : require('./res');
const StoreAbstract = flexible
  ? require(path.join(flexible.dir, 'lib', 'RateLimiterStoreAbstract'))
  : class {
    constructor() {
      throw new Error('rlstore: RateLimiterRlstore needs rate-limiter-flexible (npm install rate-limiter-flexible)');
    }
  };

// FOREVER_MS stands for "never expires" (duration 0, block(key, 0),
// set(key, n, 0)): the longest window rlstore keeps, 3650 days. A time
// longer than FOREVER_MS less a year is reported as -1, as RateLimiterRedis
// reports a key without expiry.
const FOREVER_MS = 3650 * 24 * 3600 * 1000;
const YEAR_MS = 365 * 24 * 3600 * 1000;

// RateLimiterRlstore is rate-limiter-flexible's RateLimiterRedis over
// rlstore. A consume is one atomic sliding-window (RL.LOG, or RL.SLIDE above
// 4000; see slidingArgs), fixed-window (RL.FIXED from the first consume, as
// RateLimiterRedis's key; see fixedArgs) or RL.TOKEN decision: a rejected
// consume charges nothing. What set() and block() store (any count, for any time) lives in a
// second key, the override, read in the same round trip as the decision.
class RateLimiterRlstore extends StoreAbstract {
  // options: those of RateLimiterRedis (points, default 4; duration in
  // seconds, default 1, 0 for never; keyPrefix; blockDuration; execEvenly;
  // inMemoryBlockOnConsumed; insuranceLimiter; rejectIfRedisNotReady), with
  // storeClient (ioredis or node-redis) or sendCommand; algorithm 'slide'
  // (default), 'fixed' (RateLimiterRedis's window: from the first consume
  // for duration) or 'token' (a token bucket); timeout, ms to
  // wait for each command (default 250; 0: none), after which the call
  // rejects with an Error (or asks the insuranceLimiter).
  constructor(opts = {}) {
    super({ ...opts, points: opts.points ?? 4, duration: opts.duration ?? 1 });
    if (!Number.isInteger(this.points)) {
      throw new TypeError('rlstore: points must be a whole number (0 or less rejects every consume)');
    }
    this.send = toSender(opts, 'storeClient');
    this._client = opts.storeClient; // sendCommand alone has no client
    this._rejectIfRedisNotReady = Boolean(opts.rejectIfRedisNotReady);
    this.algorithm = (opts.algorithm ?? 'slide').toLowerCase();
    if (!['slide', 'fixed', 'token'].includes(this.algorithm)) {
      throw new TypeError("rlstore: algorithm must be 'slide', 'fixed' or 'token'");
    }
    this._startup = startupCheck(opts, 'storeClient');
  }

  // verify resolves once rlstore has answered the PING sent when this was
  // made, and rejects otherwise: with an Error whose code is 'RLSTORE_AUTH'
  // when the server refused the client's credentials (a configuration
  // error, also logged with console.error as soon as it is known), with the
  // outage's error when there was no answer. Await it at startup.
  async verify() {
    const err = await this._startup;
    if (err) throw err;
  }

  // overrideKey holds what set() and block() wrote for a key; '!' keeps it
  // apart from every getKey result.
  overrideKey(rlKey) {
    return `${this.keyPrefix}!block:${this.parseKey(rlKey)}`;
  }

  args(rlKey, ms, extra) {
    const w = windowOf(ms);
    switch (this.algorithm) {
      case 'slide': return slidingArgs(rlKey, this.points, w).concat(extra);
      case 'fixed': return fixedArgs(rlKey, this.points, w).concat(extra);
      default: return ['RL.TOKEN', rlKey, this.points, this.points, `${w}ms`].concat(extra);
    }
  }

  // ready throws, with rejectIfRedisNotReady, when the client says it is
  // not connected, instead of queueing or sending the command.
  ready() {
    if (this._rejectIfRedisNotReady && notReady(this._client)) {
      throw new Error('Redis connection is not ready');
    }
  }

  // _upsert is RateLimiterStoreAbstract's one write: a consume (decide and
  // charge), or with forceExpire a set or block (write the override).
  async _upsert(rlKey, points, msDuration, forceExpire = false) {
    const n = pointsOf(points);
    this.ready();
    if (forceExpire) return this.writeOverride(rlKey, n, msDuration);
    if (n < 1) throw new TypeError(`rlstore: points to consume must be at least 1, got ${n}`);
    return this.decide(rlKey, n, msDuration);
  }

  // decide asks the override and the decision together (one round trip). A
  // consume while an override holds the key over its points is therefore
  // charged to the window, as RateLimiterRedis charges it.
  async decide(rlKey, n, ms) {
    if (this.points <= 0) return { consumed: n, ms: reported(windowOf(ms)), first: false };
    const [ov, reply] = await Promise.all([
      this.override(rlKey),
      this.send(...this.args(rlKey, ms, ['COST', n])),
    ]);
    const d = decision(reply);
    let consumed = this.points - d.remaining + (d.allowed ? 0 : n);
    let wait = d.allowed ? d.resetMs : (d.waitMs >= 0 ? d.waitMs : windowOf(ms));
    let first = d.allowed && consumed === n;
    if (ov) {
      consumed += ov.count;
      first = false;
      // Held over its points by the override alone, the key is free again
      // when the override expires.
      wait = d.allowed && consumed > this.points ? ov.ttl : Math.max(wait, ov.ttl);
    }
    return { consumed, ms: reported(wait), first };
  }

  // writeOverride makes n the key's consumed points for ms (0: forever):
  // the window is cleared and n is kept in the override key, RL.LOG for up
  // to 4000 (exact to the millisecond), RL.SLIDE above (whole seconds).
  async writeOverride(rlKey, n, ms) {
    const key = this.overrideKey(rlKey);
    await Promise.all([this.send('DEL', rlKey), this.send('DEL', key)]);
    if (n > 0) await this.send(...overrideArgs(key, n, windowOf(ms)));
    return { consumed: n, ms: ms > 0 ? ms : -1, first: false };
  }

  // override reads the override key: { count, ttl } or null.
  async override(rlKey) {
    const info = fields(await this.send('RL.INFO', this.overrideKey(rlKey)));
    const count = Number(info.count);
    if (!(count > 0)) return null;
    return { count, ttl: Math.max(Number(info.ttl_ms), 0) };
  }

  async _get(rlKey) {
    this.ready();
    const live = this.points > 0;
    const [ov, peek, pttl] = await Promise.all([
      this.override(rlKey),
      live ? this.send(...this.args(rlKey, this.msDuration, ['PEEK'])) : null,
      live ? this.send('PTTL', rlKey) : -2,
    ]);
    const used = peek ? this.points - available(decision(peek)) : 0;
    // A key rewarded to 0 that still exists (a fixed window, until its end)
    // reads as 0 consumed, as RateLimiterRedis's counter at '0' does.
    if (!ov && used <= 0 && !(Number(pttl) >= 0)) return null;
    const ms = Math.max(Number(pttl), 0, ov ? ov.ttl : 0);
    return { consumed: used + (ov ? ov.count : 0), ms: reported(ms), first: false };
  }

  async _delete(rlKey) {
    this.ready();
    const n = await Promise.all([this.send('DEL', rlKey), this.send('DEL', this.overrideKey(rlKey))]);
    return n.reduce((a, b) => a + Number(b), 0) > 0;
  }

  _getRateLimiterRes(rlKey, changedPoints, r) {
    return new RateLimiterRes(Math.max(this.points - r.consumed, 0), r.ms, r.consumed, r.first);
  }

  // _penalty charges points without a limit check. rlstore never counts past
  // the limit, so it charges what is left, at most points: the key is then
  // exhausted for as long as a Redis store would keep it over the limit or less.
  async _penalty(key, points = 1, options = {}) {
    const n = pointsOf(points);
    this.ready();
    if (this.points <= 0 || n < 1) return new RateLimiterRes(0, 0, 0, false);
    const rlKey = this.getKey(key);
    const ms = secondsOf(this, options) * 1000;
    const left = available(decision(await this.send(...this.args(rlKey, ms, ['PEEK']))));
    const charge = Math.min(n, left);
    if (charge === 0) {
      const pttl = Number(await this.send('PTTL', rlKey));
      return new RateLimiterRes(0, reported(Math.max(pttl, 0)), this.points, false);
    }
    const d = decision(await this.send(...this.args(rlKey, ms, ['COST', charge])));
    return new RateLimiterRes(d.remaining, reported(d.resetMs), this.points - d.remaining, false);
  }

  // _reward refunds points: RL.REFUND on a sliding window (RL.LOG, which
  // drops its newest timestamps, or RL.SLIDE) or a fixed window, CL.THROTTLE
  // with a negative quantity on a token bucket (the same state as
  // RL.TOKEN). A key refunded to nothing is gone: rlstore keeps no state
  // that restricts nothing.
  async _reward(key, points = 1) {
    const n = pointsOf(points);
    this.ready();
    if (this.points <= 0 || n < 1) return new RateLimiterRes(0, 0, 0, false);
    const rlKey = this.getKey(key);
    if (this.algorithm !== 'token') {
      await this.send('RL.REFUND', rlKey, 'COST', n);
    } else {
      const period = Math.max(Math.ceil(windowOf(this.msDuration) / 1000), 1);
      await this.send('CL.THROTTLE', rlKey, this.points - 1, this.points, period, -n);
    }
    const peek = decision(await this.send(...this.args(rlKey, this.msDuration, ['PEEK'])));
    const left = available(peek);
    return new RateLimiterRes(left, reported(peek.resetMs), this.points - left, false);
  }
}

// pointsOf reads points as RateLimiterRedis does, with its wording: an
// integer, or a string of one.
function pointsOf(n) {
  if (typeof n === 'string') {
    if (!/^[1-9][0-9]*$/.test(n)) {
      throw new Error('Consuming string different than integer values is not supported by this package');
    }
    return Number(n);
  }
  if (!Number.isInteger(n)) {
    throw new Error('Consuming decimal number of points is not supported by this package');
  }
  if (n < 0) throw new TypeError(`rlstore: points must not be negative, got ${n}`);
  return n;
}

// windowOf is the window sent for ms: whole milliseconds, 0 (never
// expires) and anything longer as FOREVER_MS.
function windowOf(ms) {
  return ms > 0 ? Math.min(Math.ceil(ms), FOREVER_MS) : FOREVER_MS;
}

function reported(ms) {
  return ms > FOREVER_MS - YEAR_MS ? -1 : ms;
}

function secondsOf(limiter, options) {
  return options && options.customDuration >= 0 ? options.customDuration : limiter.duration;
}

// MAX_COUNT is the largest count RL.SLIDE keeps.
const MAX_COUNT = 4294967295;

function overrideArgs(key, n, w) {
  if (n <= MAX_LOG_LIMIT) return ['RL.LOG', key, MAX_LOG_LIMIT, `${w}ms`, 'COST', n];
  const seconds = Math.min(Math.ceil(w / 1000), FOREVER_MS / 1000);
  return ['RL.SLIDE', key, MAX_COUNT, seconds, 'COST', Math.min(n, MAX_COUNT)];
}

// fields reads RL.INFO's reply (field, value, … in RESP2; a map in RESP3;
// null for no key) into an object.
function fields(reply) {
  if (reply instanceof Map) return Object.fromEntries(reply);
  if (!Array.isArray(reply)) return reply && typeof reply === 'object' ? reply : {};
  const out = {};
  for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = reply[i + 1];
  return out;
}

// notReady reports a client that says it is not connected: ioredis's
// status, node-redis 4+'s isReady, node-redis 3's isReady().
function notReady(client) {
  if (!client) return false;
  if (typeof client.status === 'string') return client.status !== 'ready';
  if (typeof client.isReady === 'function') return !client.isReady();
  if (typeof client.isReady === 'boolean') return !client.isReady;
  return false;
}

module.exports = { RateLimiterRlstore, RateLimiterRes, FOREVER_MS };
