-- KEYS: holders zset (id -> lease end ms), queue list ('<chan>|<id>').
-- ARGV: limit, id, ttl_ms, chan. Returns 1 granted, 0 queued.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('LLEN', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + ARGV[3], ARGV[2])
  return 1
end
redis.call('RPUSH', KEYS[2], ARGV[4] .. '|' .. ARGV[2])
return 0
