-- Leased shares (NewLeased): every decision about the shares of one
-- semaphore. leased_script.go puts const.lua, share_queue.lua and
-- share_entry.lua first; it
-- does not use lib.lua nor the keys of the default mode. KEYS (under the
-- semaphore's hash tag):
--   1 S  hash: limit, epoch (last share epoch issued), pinned (SetLimit),
--            v (the last version issued: every change of a share takes a
--            new one; they count from the Redis TIME in µs at which the
--            hash was made, so that the versions of a hash made anew, once
--            it expired or Redis lost it, exceed those of the hash before
--            it, of which a process that left may still hold notes), and
--            per process 'p:' .. pid ->
--            "share:demand:inuse:waiting:need:exp:epoch:qat:ver:told"
--            (qat: when it was first seen starved, µs, 0 if it is not;
--            ver: the version of its share; told: 1 if it was last told
--            that others are starved), 'c:' .. pid -> the channel that
--            reaches it, and 'o:' .. pid -> its owner (WithOwner), if any;
--            the last two written with the entry and deleted with it;
--            q, the pids of the starved entries in queue order (qat,
--            then pid), separated by spaces, x, the key's expiry (ms;
--            absent while pinned), and s, the kept sum of the shares
--            (share_entry.lua), for share_give.lua and share_take.lua.
-- ARGV: 1 configured limit, 2 pid, 3 op (beat | leave | stats | setlimit),
--       4 demand (holders + waiters, in permits), 5 keep (the permits the
--       process may still have in use until it reads the reply), 6 in use,
--       7 lease ms, 8 new limit (setlimit), 9 rotation period ms, 10 the
--       callers queued locally, 11 need: the weight of the local head waiter
--       (0 if none), 12 the process's owner ('' for none), 13 its channel
--       ('' for none), 14 the version of its share that it has applied
--       (absent: any).
-- Idempotent per pid: a beat stores the process's share as an absolute
-- value computed from the others', never as an increment, so a retried
-- copy has the effect of one run. Invariant: the sum of the live shares
-- never exceeds the limit (a share grows only into free capacity, and
-- shrinks only to what the process says it may still have in use, and not
-- at all if units were handed to it since the version it has applied).
-- Free capacity goes first to the starved processes in arrival order
-- (HANDOFF), each told at once by a PUBLISH of "pid:share*2+c:ver" (c: 1
-- if some other process is starved); a process that becomes starved tells
-- the processes holding a share that have not been told yet, so that they
-- give back what they do not use. With nobody starved, the shares follow
-- max-min fair targets by demand.
-- Reply: {code, share, limit, target, epoch, hot, now_us, inuse, waiting,
--         my inuse, my waiting, ver, contended, soon}
--   code 1 ok, 2 the process had no entry (new, expired or lost) and was
--   given a new epoch; hot 1 when nobody is starved and the targets
--   rotate or a process with callers queued is below its target (everyone
--   then beats faster); inuse/waiting are fleet totals as
--   of the processes' last beats, then the caller's own entry's; ver the
--   version of its share; contended 1 if another process is starved;
--   soon, for a starved caller, the ms until the earliest lease of another
--   process holding a share ends (0 otherwise).
local S = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])

local pid, op = ARGV[2], ARGV[3]
local demand, keep, inuse = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local waiting, need = tonumber(ARGV[10]), tonumber(ARGV[11])
local ttl, rotate = tonumber(ARGV[7]), tonumber(ARGV[9])
local mychan, known = ARGV[13] or '', tonumber(ARGV[14] or '')

local function int(x) return string.format('%d', x) end

