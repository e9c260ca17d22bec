-- floor4's acquire with an integer reply instead of main's table: what the
-- reply's shape costs (the reply carries the token, the limit and the grants).
local t = redis.call('TIME')
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'nw', '#' .. ARGV[3])
redis.call('ZADD', KEYS[2], t[1] * 1000 + 10000, ARGV[3])
local us = t[1] .. string.sub('00000' .. t[2], -6)
redis.call('HSET', KEYS[1], 'used', 1, 'hn', 1, 'tok', us, '#' .. ARGV[3], 'h1:' .. us .. ':' .. us)
return 1
