-- Sliding window over a hash of per-second counters: the job of RL.SLIDE.
-- At second s it sums the counters of seconds s-window+1 .. s and admits
-- when sum + cost <= limit. Stale counters are deleted as they are met.
-- KEYS[1] the hash. ARGV: limit, window (whole seconds), cost.
-- Returns {allowed, limit, remaining, wait_ms, reset_ms}.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1])
local now_ms = now * 1000 + math.floor(tonumber(t[2]) / 1000)
local oldest = now - window + 1

local fields = redis.call('HGETALL', KEYS[1])
local secs, counts, stale = {}, {}, {}
local sum, newest = 0, 0
for i = 1, #fields, 2 do
  local s = tonumber(fields[i])
  if s < oldest then
    stale[#stale + 1] = fields[i]
  else
    local c = tonumber(fields[i + 1])
    secs[#secs + 1] = s
    counts[s] = c
    sum = sum + c
    if s > newest then newest = s end
  end
end
if #stale > 0 then
  redis.call('HDEL', KEYS[1], unpack(stale))
end

if sum + cost <= limit then
  redis.call('HINCRBY', KEYS[1], now, cost)
  redis.call('EXPIRE', KEYS[1], window + 1)
  return {1, limit, limit - sum - cost, 0, (now + window) * 1000 - now_ms}
end

local wait = -1
if cost <= limit then
  table.sort(secs)
  local need, freed = sum + cost - limit, 0
  for _, s in ipairs(secs) do
    freed = freed + counts[s]
    if freed >= need then
      wait = (s + window) * 1000 - now_ms
      break
    end
  end
end
local reset = 0
if sum > 0 then reset = (newest + window) * 1000 - now_ms end
return {0, limit, math.max(limit - sum, 0), wait, reset}
