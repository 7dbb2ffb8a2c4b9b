-- GCRA token bucket: the job of RL.TOKEN and CL.THROTTLE. The key holds the
-- theoretical arrival time (TAT) in microseconds; the bucket holds capacity
-- tokens and refills at rate tokens per period.
-- KEYS[1] the TAT string. ARGV: capacity, rate, period_ms, cost.
-- Returns {allowed, limit, remaining, wait_ms, reset_ms}.
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local interval = period * 1000 / rate
local burst = interval * capacity
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end

local new_tat = tat + cost * interval
local allow_at = new_tat - burst
if cost > capacity or now < allow_at then
  local wait = -1
  if cost <= capacity then wait = math.ceil((allow_at - now) / 1000) end
  local remaining = math.floor((burst - (tat - now)) / interval)
  return {0, capacity, remaining, wait, math.ceil((tat - now) / 1000)}
end

local ttl = math.ceil((new_tat - now) / 1000)
redis.call('SET', KEYS[1], string.format('%.3f', new_tat), 'PX', ttl)
return {1, capacity, math.floor((burst - (new_tat - now)) / interval), 0, ttl}
