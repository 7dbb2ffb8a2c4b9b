'use strict';

// toSender turns the options of a store into one function,
// send(command, ...args) -> Promise<reply>, for ioredis, node-redis or a
// caller's own sendCommand (rate-limit-redis's convention).
function toSender(opts, clientField) {
  return credentials(withTimeout(rawSender(opts, clientField), timeoutOf(opts)));
}

// AUTH_REPLY is how rlstore (as Redis) refuses a client's credentials.
const AUTH_REPLY = /^(NOAUTH|WRONGPASS|NOPERM)\b/;

// credentials turns a refusal of the client's credentials into an Error that
// says so: a configuration error, not an outage.
function credentials(send) {
  return (...args) => send(...args).catch((e) => {
    if (e && AUTH_REPLY.test(String(e.message))) {
      const err = new Error(`rlstore: the server refused the client's credentials (check the password or user): ${e.message}`);
      err.code = 'RLSTORE_AUTH';
      err.cause = e;
      throw err;
    }
    throw e;
  });
}

// startupCheck sends PING once, when a store is made, so that a wrong or
// missing password shows at startup: logged with console.error at once,
// and thrown by verify(). It never rejects (no unhandled rejection); it
// resolves to the error, or null.
function startupCheck(opts, clientField) {
  // At least a second: a busy server's late answer must not pass for an outage.
  const t = timeoutOf(opts);
  const send = credentials(withTimeout(rawSender(opts, clientField), t === 0 ? 0 : Math.max(t, 1000)));
  return send('PING').then(() => null, (e) => {
    if (e.code === 'RLSTORE_AUTH') console.error(e.message);
    return e;
  });
}

// DEFAULT_TIMEOUT_MS bounds one command when the options give no timeout.
const DEFAULT_TIMEOUT_MS = 250;

function timeoutOf(opts) {
  const t = opts.timeout ?? DEFAULT_TIMEOUT_MS;
  if (!(t === 0 || (Number.isFinite(t) && t > 0))) {
    throw new TypeError(`rlstore: timeout must be milliseconds, > 0 (or 0 for none); got ${t}`);
  }
  return t;
}

// withTimeout rejects a command that has no reply after ms with an Error,
// which the libraries treat as a store failure (express-rate-limit's
// passOnStoreError, or a rejection with an Error): a stalled rlstore costs a
// request ms, not the length of the stall.
function withTimeout(send, ms) {
  if (ms === 0) return send;
  return (...args) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rlstore: no reply to ${args[0]} within ${ms} ms`)), ms);
    send(...args).then(
      (v) => { clearTimeout(timer); resolve(v); },
      (e) => { clearTimeout(timer); reject(e); },
    );
  });
}

function rawSender(opts, clientField) {
  if (typeof opts.sendCommand === 'function') {
    return (...args) => opts.sendCommand(...args.map(String));
  }
  const client = opts[clientField];
  if (!client) {
    throw new TypeError(`rlstore: pass ${clientField} (an ioredis or node-redis client) or sendCommand`);
  }
  if (typeof client.call === 'function') { // ioredis
    return (...args) => client.call(...args.map(String));
  }
  if (typeof client.sendCommand === 'function') { // node-redis 4 and 5
    return (...args) => client.sendCommand(args.map(String));
  }
  const unusable = `rlstore: ${clientField} has neither call (ioredis) nor sendCommand (node-redis)`;
  // An object that only reports its state (ioredis's status, node-redis's
  // isReady) is taken, so that rejectIfRedisNotReady can answer for it; a
  // command sent through it fails.
  if (client.status !== undefined || client.isReady !== undefined) {
    return async () => { throw new TypeError(unusable); };
  }
  throw new TypeError(unusable);
}

// decision reads [allowed, limit, remaining, wait_ms, reset_ms] (and RL.CHECK's
// binding rule) into an object; wait_ms is -1 when the request can never fit.
function decision(reply) {
  if (!Array.isArray(reply) || reply.length < 5) {
    throw new Error(`rlstore: unexpected reply ${JSON.stringify(reply)}`);
  }
  const [allowed, limit, remaining, waitMs, resetMs] = reply.map(Number);
  return { allowed: allowed === 1, limit, remaining, waitMs, resetMs };
}

// available is how many units the key could still take, read from a PEEK of
// cost 1 (whose remaining counts after that one unit if it would fit).
function available(peek) {
  return peek.allowed ? peek.remaining + 1 : peek.remaining;
}

// MAX_LOG_LIMIT is the largest limit RL.LOG takes (it keeps one entry per
// busy millisecond, at most limit of them).
const MAX_LOG_LIMIT = 4000;

// slidingArgs returns the command for a sliding window in which any windowMs
// span holds at most limit units. RL.SLIDE alone does not promise that: it
// counts whole seconds, so limit units at x.990 and limit more at (x+1).002
// are 2 × limit within 12 ms of a one-second window. Up to 4000 the exact
// RL.LOG (millisecond precision) decides; above it, RL.SLIDE over the window
// rounded up to whole seconds plus one: a unit then counts for at least
// windowMs after it came in, at the price of admitting up to limit per
// ceil(windowMs/1000)+1 seconds, not per windowMs.
function slidingArgs(key, limit, windowMs) {
  if (limit <= MAX_LOG_LIMIT) {
    return ['RL.LOG', key, limit, `${windowMs}ms`];
  }
  return ['RL.SLIDE', key, limit, Math.min(Math.ceil(windowMs / 1000) + 1, MAX_WINDOW_S)];
}

// fixedArgs returns the command for a fixed window that starts at its first
// hit and lasts windowMs, as the fixed windows of express-rate-limit's
// MemoryStore, rate-limit-redis and RateLimiterRedis do (a key's INCR and
// its PEXPIRE): RL.FIXED with ANCHOR FIRST. Without it RL.FIXED's windows
// are aligned to multiples of windowMs since the epoch, so the first window
// could end at once. Every command on the key (PEEK too) sends the anchor.
function fixedArgs(key, limit, windowMs) {
  return ['RL.FIXED', key, limit, `${windowMs}ms`, 'ANCHOR', 'FIRST'];
}

// MAX_WINDOW_S is the longest window rlstore keeps, 3650 days.
const MAX_WINDOW_S = 3650 * 24 * 3600;

module.exports = { toSender, startupCheck, decision, available, slidingArgs, fixedArgs, MAX_LOG_LIMIT, DEFAULT_TIMEOUT_MS };
