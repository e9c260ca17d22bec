-- ARGV: limit, channel, id, tomb_ms. Releases holder id for whichever
-- process holds it (Redis.ReleaseID), passes the permit on to the head of
-- the queue, and leaves a tombstone "x4" (released by id) for tomb_ms.
-- Unlike release.lua it never touches a queued waiter.
-- Returns {code, 0, limit, notes, now_us[, again]}: code 1 released, 0 not
-- held; an id with a tombstone returns that tombstone's code (4: released
-- by an earlier run, 1: released by its holder, 3: adopted away) and a
-- sixth element 1. Idempotent: a repeated run answers 4 and changes nothing.
local id, ttl = ARGV[3], tonumber(ARGV[4]) or 10000
F.start(id)
F.purge()
local cur = F.get('#' .. id)
if cur and string.sub(cur, 1, 1) == 'h' then
  V.used, V.hn = V.used - tonumber(string.match(cur, '^h(%d+):')), V.hn - 1
  F.tombstone(id, 4, ttl) -- its end replaces the lease's in T
  F.grant()
  return {1, 0, V.limit, F.finish(), V.now_us}
end
if F.is_tomb(cur) then
  return {tonumber(string.sub(cur, 2)), 0, V.limit, F.finish(), V.now_us, 1}
end
return {0, 0, V.limit, F.finish(), V.now_us}
