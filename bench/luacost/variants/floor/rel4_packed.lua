-- floor4's release with the state packed in one field 'm' of 10 numbers.
local t = redis.call('TIME')
local m = redis.call('HMGET', KEYS[1], 'm', '#' .. ARGV[3])
local a, b, c, d, e, f, g, h, i, j = string.match(m[1] or '1:0:0:0:0:0:0:0:0:0', '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$')
redis.call('ZADD', KEYS[2], t[1] * 1000 + 4000, ARGV[3])
redis.call('HSET', KEYS[1], 'm', string.format('%d:%d:%s:%d:%d:%d:%d:%d:%d:%d', 1, 0, c, tonumber(d) + 1, 5, 6, 7, 8, 9, 10), '#' .. ARGV[3], 'x1')
return {1, 0, 1, {}, 0}
