-- Sliding log in a sorted set: the job of RL.LOG. Every admitted unit is a
-- member scored with its ms timestamp; a request is admitted when the units
-- in (now - window, now] plus cost fit in limit.
-- KEYS[1] the sorted set. ARGV: limit, window_ms, cost.
-- Returns {allowed, limit, remaining, wait_ms, reset_ms}.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])

if count + cost <= limit then
  for i = 1, cost do
    redis.call('ZADD', KEYS[1], now, t[1] .. '.' .. t[2] .. ':' .. (count + i))
  end
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, limit, limit - count - cost, 0, window}
end

local wait = -1
if cost <= limit then
  local need = count + cost - limit
  local e = redis.call('ZRANGE', KEYS[1], need - 1, need - 1, 'WITHSCORES')
  wait = tonumber(e[2]) + window - now
end
local reset = 0
if count > 0 then
  local e = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  reset = tonumber(e[2]) + window - now
end
return {0, limit, math.max(limit - count, 0), wait, reset}
