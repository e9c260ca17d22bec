-- ARGV: limit, channel, id, ttl_ms. Makes the lease of holder id end ttl_ms
-- from now (Redis TIME), shorter or longer than it was (Permit.SetLeaseTTL).
-- Returns {code, 0, limit, notes, now_us}: code 1 done, 0 not held (lease
-- ended, released or adopted away). Idempotent: a repeated run sets the
-- same end again, measured from its own now.
local id, ttl = ARGV[3], tonumber(ARGV[4])
F.start(id)
F.purge()
F.grant() -- the permits of leases that purge() reaped go to the queue
local cur = F.get('#' .. id)
local code = 0
if cur and string.sub(cur, 1, 1) == 'h' then
  local s = redis.call('ZSCORE', V.T, id)
  if s and tonumber(s) > V.now then
    F.tadd(F.lease_end(V.now + ttl), id)
    code = 1
  end
end
return {code, 0, V.limit, F.finish(), V.now_us}
