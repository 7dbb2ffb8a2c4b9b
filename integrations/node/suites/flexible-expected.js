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
const ZERO = "the reward refunds the key to 0 (RL.REFUND), and rlstore keeps no key that restricts nothing: GET's stand-in reads no key (null), where Redis's counter reads '0'";
module.exports = {
  slide: {
    [`${P}reward points`]: ZERO,
    ...lua,
  },
  fixed: {
    [`${P}reward points`]: ZERO,
    ...lua,
  },
};
