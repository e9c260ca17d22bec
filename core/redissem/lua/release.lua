-- ARGV: limit, channel, id, tomb_ms[, by_id]. Leaves a tombstone for
-- tomb_ms, and passes a released permit on to the head of the queue.
--   by_id absent or '0' (Release, a cancelled Acquire): releases a holder, or
--   takes a waiter out of the queue (if the grant raced the cancel, the
--   permit is released and passed on). Returns {code, 0, limit, notes,
--   now_us}: code 1 released, 2 left the queue, 0 unknown (lease expired or
--   never held); the tombstone has the same code.
--   by_id '1' (Redis.ReleaseID): releases holder id for whichever process
--   holds it, and never touches a queued waiter. Returns code 1 released
--   (tombstone 4: released by id), 0 not held (and changes nothing).
-- Idempotent: a repeated run finds the tombstone and returns its code (1 or
-- 2 as above, 4: released by an earlier ReleaseID, 3: adopted away) and a
-- sixth element 1. An eighth element 1 (the sixth and seventh 0) says that
-- the state was made afresh: the caller's process has no owner record.
local id, ttl, by_id = ARGV[3], tonumber(ARGV[4]) or 10000, ARGV[5] == '1'
F.start(id)
F.purge()
local code = 0
local cur = F.get('#' .. id)
local kind = cur and string.sub(cur, 1, 1)
if kind == 'x' then
  return {tonumber(string.sub(cur, 2)), 0, V.limit, F.finish(), V.now_us, 1}
elseif kind == 'h' then
  if string.find(cur, '^h%d+:%d+:%d+:') then F.unheld(cur) else V.used, V.hn = V.used - WEIGHT(cur), V.hn - 1 end
  code = 1
elseif by_id then
  return {0, 0, V.limit, F.finish(), V.now_us}
elseif kind == 'q' then
  F.unqueue(id, cur)
  code = 2
end
-- The tombstone's end replaces the lease's (or the waiter's) in T.
F.tombstone(id, by_id and 4 or code, ttl)
F.grant()
if V.fresh then return {code, 0, V.limit, F.finish(), V.now_us, 0, 0, 1} end
return {code, 0, V.limit, F.finish(), V.now_us}
