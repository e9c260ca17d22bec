-- ARGV: limit, channel, id, tomb_ms. Releases a holder, or takes a waiter
-- out of the queue (a cancelled Acquire; if the grant raced the cancel, the
-- permit is released and passed on), and leaves a tombstone for tomb_ms.
-- Returns {code, 0, limit, notes}: code 1 released, 2 left the queue, 0
-- unknown (lease expired or never held). Idempotent: a repeated run finds
-- the tombstone and returns the first run's code, and a sixth element 1.
local id, ttl = ARGV[3], tonumber(ARGV[4]) or 10000
F.start(id)
F.purge()
local code = 0
local cur = F.get('#' .. id)
local kind = cur and string.sub(cur, 1, 1)
if kind == 'x' then
  return {tonumber(string.sub(cur, 2)), 0, V.limit, F.finish(), V.now_us, 1}
elseif kind == 'h' then
  V.used, V.hn = V.used - tonumber(string.match(cur, '^h(%d+):')), V.hn - 1
  code = 1
elseif kind == 'q' then
  F.unqueue(id, cur)
  code = 2
end
-- The tombstone's end replaces the lease's (or the waiter's) in T.
F.tombstone(id, code, ttl)
F.grant()
return {code, 0, V.limit, F.finish(), V.now_us}
