-- The nested calls of main's uncontended release (TIME, HMGET of 9
-- fields, ZREM, ZADD, ZRANGE, HSET of 3 pairs), with as little Lua as
-- possible.
local t = redis.call('TIME')
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn', '#' .. ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[4], t[1] * 1000 + 4000, ARGV[3])
local h = redis.call('ZRANGE', KEYS[3], 0, 0)
redis.call('HSET', KEYS[1], 'used', 0, 'hn', 0, '#' .. ARGV[3], 'x1')
return {1, 0, 1, {}, 0}
