-- KEYS: holders zset, queue list. ARGV: limit, id, ttl_ms.
-- Releases id and grants to the head of the queue while permits are free,
-- with one PUBLISH to the waiter's process channel per grant.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREM', KEYS[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = tonumber(ARGV[1]) - redis.call('ZCARD', KEYS[1])
while n > 0 do
  local m = redis.call('LPOP', KEYS[2])
  if not m then break end
  local sep = string.find(m, '|', 1, true)
  local id = string.sub(m, sep + 1)
  redis.call('ZADD', KEYS[1], now + ARGV[3], id)
  redis.call('PUBLISH', string.sub(m, 1, sep - 1), id)
  n = n - 1
end
return 1
