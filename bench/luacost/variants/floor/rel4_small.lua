-- floor4 on keys that stay small: the release removes the id's field and member
-- (no tombstone), so the hash and the zset do not grow.
local t = redis.call('TIME')
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'nw', '#' .. ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('HDEL', KEYS[1], '#' .. ARGV[3])
return {1, 0, 1, {}, 0}
