-- Fixed window with INCRBY + PEXPIRE: the job of RL.FIXED. Windows are
-- aligned to multiples of window since the epoch; each has its own counter
-- key, KEYS[1] .. ':' .. window number, as deployed fixed-window limiters do.
-- A denied request is checked before counting, so it consumes nothing.
-- KEYS[1] the counter's base name. ARGV: limit, window_ms, cost.
-- Returns {allowed, limit, remaining, wait_ms, reset_ms}.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = math.floor(now / window)
local key = KEYS[1] .. ':' .. n
local reset = (n + 1) * window - now

local count = tonumber(redis.call('GET', key) or '0')
if count + cost > limit then
  local wait = -1
  if cost <= limit then wait = reset end
  return {0, limit, math.max(limit - count, 0), wait, reset}
end
local after = redis.call('INCRBY', key, cost)
if after == cost then
  redis.call('PEXPIRE', key, reset + 1000)
end
return {1, limit, limit - after, 0, reset}
