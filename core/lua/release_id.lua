-- ARGV: limit, channel, id, tomb_ms. Releases holder id for whichever
-- process holds it (Redis.ReleaseID), passes the permit on to the head of
-- the queue, and leaves a tombstone "x4" (released by id) for tomb_ms.
-- Unlike release.lua it never touches a queued waiter.
-- Returns {code, 0, limit, notes, now_us[, again]}: code 1 released, 0 not
-- held; an id with a tombstone returns that tombstone's code (4: released
-- by an earlier run, 1: released by its holder, 3: adopted away) and a
-- sixth element 1. Idempotent: a repeated run answers 4 and changes nothing.
local id, ttl = ARGV[3], tonumber(ARGV[4]) or 10000
purge()
local info = redis.call('HGET', HI, id)
if info then
  used = used - weight_of(info)
  redis.call('HDEL', HI, id)
  redis.call('ZREM', H, id)
  tombstone(id, 4, ttl)
  grant()
  return {1, 0, limit, finish(), now_us}
end
local qi = redis.call('HGET', QI, id)
if qi and is_tomb(qi) then
  return {tonumber(string.sub(qi, 2)), 0, limit, finish(), now_us, 1}
end
return {0, 0, limit, finish(), now_us}
