-- The acquire script of the ZSET + BRPOP design, as the article has it
-- (its comments translated), plus the block marked "seedsem" at the end.
-- KEYS[1] timestamp set key
-- KEYS[2] semaphore (owner) set key
-- KEYS[3] sequence counter key
-- ARGV[1] timestamp of this acquire
-- ARGV[2] unique member of this acquire
-- ARGV[3] total number of permits
-- ARGV[4] expiry timestamp (entries below it are expired)
-- remove expired entries
redis.call("ZREMRANGEBYSCORE", KEYS[1], 0, ARGV[4])
redis.call("ZINTERSTORE", KEYS[2], 2, KEYS[1], KEYS[2], "AGGREGATE", "MIN")
-- take a permit
local cnt = redis.call("INCR", KEYS[3])
redis.call("ZADD", KEYS[1], ARGV[1], ARGV[2])
redis.call("ZADD", KEYS[2], cnt, ARGV[2])
-- granted if the rank is below the number of permits
local res = redis.call("ZRANK", KEYS[2], ARGV[2])
if res < tonumber(ARGV[3]) then
return 'T'
else
-- seedsem: a loser removes its own entries in the same atomic step (the
-- article leaves them; see the package documentation).
redis.call("ZREM", KEYS[1], ARGV[2])
redis.call("ZREM", KEYS[2], ARGV[2])
return 'F'
end
