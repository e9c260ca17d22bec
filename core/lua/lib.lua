-- Shared prelude of every distsem script. KEYS (all under one hash tag):
--   1 M   hash: limit, used, tok (last fencing token), qseq (queue order),
--             pinned, exp/last/min (key expiry bookkeeping)
--   2 H   zset: holder id -> lease expiry (ms, Redis TIME)
--   3 HI  hash: holder id -> "weight:token:grant_us"
--   4 Q   zset: waiter id -> arrival sequence (FIFO order)
--   5 QI  hash: waiter id -> "weight:ttl_ms:check:channel", or a tombstone
--             "x<code>" for an id that was released or left the queue
--   6 QE  zset: waiter id or tombstone -> expiry (ms)
-- Every script is idempotent per id: running it twice (a client retry, or a
-- copy delivered late) has the effect of running it once. used is kept equal
-- to the sum of the holders' weights: every change of HI changes it by the
-- weight added or removed, and derive() recomputes it from HI (heartbeat,
-- stats, set limit, and an acquire that does not fit), so a count that went
-- wrong (keys expired apart) is repaired.
-- ARGV[1] is the caller's configured limit, ARGV[2] its notification channel.
local M, H, HI, Q, QI, QE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local mychan = ARGV[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local GRACE = 60000 -- keys outlive the last lease or waiter by this much

-- The limit stored in Redis wins; the first user stores its own.
local m = redis.call('HMGET', M, 'limit', 'used', 'tok', 'exp', 'last', 'min')
local limit = tonumber(m[1])
local used = tonumber(m[2]) or 0
local used0 = used
local exp = tonumber(m[4]) or 0   -- until when (ms) every key is set to live
local last = tonumber(m[5]) or 0  -- latest lease or waiter end ever set (ms)
local last0 = last
-- min is a lower bound of the earliest lease or waiter end: nothing can have
-- expired before it, so purge() does nothing until then.
local minexp = tonumber(m[6]) or 0
local min0 = minexp
-- fresh: keys may lack their expiry, so finish() must set every key's.
-- created: keys that this script created; finish() gives them the expiry
-- the others already have (no re-creation work for the rest).
local fresh = false
local created = {}
local function new_keys(...)
  for _, k in ipairs({...}) do created[#created + 1] = k end
end
if not limit then
  limit = tonumber(ARGV[1])
  redis.call('HSET', M, 'limit', limit)
  fresh = true
end
-- A fencing token is the server time in microseconds at the grant, or the
-- last token + 1 if that is larger. Tokens of one semaphore so increase
-- strictly, also after its idle keys expired or a failover lost the last
-- token written, as long as the servers' clocks agree to better than that.
local tok = tonumber(m[3]) or 0
local tok0 = tok

-- Lua 5.1 prints large numbers in exponent form: format integers exactly.
local function int(x) return string.format('%d', x) end

local notes = {}
-- note records a grant (or a rejection) for waiter id of channel ch; at is
-- the grant's time (µs), now unless given.
local function note(ch, id, tok, at)
  local l = notes[ch]
  if not l then l = {}; notes[ch] = l end
  l[#l + 1] = id .. ':' .. int(tok) .. ':' .. int(at or now_us)
end

-- A waiter stays queued for 2/3 of its lease TTL after each heartbeat (sent
-- every TTL/3), so a dead process's waiters always leave the queue before
-- the leases renewed by its last heartbeat end.
-- note_end records a new lease or waiter end in last and min.
local function note_end(at)
  if at > last then last = at end
  if at < minexp then minexp = at end
  return at
end

local function alive(ttl) return note_end(now + math.floor(ttl * 2 / 3)) end

-- lease(ttl) is the end of a lease that starts now.
local function lease(ttl) return note_end(now + ttl) end

local function weight_of(info)
  return tonumber(string.match(info, '^(%d+):'))
end

-- hmget returns HMGET key ids... for any number of ids (in chunks, as
-- unpack is bounded).
local function hmget(key, ids)
  local out = {}
  for i = 1, #ids, 1000 do
    local v = redis.call('HMGET', key, unpack(ids, i, math.min(i + 999, #ids)))
    for j = 1, #v do out[#out + 1] = v[j] end
  end
  return out
end

-- used recomputed from the holders themselves (with only the commands of
-- the documented minimal ACL).
local function derive()
  local s = 0
  local ids = redis.call('ZRANGE', H, 0, -1)
  local v = hmget(HI, ids)
  for i = 1, #ids do
    if v[i] then s = s + weight_of(v[i]) end
  end
  used = s
end

-- A tombstone (in QI and QE, never in Q) remembers for ttl ms (the client
-- keeps it at most a lease, and longer than a late copy can come) that id was
-- released (code 1), left the queue (2) or was unknown (0), so that a late
-- copy of its acquire is refused and a repeated release answers the same.
local function tombstone(id, code, ttl)
  if redis.call('EXISTS', QE) == 0 then new_keys(QI, QE) end
  redis.call('HSET', QI, id, 'x' .. code)
  redis.call('ZADD', QE, note_end(now + ttl), id)
end

local function is_tomb(info) return string.sub(info, 1, 1) == 'x' end

-- Drop expired holders (their permits come back) and dead waiters, then
-- find the new earliest end.
local function purge()
  if now < minexp then return end
  local gone = redis.call('ZRANGEBYSCORE', H, '-inf', now)
  if #gone > 0 then
    for _, id in ipairs(gone) do
      local info = redis.call('HGET', HI, id)
      if info then used = used - weight_of(info) end
      redis.call('HDEL', HI, id)
    end
    redis.call('ZREMRANGEBYSCORE', H, '-inf', now)
  end
  local dead = redis.call('ZRANGEBYSCORE', QE, '-inf', now)
  if #dead > 0 then
    for _, id in ipairs(dead) do
      redis.call('ZREM', Q, id)
      redis.call('HDEL', QI, id)
    end
    redis.call('ZREMRANGEBYSCORE', QE, '-inf', now)
  end
  if used < 0 then used = 0 end
  minexp = now + 3600000
  local h = redis.call('ZRANGE', H, 0, 0, 'WITHSCORES')
  if #h > 0 then minexp = math.min(minexp, tonumber(h[2])) end
  local q = redis.call('ZRANGE', QE, 0, 0, 'WITHSCORES')
  if #q > 0 then minexp = math.min(minexp, tonumber(q[2])) end
end

local function hold(id, w, ttl)
  if redis.call('EXISTS', H) == 0 then new_keys(H, HI) end
  used = used + w
  tok = math.max(tok + 1, now_us)
  redis.call('ZADD', H, lease(ttl), id)
  redis.call('HSET', HI, id, int(w) .. ':' .. int(tok) .. ':' .. int(now_us))
  return tok
end

-- On Cluster a process's channel carries the semaphore's {hash tag}: it is a
-- shard channel of this slot, and SPUBLISH counts the subscribers of this
-- master (PUBLISH would count those of this node, not where they listen).
local function is_shard(ch) return string.find(ch, '{', 1, true) ~= nil end
local function publish(ch, msg)
  if is_shard(ch) then return redis.call('SPUBLISH', ch, msg) end
  return redis.call('PUBLISH', ch, msg)
end

-- Grant to the head of the queue while it fits (strict FIFO: a head that
-- does not fit blocks everyone behind it). A head heavier than the limit
-- can never fit and is told so with token -1.
-- It returns true if the queue is then empty.
local function grant()
  while true do
    local head = redis.call('ZRANGE', Q, 0, 0)
    if #head == 0 then return true end
    local id = head[1]
    local info = redis.call('HGET', QI, id)
    local w, ttl, check, ch
    if info then
      w, ttl, check, ch = string.match(info, '^(%d+):(%d+):(%d):(.*)$')
      w = tonumber(w)
      if w and w <= limit and used + w > limit then return false end
    end
    redis.call('ZREM', Q, id)
    redis.call('HDEL', QI, id)
    redis.call('ZREM', QE, id)
    if not w then
      -- no info (expired apart) or a tombstone: nothing to grant
    elseif w > limit then
      note(ch, id, -1)
    elseif ch == mychan or check == '0' then
      note(ch, id, hold(id, w, tonumber(ttl)))
    elseif is_shard(ch) then
      -- A shard message also reaches the subscribers on the shard's
      -- replicas, which SPUBLISH does not count: count this master's
      -- subscribers, and send the grant (finish) only once it is held.
      if redis.call('PUBSUB', 'SHARDNUMSUB', ch)[2] > 0 then
        note(ch, id, hold(id, w, tonumber(ttl)))
      end
    else
      -- Publish first: no subscriber means the waiter's process is gone
      -- (its connection closed), so skip the waiter instead of granting a
      -- permit that nobody will use for a whole lease.
      local t = math.max(tok + 1, now_us)
      if redis.call('PUBLISH', ch, id .. ':' .. int(t) .. ':' .. int(now_us)) > 0 then
        hold(id, w, tonumber(ttl))
      end
    end
  end
end

-- Milliseconds until the earliest holder lease ends, or -1 if none.
local function next_expiry()
  local h = redis.call('ZRANGE', H, 0, 0, 'WITHSCORES')
  if #h == 0 then return -1 end
  return tonumber(h[2]) - now
end

-- Store what changed, make every key outlive the last lease or waiter by
-- GRACE/2 to GRACE (refreshed only when that margin runs low, or when the
-- semaphore is new; a key this script created gets the current expiry),
-- publish the grants of other processes and return those of
-- the caller's process.
local function finish()
  if fresh or exp < last + GRACE / 2 then
    exp = math.max(last, now) + GRACE
    for _, k in ipairs({H, HI, Q, QI, QE}) do redis.call('PEXPIREAT', k, exp) end
    if redis.call('HGET', M, 'pinned') then
      redis.call('PERSIST', M)
    else
      redis.call('PEXPIREAT', M, exp)
    end
    redis.call('HSET', M, 'used', used, 'exp', exp, 'last', last, 'min', minexp, 'tok', int(tok))
  else
    for _, k in ipairs(created) do redis.call('PEXPIREAT', k, exp) end
    if used ~= used0 or last ~= last0 or minexp ~= min0 or tok ~= tok0 then
      redis.call('HSET', M, 'used', used, 'last', last, 'min', minexp, 'tok', int(tok))
    end
  end
  local mine = {}
  for ch, l in pairs(notes) do
    if ch == mychan then
      mine = l
    else
      publish(ch, table.concat(l, ','))
    end
  end
  return mine
end
