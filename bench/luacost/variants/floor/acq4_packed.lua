-- floor4 with the state packed in one field 'm' of 10 numbers.
local t = redis.call('TIME')
local m = redis.call('HMGET', KEYS[1], 'm', '#' .. ARGV[3])
local a, b, c, d, e, f, g, h, i, j = string.match(m[1] or '1:0:0:0:0:0:0:0:0:0', '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$')
redis.call('ZADD', KEYS[2], t[1] * 1000 + 10000, ARGV[3])
local us = t[1] .. string.sub('00000' .. t[2], -6)
redis.call('HSET', KEYS[1], 'm', string.format('%d:%d:%s:%d:%d:%d:%d:%d:%d:%d', 1, 1, us, tonumber(d) + 1, 5, 6, 7, 8, 9, 10), '#' .. ARGV[3], 'h1:' .. us .. ':' .. us)
return {1, 1, 1, {}, 0, 0, 0}
