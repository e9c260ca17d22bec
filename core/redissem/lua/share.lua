-- Leased shares (WithLeasedShares): every decision about the shares of one
-- semaphore. core/leased_script.go puts const.lua first (for GRACE); it
-- does not use lib.lua nor the keys of the default mode. KEYS (under the
-- semaphore's hash tag):
--   1 S  hash: limit, epoch (last share epoch issued), pinned (SetLimit),
--            and per process 'p:' .. pid ->
--            "share:demand:inuse:waiting:need:exp:epoch"
--            and 'o:' .. pid -> the process's owner (WithOwner), if any,
--            written with the entry and deleted with it (inspect_shares.lua)
-- ARGV: 1 configured limit, 2 pid, 3 op (beat | leave | stats | setlimit),
--       4 demand (holders + waiters, in permits), 5 keep (the permits the
--       process may still have in use: max(local limit, in use)), 6 in use,
--       7 lease ms, 8 new limit (setlimit), 9 rotation period ms, 10 the
--       callers queued locally, 11 need: the weight of the local head waiter
--       (0 if none), 12 the process's owner ('' for none).
-- Idempotent per pid: a beat stores the process's share as an absolute
-- value computed from the others', never as an increment, so a retried
-- copy has the effect of one run. Invariant: the sum of the live shares
-- never exceeds the limit (a share only grows into free capacity, and only
-- shrinks to what the process says it still has in use).
-- Reply: {code, share, limit, target, epoch, hot, now_us, inuse, waiting,
--         my inuse, my waiting}
--   code 1 ok, 2 the process had no entry (new, expired or lost) and was
--   given a new epoch; hot 1 when some live process wants more than its
--   share (everyone then beats faster); inuse/waiting are fleet totals as
--   of the processes' last beats, the last two the caller's own entry's.
local S = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])

local pid, op = ARGV[2], ARGV[3]
local demand, keep, inuse = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local waiting, need = tonumber(ARGV[10]), tonumber(ARGV[11])
local ttl, rotate = tonumber(ARGV[7]), tonumber(ARGV[9])

local function int(x) return string.format('%d', x) end

local all = redis.call('HGETALL', S)
local limit, epoch, pinned = nil, 0, false
local procs, by = {}, {}
local dead = {}
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  if f == 'limit' then limit = tonumber(v)
  elseif f == 'epoch' then epoch = tonumber(v)
  elseif f == 'pinned' then pinned = true
  elseif string.sub(f, 1, 2) == 'p:' then
    local sh, de, iu, wa, ne, ex, ep = string.match(v, '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$')
    ex = tonumber(ex)
    if ex and ex > now then
      local e = {pid = string.sub(f, 3), share = tonumber(sh), demand = tonumber(de),
        inuse = tonumber(iu), waiting = tonumber(wa), need = tonumber(ne), exp = ex, epoch = tonumber(ep)}
      procs[#procs + 1] = e
      by[e.pid] = e
    else
      dead[#dead + 1] = f -- its lease ended: its share is free again
      dead[#dead + 1] = 'o:' .. string.sub(f, 3)
    end
  end
end
if #dead > 0 then redis.call('HDEL', S, unpack(dead)) end
if not limit then
  limit = tonumber(ARGV[1])
  redis.call('HSET', S, 'limit', limit)
end
if op == 'setlimit' then
  limit = tonumber(ARGV[8])
  redis.call('HSET', S, 'limit', limit, 'pinned', 1)
  pinned = true
end

local me = by[pid]
local code = 1
if op == 'beat' then
  if not me then
    code = 2
    epoch = epoch + 1
    redis.call('HSET', S, 'epoch', epoch)
    if (ARGV[12] or '') ~= '' then redis.call('HSET', S, 'o:' .. pid, ARGV[12]) end
    me = {pid = pid, share = 0, epoch = epoch}
    procs[#procs + 1] = me
    by[pid] = me
  end
  me.demand, me.inuse, me.waiting, me.need, me.exp = demand, inuse, waiting, need, now + ttl
elseif op == 'leave' and me then
  redis.call('HDEL', S, 'p:' .. pid, 'o:' .. pid)
  by[pid] = nil
  for i, e in ipairs(procs) do
    if e == me then table.remove(procs, i) break end
  end
  me = nil
end

-- Max-min fair targets by demand (water-filling). Where integer shares
-- cannot be equal, the units left over go to the capped processes in pid
-- order starting from a position that moves every rotation period, so each
-- gets its turn.
local target = {}
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
-- The turn goes to the first such process at or after a position (in pid
-- order, over all processes) that moves every period, so each waits at
-- most one period per process.
local byPid = {}
for i, e in ipairs(procs) do byPid[i] = e end
table.sort(byPid, function(a, b) return a.pid < b.pid end)
local h
for j = 0, #byPid - 1 do
  local e = byPid[(turn + j) % #byPid + 1]
  if e.need > (target[e.pid] or 0) then h = e break end
end
if h then
  local hn = math.min(h.need, limit)
  local rest = {}
  for _, e in ipairs(procs) do
    if e ~= h then rest[#rest + 1] = e end
  end
  fill(rest, limit - hn)
  target[h.pid] = hn
end

local sum, hot, inuse_all, waiting_all = 0, 0, 0, 0
for _, e in ipairs(procs) do
  if e ~= me then sum = sum + e.share end
  if e.demand > e.share then hot = 1 end
  inuse_all = inuse_all + e.inuse
  waiting_all = waiting_all + e.waiting
end

local myshare, mytarget, myepoch, myinuse, mywaiting = 0, 0, 0, 0, 0
if me then
  mytarget = target[pid] or 0
  if op == 'beat' then
    -- A share grows only into free capacity, and shrinks only to what
    -- the process may still have in use.
    local kept = math.min(keep, me.share)
    local free = limit - sum
    myshare = math.max(kept, math.min(mytarget, free))
    me.share = myshare
    if me.demand > myshare then hot = 1 end
    redis.call('HSET', S, 'p:' .. pid,
      int(myshare) .. ':' .. int(me.demand) .. ':' .. int(me.inuse) .. ':' .. int(me.waiting) .. ':' .. int(me.need) .. ':' .. int(me.exp) .. ':' .. int(me.epoch))
  else
    myshare = me.share
  end
  myepoch, myinuse, mywaiting = me.epoch, me.inuse, me.waiting
end

-- Bounded memory: the key outlives the last lease by GRACE, unless pinned.
local last = now
for _, e in ipairs(procs) do
  if e.exp > last then last = e.exp end
end
if pinned then
  redis.call('PERSIST', S)
else
  redis.call('PEXPIREAT', S, last + GRACE)
end
return {code, myshare, limit, mytarget, myepoch, hot, now_us, inuse_all, waiting_all, myinuse, mywaiting}
