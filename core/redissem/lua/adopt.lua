-- ARGV: limit, channel, id, new_id, ttl_ms, tomb_ms, deadline_us (0: none),
-- owner ('' none: the owner record of new_id's process, F.own).
-- Moves holder id to new_id in the calling process (Redis.Adopt): same
-- weight, token and grant time, a lease of ttl_ms from now, and a tombstone
-- "x3" (adopted away) for id, so that the old holder's renewal finds it
-- gone, its Release answers "not held", and a late copy of its acquire is
-- refused. The count of permits in use does not change.
-- Returns {info, code, limit, notes, now_us[, again]}: info is a list of
-- one "weight:token:grant_us" when code is 1 (adopted), empty otherwise;
-- code 0: id not held, -3 refused: delivered after deadline_us, -4 refused:
-- new_id was already given up (a tombstone). Idempotent: a second run for
-- new_id finds it held and returns it again, with a sixth element 1.
local id, nid, ttl, tomb = ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
local deadline = tonumber(ARGV[7]) or 0
F.start(id)
F.purge()
F.grant() -- the permits of leases that purge() reaped go to the queue
local mine = F.get('#' .. nid)
if mine and string.sub(mine, 1, 1) == 'h' then
  return {{string.sub(mine, 2)}, 1, V.limit, F.finish(), V.now_us, 1}
end
if mine then
  return {{}, -4, V.limit, F.finish(), V.now_us}
end
if deadline > 0 and V.now_us > deadline then
  return {{}, -3, V.limit, F.finish(), V.now_us}
end
local info = F.get('#' .. id)
local s = info and string.sub(info, 1, 1) == 'h' and redis.call('ZSCORE', V.T, id)
if not s or tonumber(s) <= V.now then
  return {{}, 0, V.limit, F.finish(), V.now_us}
end
F.put('#' .. nid, info)
if NOTED(id) and NOTED(nid) then -- the note stays with the permit
  local note = F.get('@' .. id)
  if note then F.put('@' .. nid, note) end
end
if (ARGV[8] or '') ~= '' then F.own(BASE(nid), ARGV[8], 2 * ttl) end
F.tadd(F.lease_end(V.now + ttl), nid)
F.tombstone(id, 3, tomb) -- the holders' count is unchanged: nid took id's place
return {{string.sub(info, 2)}, 1, V.limit, F.finish(), V.now_us}