local all = redis.call('HGETALL', S)
local limit, epoch, pinned, V, qstr, sstr = nil, 0, false, nil, nil, nil
local procs, by, chans = {}, {}, {}
local dead = {}
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  if f == 'limit' then limit = tonumber(v)
  elseif f == 'epoch' then epoch = tonumber(v)
  elseif f == 'v' then V = tonumber(v)
  elseif f == 'pinned' then pinned = true
  elseif f == 'q' then qstr = v
  elseif f == 's' then sstr = v
  elseif string.sub(f, 1, 2) == 'c:' then chans[string.sub(f, 3)] = v
  elseif string.sub(f, 1, 2) == 'p:' then
    local n = {}
    for x in string.gmatch(v, '%d+') do n[#n + 1] = tonumber(x) end
    if n[6] and n[6] > now then
      local e = {pid = string.sub(f, 3), share = n[1], demand = n[2], inuse = n[3], waiting = n[4],
        need = n[5], exp = n[6], epoch = n[7], qat = n[8] or 0, ver = n[9] or 0, told = n[10] or 0}
      e.share0 = e.share
      procs[#procs + 1] = e
      by[e.pid] = e
    else
      -- its lease ended: its share is free again
      dead[#dead + 1] = f
      dead[#dead + 1] = 'o:' .. string.sub(f, 3)
      dead[#dead + 1] = 'c:' .. string.sub(f, 3)
    end
  end
end
if #dead > 0 then redis.call('HDEL', S, unpack(dead)) end
if not V then V = now_us end -- a hash made anew: see v above
if not limit then
  limit = tonumber(ARGV[1])
  redis.call('HSET', S, 'limit', limit)
end
if op == 'setlimit' then
  limit = tonumber(ARGV[8])
  redis.call('HSET', S, 'limit', limit, 'pinned', 1)
  pinned = true
end
local V0 = V
local function bump(e) V = V + 1; e.ver = V; e.dirty = true end

local me = by[pid]
local code = 1
if op == 'beat' then
  if not me then
    code = 2
    epoch = epoch + 1
    redis.call('HSET', S, 'epoch', epoch)
    if (ARGV[12] or '') ~= '' then redis.call('HSET', S, 'o:' .. pid, ARGV[12]) end
    me = {pid = pid, share = 0, share0 = -1, epoch = epoch, qat = 0, ver = 0, told = 0}
    procs[#procs + 1] = me
    by[pid] = me
  end
  if mychan ~= '' and chans[pid] ~= mychan then
    redis.call('HSET', S, 'c:' .. pid, mychan)
    chans[pid] = mychan
  end
  me.demand, me.inuse, me.waiting, me.need, me.exp = demand, inuse, waiting, need, now + ttl
  me.dirty = true
elseif op == 'leave' and me then
  redis.call('HDEL', S, 'p:' .. pid, 'o:' .. pid, 'c:' .. pid)
  by[pid] = nil
  for i, e in ipairs(procs) do
    if e == me then table.remove(procs, i) break end
  end
  me = nil
end

-- targets returns the max-min fair targets by demand (water-filling),
-- needed only while nobody is starved. Where integer shares cannot be
-- equal, the units left over go to the capped processes in pid order
-- starting from a position that moves every rotation period, so each gets
-- its turn.
local function targets()
  local target, rotating = {}, false
  local turn = math.floor(now / rotate)
  local function fill(list, rem)
    local sorted = {}
    for i, e in ipairs(list) do sorted[i] = e end
    table.sort(sorted, function(a, b)
      if a.demand ~= b.demand then return a.demand < b.demand end
      return a.pid < b.pid
    end)
    local k = #sorted
    for i, e in ipairs(sorted) do
      local fair = math.floor(rem / k)
      if e.demand <= fair then
        target[e.pid] = e.demand
        rem, k = rem - e.demand, k - 1
      else
        local capped = {}
        for j = i, #sorted do capped[#capped + 1] = sorted[j] end
        table.sort(capped, function(a, b) return a.pid < b.pid end)
        local base = math.floor(rem / k)
        local extra = rem - base * k
        local queued = 0
        for _, c in ipairs(capped) do
          if c.waiting > 0 then queued = queued + 1 end
        end
        -- the turns matter while two of them have callers queued
        if extra > 0 and queued > 1 then rotating = true end
        local off = turn % k
        for j, c in ipairs(capped) do
          target[c.pid] = base
          if (j - 1 - off) % k < extra then target[c.pid] = base + 1 end
        end
        return
      end
    end
  end
  fill(procs, limit)
  -- A process whose head waiter needs more than its fair target would wait
  -- as long as the others keep their demand: such processes take turns, one
  -- per rotation period, at a target of what the head needs, the others
  -- sharing the rest max-min fairly.
  local byPid = {}
  for i, e in ipairs(procs) do byPid[i] = e end
  table.sort(byPid, function(a, b) return a.pid < b.pid end)
  local h
  for j = 0, #byPid - 1 do
    local e = byPid[(turn + j) % #byPid + 1]
    if e.need > (target[e.pid] or 0) then h = e break end
  end
  if h then
    rotating = true
    local hn = math.min(h.need, limit)
    local rest = {}
    for _, e in ipairs(procs) do
      if e ~= h then rest[#rest + 1] = e end
    end
    fill(rest, limit - hn)
    target[h.pid] = hn
  end
  return target, rotating
end

-- The caller's share shrinks to what it may still have in use, unless
-- units were handed to it since the version it has applied (it may be
-- granting from them already).
local wasq = me and me.qat > 0
if me and op == 'beat' and (not known or me.ver <= known) then
  me.share = math.min(keep, me.share)
end
if me and me.need > me.share and me.qat == 0 then me.qat = now_us end
local sum = 0
for _, e in ipairs(procs) do sum = sum + e.share end
local got, free = HANDOFF(STARVED(procs), limit - sum, bump)
local starved = STARVED(procs)
-- While someone is starved, shares move by hand-off, not by target: the
-- caller's target is its share. Otherwise it grows towards its max-min
-- target, and keeps what serves its head waiter (it was handed so).
-- Hot (every process then beats faster, and the shares follow the
-- targets): nobody is starved (those are served by hand-off), and the
-- targets rotate, or a process with callers queued is below its target.
local mytarget, hot, tgt = 0, 0, nil
if me and #starved > 0 then
  mytarget = me.share
elseif me then
  local target, rotating = targets()
  tgt = target
  if rotating then hot = 1 end
  for _, e in ipairs(procs) do
    if e.waiting > 0 and (target[e.pid] or 0) > e.share then hot = 1 end
  end
  mytarget = target[pid] or 0
  if op == 'beat' and free > 0 and me.need > 0 then
    -- (only for callers that wait: a give-back keeps what it gave back)
    me.share = math.max(me.share, math.min(mytarget, me.share + free))
  end
  mytarget = math.max(mytarget, math.min(me.share, me.need))
end
local function others(e)
  for _, s in ipairs(starved) do
    if s ~= e then return 1 end
  end
  return 0
end

-- Notes: to each process that got units, and, when the caller has just
-- become starved, to each holder that was not told yet.
local notes = {}
for _, e in ipairs(got) do
  if e.need <= e.share then e.qat = 0 end
  if e ~= me then notes[#notes + 1] = e end
end
local mystarved = me and me.need > me.share
if me and not mystarved then me.qat = 0 end
if mystarved and not wasq then
  for _, e in ipairs(procs) do
    if e ~= me and e.share > 0 and e.told == 0 and not e.dirty then
      notes[#notes + 1] = e
    end
  end
end
-- Capacity free with nobody starved: tell each other process whose
-- callers wait and whose share is below its target, so that it beats and
-- takes its part now rather than at its next heartbeat (it grows only to
-- its target, so the notes do not go back and forth).
if #starved == 0 and (op == 'beat' or op == 'leave') then
  local held = 0
  for _, e in ipairs(procs) do held = held + e.share end
  if held < limit then
    local target = tgt or targets()
    local noted = {}
    for _, e in ipairs(notes) do noted[e] = true end
    for _, e in ipairs(procs) do
      if e ~= me and not noted[e] and e.waiting > 0 and (target[e.pid] or 0) > e.share then
        notes[#notes + 1] = e
      end
    end
  end
end
for _, e in ipairs(notes) do
  e.told = others(e)
  if e.ver <= V0 then bump(e) end -- newer than any reply it had
end
if me then
  if me.share ~= me.share0 then bump(me) end
  me.told = others(me)
end

-- Bounded memory: the key outlives the last lease by GRACE, unless pinned
-- (x, the expiry set, tells share_give.lua when to extend it).
local last = now
for _, e in ipairs(procs) do
  if e.exp > last then last = e.exp end
end

local inuse_all, waiting_all, sum_all = 0, 0, 0
local writes = {}
for _, e in ipairs(procs) do
  sum_all = sum_all + e.share
  inuse_all = inuse_all + e.inuse
  waiting_all = waiting_all + e.waiting
  if e.dirty then
    writes[#writes + 1] = 'p:' .. e.pid
    writes[#writes + 1] = int(e.share) .. ':' .. int(e.demand) .. ':' .. int(e.inuse) .. ':' .. int(e.waiting) ..
      ':' .. int(e.need) .. ':' .. int(e.exp) .. ':' .. int(e.epoch) .. ':' .. int(e.qat) .. ':' .. int(e.ver) .. ':' .. int(e.told)
  end
end
if V ~= V0 then
  writes[#writes + 1] = 'v'
  writes[#writes + 1] = int(V)
end
local qpids = {}
for i, e in ipairs(STARVED(procs)) do qpids[i] = e.pid end
local qnew = table.concat(qpids, ' ')
if qnew ~= qstr then
  writes[#writes + 1] = 'q'
  writes[#writes + 1] = qnew
end
local snew = SUM_ENC(V, sum_all)
if snew ~= sstr then
  writes[#writes + 1] = 's'
  writes[#writes + 1] = snew
end
if not pinned then
  writes[#writes + 1] = 'x'
  writes[#writes + 1] = int(last + GRACE)
end
if #writes > 0 then redis.call('HSET', S, unpack(writes)) end
for _, e in ipairs(notes) do SHARE_NOTE(chans[e.pid], e) end

local myshare, myepoch, myinuse, mywaiting, myver, mytold = 0, 0, 0, 0, 0, 0
if me then
  myshare, myepoch, myinuse, mywaiting, myver, mytold = me.share, me.epoch, me.inuse, me.waiting, me.ver, me.told
end

if pinned then
  redis.call('PERSIST', S)
else
  redis.call('PEXPIREAT', S, last + GRACE)
end
-- A starved caller beats again when the earliest lease of another process
-- holding a share ends (soon, ms from now; 0: none), for the share of a
-- process that died comes back then.
local soon = 0
if me and me.need > me.share then
  for _, e in ipairs(procs) do
    if e ~= me and e.share > 0 and (soon == 0 or e.exp - now < soon) then soon = math.max(1, e.exp - now) end
  end
end
-- free: the capacity that no share holds, which only a beat can grow a
-- share from.
return {code, myshare, limit, mytarget, myepoch, hot, now_us, inuse_all, waiting_all, myinuse, mywaiting, myver, mytold, soon,
  limit - sum_all}
