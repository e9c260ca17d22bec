-- ARGV: limit, channel, id, ttl_ms. Makes the lease of holder id end ttl_ms
-- from now (Redis TIME), shorter or longer than it was (Permit.SetLeaseTTL).
-- Returns {code, 0, limit, notes, now_us}: code 1 done, 0 not held (lease
-- ended, released or adopted away). Idempotent: a repeated run sets the
-- same end again, measured from its own now.
local id, ttl = ARGV[3], tonumber(ARGV[4])
purge()
grant() -- the permits of leases that purge() reaped go to the queue
local s = redis.call('ZSCORE', H, id)
local code = 0
if s and tonumber(s) > now and redis.call('HGET', HI, id) then
  redis.call('ZADD', H, lease(ttl), id)
  code = 1
end
return {code, 0, limit, finish(), now_us}
