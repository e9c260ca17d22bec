-- KEYS: a semaphore's six keys (see lib.lua); ARGV[1]: the caller's
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
local M, H, HI, Q, QI, QE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
need('TIME')
need('HMGET', M, 'f')
need('HSET', M, 'f', 'v')
need('HINCRBY', M, 'f', '1')
need('HGET', HI, 'f')
need('HGETALL', M)
need('HDEL', HI, 'f')
need('EXISTS', H)
need('PEXPIREAT', H, '1')
need('PERSIST', M)
need('ZADD', Q, '1', 'm')
need('ZCARD', Q)
need('ZRANGE', H, '0', '-1')
need('ZRANGEBYSCORE', QE, '-inf', '1')
need('ZREMRANGEBYSCORE', QE, '-inf', '1')
need('ZREM', Q, 'm')
need('ZSCORE', H, 'm')
need('PUBLISH', ARGV[1], '')
if string.find(ARGV[1], '{', 1, true) then -- a Cluster shard channel
  need('SPUBLISH', ARGV[1], '')
  if not redis.acl_check_cmd('PUBSUB', 'SHARDNUMSUB', ARGV[1]) then
    missing[#missing + 1] = 'pubsub|shardnumsub'
  end
  need('SSUBSCRIBE', ARGV[1])
  need('SUNSUBSCRIBE', ARGV[1])
end
return missing
