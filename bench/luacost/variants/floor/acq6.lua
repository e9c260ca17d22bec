-- The nested calls of main's uncontended acquire (TIME, HMGET of 9
-- fields, ZRANGE, ZADD, HSET of 4 pairs), with as little Lua as possible:
-- the floor a script with these calls reaches.
local t = redis.call('TIME')
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn', '#' .. ARGV[3])
local h = redis.call('ZRANGE', KEYS[3], 0, 0)
redis.call('ZADD', KEYS[2], t[1] * 1000 + 10000, ARGV[3])
local us = t[1] .. string.sub('00000' .. t[2], -6)
redis.call('HSET', KEYS[1], 'used', 1, 'hn', 1, 'tok', us, '#' .. ARGV[3], 'h1:' .. us .. ':' .. us)
return {1, 1, 1, {}, 0, 0, 0}
