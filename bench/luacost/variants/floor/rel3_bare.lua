-- floor4's release with neither TIME (a constant, as bench/seedsem takes its time
-- from ARGV) nor a tombstone (the id's field and member are removed, so the
-- keys stay small): what is left of the floor without the two.
local t = {'1795000000', '123456'}
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'nw', '#' .. ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('HDEL', KEYS[1], '#' .. ARGV[3])
return {1, 0, 1, {}, 0}
