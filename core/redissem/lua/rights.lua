-- KEYS: a semaphore's four keys (see lib.lua); ARGV[1]: the caller's
-- notification channel. Returns the commands of the minimum ACL that the
-- current user may not run on these keys and that channel (lower case),
-- or an empty list. Run before a backend's first script, so that a missing
-- right fails that first call before any write, instead of failing a later
-- script half-way (Redis keeps the writes made before the error). Before
-- Redis 7 (no redis.acl_check_cmd) it returns an empty list.
if not redis.acl_check_cmd then return {} end
local missing = {}
local function need(...)
  if not redis.acl_check_cmd(...) then missing[#missing + 1] = string.lower((...)) end
end
local S, T, W, P = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
-- The scripts run by EVALSHA, and by EVAL when the server lacks them (after
-- a restart or SCRIPT FLUSH): a user must have both, whatever is cached now.
need('EVALSHA', 'f', '0')
need('EVAL', 'return 1', '0')
need('TIME')
need('HMGET', S, 'f')
need('HSET', S, 'f', 'v')
need('HGET', S, 'f')
need('HGETALL', S)
need('HDEL', S, 'f')
need('EXISTS', S)
need('GET', P)
need('SET', P, '1')
need('DEL', T)
need('PEXPIREAT', T, '1')
need('PERSIST', S)
need('ZADD', W, '1', 'm')
need('ZPOPMIN', W)
need('ZCARD', W)
need('ZRANGE', T, '0', '-1')
need('ZRANGEBYSCORE', T, '-inf', '1')
need('ZREMRANGEBYSCORE', T, '-inf', '1')
need('ZREM', W, 'm')
need('ZSCORE', T, 'm')
need('PUBLISH', ARGV[1], '')
if not redis.acl_check_cmd('PUBSUB', 'NUMSUB', ARGV[1]) then
  missing[#missing + 1] = 'pubsub|numsub'
end
if string.find(ARGV[1], '{', 1, true) then -- a Cluster shard channel
  need('SPUBLISH', ARGV[1], '')
  if not redis.acl_check_cmd('PUBSUB', 'SHARDNUMSUB', ARGV[1]) then
    missing[#missing + 1] = 'pubsub|shardnumsub'
  end
  need('SSUBSCRIBE', ARGV[1])
  need('SUNSUBSCRIBE', ARGV[1])
end
return missing
