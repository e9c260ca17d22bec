#!lua name=luacost
-- variants/floor/acq4.lua and rel4.lua as functions.
redis.register_function('luacost_acq', function(KEYS, ARGV)
-- The planned design's uncontended acquire (one zset for holders, waiters'
-- expiry and tombstones, a waiter count in the state hash): TIME, HMGET of
-- 5 fields, ZADD, HSET of 4 pairs, minimal Lua.
local t = redis.call('TIME')
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'nw', '#' .. ARGV[3])
redis.call('ZADD', KEYS[2], t[1] * 1000 + 10000, ARGV[3])
local us = t[1] .. string.sub('00000' .. t[2], -6)
redis.call('HSET', KEYS[1], 'used', 1, 'hn', 1, 'tok', us, '#' .. ARGV[3], 'h1:' .. us .. ':' .. us)
return {1, 1, 1, {}, 0, 0, 0}
end)
redis.register_function('luacost_rel', function(KEYS, ARGV)
-- The planned design's uncontended release: TIME, HMGET of 5 fields, ZADD
-- (the holder's member becomes its tombstone: a new score), HSET of 3
-- pairs, minimal Lua.
local t = redis.call('TIME')
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'nw', '#' .. ARGV[3])
redis.call('ZADD', KEYS[2], t[1] * 1000 + 4000, ARGV[3])
redis.call('HSET', KEYS[1], 'used', 0, 'hn', 0, '#' .. ARGV[3], 'x1')
return {1, 0, 1, {}, 0}
end)
