-- Leased shares: a give-back, without reading the whole shares hash. A
-- process gives back the units it does not keep in use (in the release
-- itself when it knows another process is starved, or once its share went
-- unused); this script hands them to the head of the fleet's queue, as
-- share.lua's HANDOFF would, reading only the giver's entry, the queue
-- field and the entries of the processes it serves; with the queue empty,
-- a giver with no caller queued just keeps what it uses. Whenever that does not suffice to decide as share.lua
-- would (an entry missing or expired, units handed to the giver since the
-- version it applied, a unit left over once the queue is served, a giver
-- queued already or with callers while nobody is starved, a queue that
-- disagrees with an entry), it changes nothing and replies {0}: the
-- caller then runs share.lua.
-- leased_script.go puts const.lua, share_queue.lua and share_entry.lua first.
-- KEYS: 1 S, share.lua's hash; its field 'q' lists the starved pids in
-- queue order (qat, then pid), separated by spaces (share.lua rewrites it
-- whenever the queue changes), 'x' is the key's expiry, and 's' the kept
-- sum of the shares (share_entry.lua), kept current if it was.
-- ARGV: 1 pid, 2 demand, 3 keep, 4 in use, 5 the callers queued locally,
--       6 need, 7 lease ms, 8 the version of its share that it has
--       applied, 9 the epoch of its entry, 10 (ignored), 11 (ignored),
--       12 '1' if the giver is idle (nothing in use nor asked for) and
--       leaves: its entry is deleted once its share is given, 13
--       (ignored).
-- Idempotent per pid: the giver's share becomes min(keep, share), an
-- absolute value; a retried copy finds the units given already (and its
-- version newer than the one applied) and replies {0}.
-- Reply: share.lua's, with the fleet totals and soon 0, and hot 1 if the queue is
-- empty after it and the giver still has a share or callers (the targets,
-- which it does not compute, apply again); code 3 if the giver left.
local S = KEYS[1]
local pid = ARGV[1]
local demand, keep, inuse = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local waiting, need, ttl = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local known, epoch = tonumber(ARGV[8]), tonumber(ARGV[9])
local leave = ARGV[12] == '1' and inuse == 0 and waiting == 0 and need == 0
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])

local got = redis.call('HMGET', S, 'p:' .. pid, 'v', 'q', 'limit', 'pinned', 'x', 's')
local me = ENTRY_READ(pid, got[1], now)
if not me or me.epoch ~= epoch or me.ver > known or not got[2] or not got[3] or not got[4] then return {0} end
if not got[5] and not got[6] then return {0} end -- the expiry set is not known
local V, limit = tonumber(got[2]), tonumber(got[4])
local sum = SUM_READ(got[7], V)
local q = {}
for p in string.gmatch(got[3], '%S+') do q[#q + 1] = p end
if me.qat > 0 then return {0} end -- queued already: share.lua serves it in its turn

local given = me.share - math.min(keep, me.share)
if given <= 0 then return {0} end
-- Nobody is starved any more (the giver was told otherwise earlier): with
-- no caller queued the giver keeps what it uses and the rest is free, as
-- in share.lua; with callers it may grow back towards its target, which
-- share.lua computes.
if #q == 0 and need > 0 then return {0} end
me.share = me.share - given
me.demand, me.inuse, me.waiting, me.need, me.exp = demand, inuse, waiting, need, now + ttl

-- The hand-off, strictly FIFO: the head takes what it lacks, or all that
-- is given and keeps its place.
local served, left = {}, given
local k = 1
while left > 0 and k <= #q do
  local p = q[k]
  if p == pid then return {0} end
  local hv = redis.call('HMGET', S, 'p:' .. p, 'c:' .. p)
  local e = ENTRY_READ(p, hv[1], now)
  if not e or e.qat == 0 or e.need <= e.share then return {0} end
  e.ch = hv[2]
  local g = math.min(left, e.need - e.share)
  e.share, left = e.share + g, left - g
  V = V + 1
  e.ver = V
  served[#served + 1] = e
  if e.share < e.need then break end
  e.qat = 0
  k = k + 1
end
if left > 0 and #q > 0 then return {0} end -- the queue is served: share.lua decides the rest

-- The queue after: the heads served in full leave it; the giver joins its
-- tail if its share no longer serves its head waiter (its arrival is now).
local rest = {}
for j = k, #q do rest[#rest + 1] = q[j] end
if me.need > me.share then
  me.qat = now_us
  rest[#rest + 1] = pid
end
local function others(e)
  for _, p in ipairs(rest) do
    if p ~= e.pid then return 1 end
  end
  return 0
end

V = V + 1
me.ver = V
me.told = others(me)
local writes = {}
if not leave then
  writes = {'p:' .. pid, ENTRY_ENC(me)}
end
for _, e in ipairs(served) do
  e.told = others(e)
  writes[#writes + 1] = 'p:' .. e.pid
  writes[#writes + 1] = ENTRY_ENC(e)
end
writes[#writes + 1] = 'v'
writes[#writes + 1] = string.format('%d', V)
writes[#writes + 1] = 'q'
writes[#writes + 1] = table.concat(rest, ' ')
if sum then
  -- what is left once the queue is served is free
  writes[#writes + 1] = 's'
  writes[#writes + 1] = SUM_ENC(V, sum - left)
end
-- Bounded memory, as share.lua: the key outlives the giver's lease.
local expire = not leave and EXTEND(got[5], got[6], me.exp, writes)
redis.call('HSET', S, unpack(writes))
if leave then redis.call('HDEL', S, 'p:' .. pid, 'o:' .. pid, 'c:' .. pid) end
for _, e in ipairs(served) do
  SHARE_NOTE(e.ch, e)
end
if expire then redis.call('PEXPIREAT', S, expire) end
if #rest == 0 and left > 0 and limit > 1 then
  -- Capacity came free with nobody starved: tell each other process whose
  -- callers wait beyond its share (as of its last script), so that it
  -- beats (share.lua) and takes its part now rather than at its next
  -- heartbeat. (With a limit of 1 such a process is starved, and queued.)
  local by, chans = ENTRIES_READ(S, pid, now)
  for p, e in pairs(by) do
    if e.qat == 0 and e.waiting > 0 and e.demand > e.share then SHARE_NOTE(chans[p], e) end
  end
end
local free = -1 -- unknown
if sum then free = limit - (sum - left) end
if leave then
  return {3, 0, limit, 0, me.epoch, 0, now_us, 0, 0, 0, 0, V, 0, 0, free}
end
-- With the queue empty the shares follow the targets again, which this
-- script does not compute: hot asks a giver that still has a share or
-- callers to beat (share.lua) soon.
local hot = 0
if #rest == 0 and (me.share > 0 or me.waiting > 0) then hot = 1 end
return {1, me.share, limit, me.share, me.epoch, hot, now_us, 0, 0, me.inuse, me.waiting, me.ver, me.told, 0, free}
