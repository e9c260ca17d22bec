-- floor4 with TIME replaced by a constant (bench/seedsem takes its time from ARGV).
local t = {'1795000000', '123456'}
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'nw', '#' .. ARGV[3])
redis.call('ZADD', KEYS[2], t[1] * 1000 + 4000, ARGV[3])
redis.call('HSET', KEYS[1], 'used', 0, 'hn', 0, '#' .. ARGV[3], 'x1')
return {1, 0, 1, {}, 0}
