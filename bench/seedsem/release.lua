-- The release script of the ZSET + BRPOP design, as the article has it.
-- KEYS[1] semaphore (owner) set key
-- KEYS[2] timestamp set key
-- KEYS[3] wait list key
-- ARGV[1] member
-- release
redis.call("ZREM", KEYS[1], ARGV[1])
redis.call("ZREM", KEYS[2], ARGV[1])
-- wake one waiter
redis.call("LPUSH", KEYS[3], "n")
