'use strict';

// The tests of rate-limiter-flexible's RateLimiterRedis suite that fail with
// RateLimiterRlstore, each with why; suites/flexible.js fails if any other
// test fails or any of these passes. Every one of them reads Redis
// internals: a GET of the counter (rlstore has no GET: a key holds a
// decision's state, not a number) or a Lua script (rlstore runs none).
const P = 'RateLimiterRedis with fixed window ';
const GET = 'reads the counter with GET (Redis internals)';
module.exports = {
  [`${P}consume 1 point`]: GET,
  [`${P}makes penalty`]: GET,
  [`${P}when passing points as float without decimal values does not throw an error`]: GET,
  [`${P}when passing points as string without decimal values does not throw an error`]: GET,
  [`${P}penalty using insuranceLimiter when RedisClient error`]: `${GET}; the penalty itself is charged`,
  [`${P}set using insuranceLimiter when RedisClient error`]: `${GET}; the set itself resolves as the test expects`,
  [`${P}reward points`]: `${GET}; and reward needs algorithm 'token' (a sliding window cannot refund)`,
  [`${P}reward using insuranceLimiter when RedisClient error`]: `${GET}; and reward needs algorithm 'token' (a sliding window cannot refund)`,
  [`${P}when customIncrTtlLuaScript is provided rejected when consume more than maximum points and multiply delay`]:
    'runs its own Lua script (customIncrTtlLuaScript): rlstore runs no scripts',
  [`${P}when customIncrTtlLuaScript is provided when passing custom duration rejected when consume more than maximum points and multiply delay`]:
    'runs its own Lua script (customIncrTtlLuaScript): rlstore runs no scripts',
};
