-- Leased shares: an ask for what the head waiter lacks, without share.lua's
-- full pass. A process whose head waiter needs more than its share takes
-- the difference from free capacity (reading only its entry and the
-- hash's counters, while nobody is queued and the kept sum of the shares,
-- share_entry.lua, shows that much free) or, when not that much is free,
-- joins the tail of the fleet's queue with what is free, as share.lua's
-- HANDOFF would (reading every entry). A process with no entry registers
-- so (epoch 0), as share.lua would, and creates the hash if there is none
-- (the semaphore's first use, or its key expired), with the configured
-- limit, as share.lua would. Whenever that does not suffice to
-- decide as share.lua would (the entry of another epoch, units handed to
-- it since the version it applied, the process queued already, a lease
-- that ended, capacity free while others are queued, a queue that
-- disagrees with the entries), it changes nothing and replies {0}: the
-- caller then runs share.lua. From free capacity, with nobody queued, it
-- takes what the head waiter lacks and what the process's other callers
-- could use at once (its demand); when that is not free it asks for the
-- head waiter alone, so that a burst of callers does not queue as one
-- heavy waiter. Growing towards the max-min target by demand is
-- share.lua's (hot asks for that beat).
-- The holders are told when the queue forms: a process that queues
-- behind nobody tells every process that holds a share and was not told
-- yet, as share.lua does. While the queue is not empty every holder that
-- is not queued has been told already (share.lua, share_give.lua and this
-- script keep that), so a process that queues behind others tells nobody.
-- (share.lua would also tell a queued process that holds part of what its
-- head waiter needs; untold, it keeps that part and its place, ahead of
-- the caller, as it would once told.)
-- A take that is served (not queued) records its process as not told,
-- as nobody is queued; but a single-use take (ARGV[12] '1': a lone
-- caller's, whose release gives the units back once they are unused)
-- records it as told, so that a process that queues later does not tell
-- it: it gives the units back without being told.
-- leased_script.go puts const.lua, share_queue.lua and share_entry.lua first.
-- KEYS: 1 S, share.lua's hash.
-- ARGV: 1 pid, 2 demand, 3 keep, 4 in use, 5 the callers queued locally,
--       6 need, 7 lease ms, 8 the version of its share that it has
--       applied, 9 the epoch of its entry (0: it has none, and registers),
--       10 its owner ('' for none), 11 its channel ('' for none), 12 '1'
--       for a single-use take, 13 the configured limit (absent: a missing
--       hash is left to share.lua).
-- Idempotent per pid: the share becomes an absolute value; a retried copy
-- finds its entry's version newer than the one applied, or (a
-- registration) finds its entry, and replies {0}.
-- Reply: share.lua's (code 2 for a registration, with the new epoch), with
-- the fleet totals 0, target the share, contended 1 if it queued behind
-- others (0 when served, single-use or not), soon (queued) the ms until
-- the earliest lease of another process holding a share ends, and hot 1
-- if the process wants more than its share and capacity is free.
local S = KEYS[1]
local pid = ARGV[1]
local demand, keep, inuse = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local waiting, need, ttl = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local known, epoch = tonumber(ARGV[8]), tonumber(ARGV[9])
local owner, chan = ARGV[10], ARGV[11]
local single = ARGV[12] == '1'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function int(x) return string.format('%d', x) end

local got = redis.call('HMGET', S, 'p:' .. pid, 'v', 'q', 'limit', 'pinned', 'x', 's', 'epoch')
local empty = true -- no field of the hash exists
for i = 1, 8 do
  if got[i] then empty = false end
end
local configured = tonumber(ARGV[13] or '')
local fresh = false
if empty and epoch == 0 and configured and need <= configured then
  -- No hash: it starts as share.lua would start it, with the configured
  -- limit, nothing in it, nobody queued and versions counted from now
  -- (share.lua writes limit, q and x, or pinned, whenever it runs, so a
  -- hash without them has no entry).
  fresh = true
  got = {nil, int(now_us), '', ARGV[13], nil, '0', int(now_us) .. ':0', nil}
end
local me, code = nil, 1
if epoch == 0 then
  if got[1] then return {0} end -- an entry, even one whose lease ended: share.lua
  code = 2
  me = {pid = pid, share = 0, epoch = tonumber(got[8] or '0') + 1, qat = 0, ver = 0, told = 0}
else
  me = ENTRY_READ(pid, got[1], now)
  if not me or me.epoch ~= epoch or me.ver > known or me.qat > 0 then return {0} end
end
if not got[2] or not got[3] or not got[4] then return {0} end
if not got[5] and not got[6] then return {0} end -- the expiry set is not known
local V, limit, qstr = tonumber(got[2]), tonumber(got[4]), got[3]
me.demand, me.inuse, me.waiting, me.need, me.exp = demand, inuse, waiting, need, now + ttl

-- As share.lua: the share first shrinks to what the process may still
-- have in use.
local kept = math.min(keep, me.share)
local shrunk = me.share - kept
me.share = kept
if need <= kept then return {0} end -- not starved: share.lua's beat

local sum = SUM_READ(got[7], V)
local queue, writes, notes, soon = {}, {}, {}, 0
if qstr == '' and sum and sum - shrunk + (need - kept) <= limit then
  -- Enough is free: take what the head waiter lacks, and what the other
  -- callers (demand, in permits) could use at once, as far as it is free.
  local grow = math.max(need, math.min(demand, limit - (sum - shrunk) + kept))
  sum = sum - shrunk + (grow - kept)
  me.share = grow
else
  -- Read every entry: the free capacity, the queue's tail, and the
  -- holders to tell.
  local by, chans, ended = ENTRIES_READ(S, pid, now)
  if ended then return {0} end -- a lease ended: share.lua frees its share
  sum = me.share
  for _, e in pairs(by) do sum = sum + e.share end
  local free = limit - sum
  for p in string.gmatch(qstr, '%S+') do queue[#queue + 1] = p end
  local starved = 0
  for _, e in pairs(by) do
    if e.need > e.share then starved = starved + 1 end
  end
  if starved ~= #queue or free < 0 or #queue > 0 and free > 0 then return {0} end
  local tail = nil
  for _, p in ipairs(queue) do
    local e = by[p]
    if not e or e.qat == 0 then return {0} end
    tail = e
  end
  -- The hand-off, as HANDOFF: the caller takes all that is free, and joins
  -- the tail of the queue if that does not suffice (free is 0 if others
  -- are queued).
  local g = math.min(free, need - kept)
  me.share = me.share + g
  sum = sum + g
  if me.share < need then
    me.qat = now_us
    if tail and tail.qat >= now_us then me.qat = tail.qat + 1 end -- Redis's clock went back
    if #queue > 0 then
      me.told = 1
    else
      me.told = 0
      -- The queue forms: tell every holder not told yet.
      for _, e in pairs(by) do
        if e.share > 0 and e.told == 0 then
          e.told = 1
          notes[#notes + 1] = e
        end
      end
    end
    queue[#queue + 1] = pid
    for _, e in pairs(by) do
      if e.share > 0 and (soon == 0 or e.exp - now < soon) then soon = math.max(1, e.exp - now) end
    end
    for _, e in ipairs(notes) do
      V = V + 1
      e.ver = V
      e.ch = chans[e.pid]
      writes[#writes + 1] = 'p:' .. e.pid
      writes[#writes + 1] = ENTRY_ENC(e)
    end
    writes[#writes + 1] = 'q'
    writes[#writes + 1] = table.concat(queue, ' ')
  end
end
-- Served (queued, it would be in the queue): nobody is starved, so the
-- process is not told, unless the take is single-use.
local told = me.told
if #queue == 0 then
  told = 0
  me.told = 0
  if single then me.told = 1 end
end
V = V + 1
me.ver = V
writes[#writes + 1] = 'p:' .. pid
writes[#writes + 1] = ENTRY_ENC(me)
writes[#writes + 1] = 'v'
writes[#writes + 1] = int(V)
writes[#writes + 1] = 's'
writes[#writes + 1] = SUM_ENC(V, sum)
if fresh then
  writes[#writes + 1] = 'limit'
  writes[#writes + 1] = got[4]
  writes[#writes + 1] = 'q'
  writes[#writes + 1] = ''
end
if code == 2 then
  writes[#writes + 1] = 'epoch'
  writes[#writes + 1] = int(me.epoch)
  if owner ~= '' then
    writes[#writes + 1] = 'o:' .. pid
    writes[#writes + 1] = owner
  end
  if chan ~= '' then
    writes[#writes + 1] = 'c:' .. pid
    writes[#writes + 1] = chan
  end
end
-- Bounded memory, as share.lua: the key outlives the caller's lease.
local expire = EXTEND(got[5], got[6], me.exp, writes)
redis.call('HSET', S, unpack(writes))
if expire then redis.call('PEXPIREAT', S, expire) end
for _, e in ipairs(notes) do
  SHARE_NOTE(e.ch, e)
end
local hot = 0
if demand > me.share and sum < limit then hot = 1 end
return {code, me.share, limit, me.share, me.epoch, hot, now_us, 0, 0, me.inuse, me.waiting, me.ver, told, soon,
  limit - sum}
