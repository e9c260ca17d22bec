-- ARGV: new limit, channel. Stores the limit for every process, pins it
-- (the meta key no longer expires) and grants or rejects waiters under it.
limit = tonumber(ARGV[1])
redis.call('HSET', M, 'limit', limit, 'pinned', 1)
fresh = true
purge()
grant()
return {1, 0, limit, finish(), now_us}
