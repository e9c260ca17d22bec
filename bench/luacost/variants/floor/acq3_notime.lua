-- floor4 with TIME replaced by a constant (bench/seedsem takes its time from ARGV).
local t = {'1795000000', '123456'}
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'nw', '#' .. ARGV[3])
redis.call('ZADD', KEYS[2], t[1] * 1000 + 10000, ARGV[3])
local us = t[1] .. string.sub('00000' .. t[2], -6)
redis.call('HSET', KEYS[1], 'used', 1, 'hn', 1, 'tok', us, '#' .. ARGV[3], 'h1:' .. us .. ':' .. us)
return {1, 1, 1, {}, 0, 0, 0}
