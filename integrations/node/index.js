'use strict';

// rlstore-ratelimit: drop-in stores for express-rate-limit and
// rate-limiter-flexible that call rlstore's RL.* commands instead of Lua.
const { RlstoreStore } = require('./lib/store');
const { RateLimiterRlstore, RateLimiterRes } = require('./lib/limiter');

module.exports = { RlstoreStore, RateLimiterRlstore, RateLimiterRes };
