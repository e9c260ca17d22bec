-- Leased shares: a take of free capacity, without reading the whole shares
-- hash. A process whose head waiter needs more than its share asks for
-- the difference; while nobody is queued and the kept sum of the shares
-- (share_entry.lua) shows that much free, this script gives it, as
-- share.lua's HANDOFF would, reading only the caller's entry and the
-- hash's counters; a process with no entry registers so (epoch 0), as
-- share.lua would. Whenever that does not suffice to decide (the entry
-- missing, expired or of another epoch, units handed to it since the
-- version it applied, a process queued, the kept sum not current, or not
-- enough free), it changes nothing and replies {0}: the caller then runs
-- share.lua, which queues it if it must wait. It takes only what the head
-- waiter lacks: growing towards the max-min target by demand is share.lua's
-- (hot asks for that beat).
-- leased_script.go puts const.lua, share_queue.lua and share_entry.lua first.
-- KEYS: 1 S, share.lua's hash.
-- ARGV: 1 pid, 2 demand, 3 keep, 4 in use, 5 the callers queued locally,
--       6 need, 7 lease ms, 8 the version of its share that it has
--       applied, 9 the epoch of its entry (0: it has none, and registers),
--       10 its owner ('' for none), 11 its channel ('' for none), 12
--       (ignored).
-- Idempotent per pid: the share becomes need, an absolute value; a retried
-- copy finds its entry's version newer than the one applied, or (a
-- registration) finds its entry, and replies {0}.
-- Reply: share.lua's (code 2 for a registration, with the new epoch), with
-- the fleet totals and soon 0, target the share, and hot 1 if the process
-- wants more than its share and capacity is free.
local S = KEYS[1]
local pid = ARGV[1]
local demand, keep, inuse = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local waiting, need, ttl = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local known, epoch = tonumber(ARGV[8]), tonumber(ARGV[9])
local owner, chan = ARGV[10], ARGV[11]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])

local got = redis.call('HMGET', S, 'p:' .. pid, 'v', 'q', 'limit', 'pinned', 'x', 's', 'epoch')
local me, code = nil, 1
if epoch == 0 then
  if got[1] then return {0} end -- an entry, even one whose lease ended: share.lua
  code = 2
  me = {pid = pid, share = 0, epoch = tonumber(got[8] or '0') + 1, qat = 0, ver = 0, told = 0}
else
  me = ENTRY_READ(pid, got[1], now)
  if not me or me.epoch ~= epoch or me.ver > known or me.qat > 0 then return {0} end
end
if not got[2] or got[3] ~= '' or not got[4] then return {0} end -- someone is queued
if not got[5] and not got[6] then return {0} end -- the expiry set is not known
local V, limit = tonumber(got[2]), tonumber(got[4])
local sum = SUM_READ(got[7], V)
if not sum then return {0} end

-- As share.lua: the share first shrinks to what the process may still
-- have in use; then the head waiter takes what it lacks from free capacity.
local kept = math.min(keep, me.share)
sum = sum - (me.share - kept)
if need <= kept or sum + (need - kept) > limit then return {0} end
me.share = need
sum = sum + (need - kept)
me.demand, me.inuse, me.waiting, me.need, me.exp = demand, inuse, waiting, need, now + ttl
V = V + 1
me.ver, me.told = V, 0
local writes = {'p:' .. pid, ENTRY_ENC(me), 'v', string.format('%d', V), 's', SUM_ENC(V, sum)}
if code == 2 then
  writes[#writes + 1] = 'epoch'
  writes[#writes + 1] = string.format('%d', me.epoch)
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
local hot = 0
if demand > me.share and sum < limit then hot = 1 end
return {code, me.share, limit, me.share, me.epoch, hot, now_us, 0, 0, me.inuse, me.waiting, me.ver, 0, 0, limit - sum}
