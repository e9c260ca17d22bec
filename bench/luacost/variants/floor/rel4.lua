-- The planned design's uncontended release: TIME, HMGET of 5 fields, ZADD
-- (the holder's member becomes its tombstone: a new score), HSET of 3
-- pairs, minimal Lua.
local t = redis.call('TIME')
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'nw', '#' .. ARGV[3])
redis.call('ZADD', KEYS[2], t[1] * 1000 + 4000, ARGV[3])
redis.call('HSET', KEYS[1], 'used', 0, 'hn', 0, '#' .. ARGV[3], 'x1')
return {1, 0, 1, {}, 0}
