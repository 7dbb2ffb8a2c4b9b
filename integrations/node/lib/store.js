'use strict';

const { toSender, startupCheck, decision, available, slidingArgs, fixedArgs, MAX_LOG_LIMIT } = require('./command');

const ALGORITHMS = ['slide', 'fixed', 'log', 'token'];

// COUNT_CEILING is the limit sent when express-rate-limit's limit is a
// function, so rlstore counts every hit up to it: RL.LOG's largest for the
// sliding kinds (exact), RL.FIXED's for fixed windows.
const COUNT_CEILING = { slide: MAX_LOG_LIMIT, fixed: 4294967295, log: MAX_LOG_LIMIT };

// RlstoreStore is an express-rate-limit 8 Store backed by rlstore: each
// increment is one command, which decides and counts atomically: a sliding
// window (RL.LOG, or RL.SLIDE above 4000; see slidingArgs) by default, or
// RL.FIXED (a window from the first hit, as express-rate-limit's MemoryStore
// and rate-limit-redis keep it; see fixedArgs), RL.LOG, RL.TOKEN. A denied
// request is not counted.
class RlstoreStore {
  // options: client (ioredis or node-redis) or sendCommand(command, ...args);
  // prefix (default 'rl:'); algorithm 'slide' (default), 'fixed', 'log' or
  // 'token'; timeout, ms to wait for a decision (default 250; 0: none),
  // after which express-rate-limit's passOnStoreError decides. A limit option
  // is accepted and ignored: the limit is express-rate-limit's (see init).
  constructor(options = {}) {
    this.send = toSender(options, 'client');
    this.prefix = options.prefix ?? 'rl:';
    this.algorithm = (options.algorithm ?? 'slide').toLowerCase();
    if (!ALGORITHMS.includes(this.algorithm)) {
      throw new TypeError(`rlstore: algorithm must be one of ${ALGORITHMS.join(', ')}`);
    }
    this.localKeys = false;
    this._startup = startupCheck(options, 'client');
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

  // init receives express-rate-limit's options: windowMs and limit. A
  // numeric limit is enforced by rlstore, which counts admitted requests only.
  // A limit function is evaluated per request after increment, so the store
  // cannot know it: it then counts every hit, denied ones included, as
  // rate-limit-redis does, and express-rate-limit compares the count with
  // each request's limit.
  //
  // With skipFailedRequests or skipSuccessfulRequests, express-rate-limit
  // calls decrement for each request it skips, a denied one too (a 429 is a
  // failed request), so the store counts every hit as well and decrement
  // refunds one (RL.REFUND): the counts are rate-limit-redis's. Not for
  // 'token' (a bucket has no count of hits) nor for a numeric limit above
  // what the window can count (COUNT_CEILING): decrement then gives nothing
  // back, which is stricter.
  init(options) {
    this.windowMs = options.windowMs;
    const skips = options.skipFailedRequests === true || options.skipSuccessfulRequests === true;
    const countable = typeof options.limit === 'function' || options.limit <= (COUNT_CEILING[this.algorithm] ?? 0);
    this.refunds = skips && this.algorithm !== 'token' && countable;
    this.counting = typeof options.limit === 'function' || this.refunds;
    this.limit = this.counting ? COUNT_CEILING[this.algorithm] : options.limit;
    if (this.counting && this.algorithm === 'token') {
      throw new TypeError("rlstore: algorithm 'token' needs a numeric limit, not a function");
    }
    if (!Number.isInteger(this.limit) || this.limit < 1) {
      throw new TypeError(`rlstore: limit must be a positive integer or a function (got ${options.limit})`);
    }
    if (!Number.isInteger(this.windowMs) || this.windowMs < 1) {
      throw new TypeError(`rlstore: windowMs must be a positive whole number of milliseconds (got ${this.windowMs})`);
    }
  }

  prefixKey(key) {
    return `${this.prefix}${key}`;
  }

  args(key) {
    const k = this.prefixKey(key);
    switch (this.algorithm) {
      case 'slide': return slidingArgs(k, this.limit, this.windowMs);
      case 'fixed': return fixedArgs(k, this.limit, this.windowMs);
      case 'log': return ['RL.LOG', k, this.limit, `${this.windowMs}ms`];
      default: return ['RL.TOKEN', k, this.limit, this.limit, `${this.windowMs}ms`];
    }
  }

  // increment charges one request. express-rate-limit denies when totalHits
  // exceeds its limit, so a denial reports limit + 1 hits without counting
  // them, and its resetTime is when this request would be admitted.
  async increment(key) {
    const d = decision(await this.send(...this.args(key)));
    const now = Date.now();
    if (d.allowed) {
      return { totalHits: d.limit - d.remaining, resetTime: new Date(now + d.resetMs) };
    }
    const wait = d.waitMs >= 0 ? d.waitMs : d.resetMs;
    return { totalHits: d.limit + 1, resetTime: new Date(now + wait) };
  }

  // get reports the key's count without changing it (undefined if unused).
  async get(key) {
    const [reply, pttl] = await Promise.all([
      this.send(...this.args(key), 'PEEK'),
      this.send('PTTL', this.prefixKey(key)),
    ]);
    const d = decision(reply);
    const used = d.limit - available(d);
    if (used <= 0) return undefined;
    return { totalHits: used, resetTime: new Date(Date.now() + Math.max(Number(pttl), 0)) };
  }

  // decrement gives back one hit of a request express-rate-limit skips
  // (skipFailedRequests, skipSuccessfulRequests), when init found that
  // every hit is counted (see init); otherwise it gives nothing back.
  async decrement(key) {
    if (this.refunds) await this.send('RL.REFUND', this.prefixKey(key), 'COST', 1);
  }

  async resetKey(key) {
    await this.send('DEL', this.prefixKey(key));
  }
}

module.exports = { RlstoreStore };
