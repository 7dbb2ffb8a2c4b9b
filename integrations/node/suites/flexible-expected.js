'use strict';

// The tests of rate-limiter-flexible's RateLimiterRedis suite that fail with
// RateLimiterRlstore, per algorithm, each with why; suites/flexible.js fails
// if any other test fails or any of these passes. The suite's GETs of the
// counter are answered from RL.INFO (see flexible.js), so the tests that
// only read the counter pass; what is left is refused by design.
const P = 'RateLimiterRedis with fixed window ';
const LUA = 'runs its own Lua script (customIncrTtlLuaScript): rlstore runs no scripts';
const lua = {
  [`${P}when customIncrTtlLuaScript is provided rejected when consume more than maximum points and multiply delay`]: LUA,
  [`${P}when customIncrTtlLuaScript is provided when passing custom duration rejected when consume more than maximum points and multiply delay`]: LUA,
};
// With 'fixed' a key refunded to 0 stays until its window ends, as Redis's
// counter does, so "reward points" reads '0' there.
const ZERO = "the reward refunds the sliding log (RL.LOG) to empty, and an empty log has no entry left to keep it: the key is gone and GET's stand-in reads null, where RateLimiterRedis's counter, a fixed window, reads '0' (with 'fixed' it passes)";
module.exports = {
  slide: {
    [`${P}reward points`]: ZERO,
    ...lua,
  },
  fixed: {
    ...lua,
  },
};
