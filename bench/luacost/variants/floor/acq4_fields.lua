-- floor4 with main's field lists: HMGET of 10 fields, HSET of 5 pairs.
local t = redis.call('TIME')
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn', 'qn', '#' .. ARGV[3])
redis.call('ZADD', KEYS[2], t[1] * 1000 + 10000, ARGV[3])
local us = t[1] .. string.sub('00000' .. t[2], -6)
redis.call('HSET', KEYS[1], 'tok', us, 'hn', 1, '#' .. ARGV[3], 'h1:' .. us .. ':' .. us, 'used', 1, 'minl', 5)
return {1, 1, 1, {}, 0, 0, 0}
