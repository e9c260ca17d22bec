-- Shared prelude of every distsem script (core/scripts.go prepends it).
-- KEYS, all under one hash tag:
--   1 S  hash: the state: limit, used and hn (the holders' weights and
--        number), tok (last fencing token), qseq (queue order), exp, minl,
--        mine (expiry bookkeeping), and per id the field '#'..id:
--          'h<weight>:<token>:<grant_us>'       a holder
--          'q<weight>:<ttl_ms>:<check>:<chan>'  a queued waiter
--          'x<code>'  a tombstone: id was unknown (0), released (1), left
--                     the queue (2), adopted away (3), released by id (4)
--   2 L  zset: holder id -> lease end (ms, Redis TIME)
--   3 W  zset: waiter id -> arrival sequence (FIFO order)
--   4 E  zset: waiter id or tombstone -> end (ms)
--   5 P  string: the limit pinned by SetLimit (never expires)
-- Invariants: L holds exactly the ids whose field is a holder, W those that
-- are waiters, E the waiters and tombstones. L, W and E also hold a
-- sentinel member '' scored 2^53, so they never empty: they are created,
-- and given their expiry, with the semaphore, not on the busy path. S, L,
-- W and E share one expiry, extended only when the latest end comes within
-- GRACE/2 of it.
-- Every script is idempotent per id: running it twice (a client retry, or a
-- copy delivered late) has the effect of running it once. used is the sum
-- of the holders' weights: every change of a holder changes it by the weight
-- added or removed, and derive() recomputes it from the holders (stats, set
-- limit, an acquire that does not fit, and a heartbeat that finds the
-- number of holders changed behind its back), so a count that went wrong
-- (keys lost apart) is repaired.
-- Cost: a script's time is its redis.call()s (about 1 µs each) and its own
-- Lua work, of which making this prelude's functions (closures, about 0.1 µs
-- each) was the largest part. So writes to S are collected and sent in one
-- HSET (and one HDEL) at the end; the functions share their state through
-- two tables, V (values) and F (functions), instead of capturing many locals;
-- and only the functions of the busy path are made on every run: the others
-- are made by cold() when a script first asks F for one of them.
-- ARGV[1] is the caller's configured limit, ARGV[2] its notification channel.
local t = redis.call('TIME')
local V = {
  S = KEYS[1], L = KEYS[2], W = KEYS[3], E = KEYS[4], P = KEYS[5],
  mychan = ARGV[2],
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2]),
  fresh = false, latest = 0, pend = {}, order = {},
  -- Every field that start() sets, here too: a table that grows rehashes.
  limit = 0, used = 0, tok = 0, exp = 0, minl = 0, mine = 0, qseq = 0, hn = 0,
  cache = false, o = false, notes = false, stop = false,
}
local F = {}
local GRACE = 60000   -- keys outlive the last lease or waiter by this much
local SLACK = 100     -- dead waiters and tombstones go at most SLACK ms late
local SENTINEL = 9007199254740992 -- 2^53, above every end and sequence
local SENTINEL_S = '9007199254740992'

-- The busy path: start, get, put, purge, hold, tombstone, grant, finish.

-- start reads the state, and the field of id if given (of id2 with get());
-- a semaphore without state is created with the pinned limit, or the
-- caller's.
function F.start(id, id2)
  local m
  if id then
    m = redis.call('HMGET', V.S, 'limit', 'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn', '#' .. id)
    V.cache = {['#' .. id] = m[9] or false}
  else
    m = redis.call('HMGET', V.S, 'limit', 'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn')
    V.cache = {}
  end
  local o = {}
  for i = 2, 8 do o[i] = tonumber(m[i]) or 0 end
  V.o = o -- as read: finish() writes back what changed
  V.limit, V.used, V.tok, V.exp, V.minl, V.mine, V.qseq, V.hn =
    tonumber(m[1]), o[2], o[3], o[4], o[5], o[6], o[7], o[8]
  if not V.limit then
    V.limit = tonumber(redis.call('GET', V.P)) or tonumber(ARGV[1])
    F.put('limit', V.limit)
    V.fresh = true
    -- Leftovers of keys that lost their state are not trusted.
    redis.call('DEL', V.L, V.W, V.E)
  end
end

-- get returns S's field f as this script left it (nil if absent).
function F.get(f)
  local v = V.pend[f]
  if v == nil then
    v = V.cache[f]
    if v == nil then v = redis.call('HGET', V.S, f) or false; V.cache[f] = v end
  end
  return v or nil
end
-- put sets S's field f (v false: deletes it) at the end of the script.
function F.put(f, v)
  if V.pend[f] == nil then V.order[#V.order + 1] = f end
  V.pend[f] = v
end

-- purge drops expired holders (their permits come back) as soon as their
-- lease ends, and dead waiters and old tombstones at most SLACK ms late.
function F.purge()
  if V.now >= V.minl or V.now >= V.mine then F.reap() end
end

function F.hold(id, w, ttl)
  local now = V.now
  V.used, V.hn = V.used + w, V.hn + 1
  V.tok = math.max(V.tok + 1, V.now_us)
  local at = now + ttl
  if at > V.latest then V.latest = at end
  if at < V.minl then V.minl = at end
  redis.call('ZADD', V.L, at, id)
  F.put('#' .. id, string.format('h%d:%d:%d', w, V.tok, V.now_us))
  return V.tok
end

-- tombstone remembers for ttl ms (longer than a late copy can come) that id
-- was released, left the queue or was unknown (code), so that a late copy
-- of its acquire is refused and a repeated release answers the same.
function F.tombstone(id, code, ttl)
  local at = V.now + ttl
  if at > V.latest then V.latest = at end
  if at < V.mine then V.mine = at end
  F.put('#' .. id, 'x' .. code)
  redis.call('ZADD', V.E, at, id)
end

-- Grant to the head of the queue while it fits (strict FIFO: a head that
-- does not fit blocks everyone behind it). A head heavier than the limit
-- can never fit and is told so with token -1.
-- It returns true if the queue is then empty, false if it is not or if
-- every permit is in use (the queue is then not looked at).
function F.grant()
  while V.used < V.limit do
    local head = redis.call('ZRANGE', V.W, 0, 0)
    if #head == 0 or head[1] == '' then return true end
    F.grant_head(head[1])
    if V.stop then return false end
  end
  return false
end

-- finish stores what changed in one HSET and one HDEL, extends the keys'
-- expiry when needed, publishes the grants of other processes and returns
-- those of the caller's process.
function F.finish()
  local refresh = V.fresh or V.latest + GRACE / 2 > V.exp
  if refresh then
    V.exp = math.max(V.latest, V.now) + GRACE
    F.put('exp', V.exp)
  end
  local set, del, order, pend, o = {}, nil, V.order, V.pend, V.o
  if V.used ~= o[2] then set[#set + 1] = 'used'; set[#set + 1] = V.used end
  if V.tok ~= o[3] then set[#set + 1] = 'tok'; set[#set + 1] = string.format('%d', V.tok) end
  if V.minl ~= o[5] then set[#set + 1] = 'minl'; set[#set + 1] = V.minl end
  if V.mine ~= o[6] then set[#set + 1] = 'mine'; set[#set + 1] = V.mine end
  if V.qseq ~= o[7] then set[#set + 1] = 'qseq'; set[#set + 1] = V.qseq end
  if V.hn ~= o[8] then set[#set + 1] = 'hn'; set[#set + 1] = V.hn end
  for i = 1, #order do
    local f = order[i]
    local v = pend[f]
    if v then
      set[#set + 1] = f; set[#set + 1] = v
    else
      del = del or {}
      del[#del + 1] = f
    end
  end
  if #set > 1000 then F.chunked('HSET', V.S, set)
  elseif #set > 0 then redis.call('HSET', V.S, unpack(set)) end
  if del then F.chunked('HDEL', V.S, del) end
  if refresh then F.expire() end
  if not V.notes then return {} end
  return F.publish()
end

-- The rest is made on first use.
local function cold()

-- Lua 5.1 prints large numbers in exponent form: format integers exactly.
function F.int(x) return string.format('%d', x) end

-- chunked runs cmd key args..., in chunks (unpack is bounded).
function F.chunked(cmd, key, args)
  for i = 1, #args, 1000 do redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args))) end
end

-- expire extends the expiry of every key to V.exp, and (re)creates the
-- sentinels: a zset lost apart from S gets one again.
function F.expire()
  for _, k in ipairs({V.L, V.W, V.E}) do redis.call('ZADD', k, 'NX', SENTINEL_S, '') end
  for _, k in ipairs({V.S, V.L, V.W, V.E}) do redis.call('PEXPIREAT', k, V.exp) end
end

-- publish sends the notes of other processes and returns the caller's.
function F.publish()
  local mine = {}
  for ch, l in pairs(V.notes) do
    if ch == V.mychan then
      mine = l
    else
      local msg = table.concat(l, ',')
      if F.is_shard(ch) then redis.call('SPUBLISH', ch, msg) else redis.call('PUBLISH', ch, msg) end
    end
  end
  return mine
end

-- note records a grant (or a rejection) for waiter id of channel ch; at is
-- the grant's time (µs), now unless given.
function F.note(ch, id, tk, at)
  V.notes = V.notes or {}
  local l = V.notes[ch]
  if not l then l = {}; V.notes[ch] = l end
  l[#l + 1] = id .. ':' .. F.int(tk) .. ':' .. F.int(at or V.now_us)
end

-- lease_end and e_end record a new lease end, or a new waiter or tombstone
-- end: minl and mine are lower bounds of the earliest end in L and in E
-- (purge() does nothing to them before), and an end that comes within
-- GRACE/2 of the keys' expiry makes finish() extend it.
function F.lease_end(at)
  if at > V.latest then V.latest = at end
  if at < V.minl then V.minl = at end
  return at
end
function F.e_end(at)
  if at > V.latest then V.latest = at end
  if at < V.mine then V.mine = at end
  return at
end

-- A waiter stays queued for 2/3 of its lease TTL after each heartbeat (sent
-- every TTL/3), so a dead process's waiters always leave the queue before
-- the leases renewed by its last heartbeat end.
function F.alive(ttl) return F.e_end(V.now + math.floor(ttl * 2 / 3)) end

function F.weight_of(info) return tonumber(string.match(info, '^h(%d+):')) end

function F.is_tomb(v) return v and string.sub(v, 1, 1) == 'x' end

-- hmget returns S's fields '#'..id for ids (in chunks: unpack is bounded),
-- as this script left them.
function F.hmget(ids)
  local out = {}
  for i = 1, #ids, 1000 do
    local f = {}
    for j = i, math.min(i + 999, #ids) do f[#f + 1] = '#' .. ids[j] end
    local v = redis.call('HMGET', V.S, unpack(f))
    for j = 1, #f do
      local p = V.pend[f[j]]
      if p == nil then out[#out + 1] = v[j] or false else out[#out + 1] = p end
    end
  end
  return out
end

-- derive recomputes used and hn from the holders themselves.
function F.derive()
  local s, n = 0, 0
  local ids = redis.call('ZRANGE', V.L, 0, -1)
  local v = F.hmget(ids)
  for i = 1, #ids do
    local w = v[i] and F.weight_of(v[i])
    if w then s, n = s + w, n + 1 end
  end
  V.used, V.hn = s, n
end

-- earliest returns the earliest end in zset k other than the sentinel.
function F.earliest(k)
  local h = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
  if #h == 0 or h[1] == '' then return nil end
  return tonumber(h[2])
end

-- reap is purge()'s work, then it finds the new lower bounds.
function F.reap()
  local now = V.now
  if now >= V.minl then
    local gone = redis.call('ZRANGEBYSCORE', V.L, '-inf', now)
    if #gone > 0 then
      local v = F.hmget(gone)
      for i = 1, #gone do
        local w = v[i] and F.weight_of(v[i])
        if w then V.used, V.hn = V.used - w, V.hn - 1 end
        F.put('#' .. gone[i], false)
      end
      redis.call('ZREMRANGEBYSCORE', V.L, '-inf', now)
    end
    V.minl = F.earliest(V.L) or SENTINEL
  end
  if now >= V.mine then
    local dead = redis.call('ZRANGEBYSCORE', V.E, '-inf', now)
    if #dead > 0 then
      F.chunked('ZREM', V.W, dead)
      for i = 1, #dead do F.put('#' .. dead[i], false) end
      redis.call('ZREMRANGEBYSCORE', V.E, '-inf', now)
    end
    V.mine = math.max(F.earliest(V.E) or SENTINEL, now + SLACK)
  end
  if V.used < 0 or V.hn < 0 then F.derive() end
end

-- dequeue takes waiter id out of the queue (its field is left to the caller).
function F.dequeue(id)
  redis.call('ZREM', V.W, id)
  redis.call('ZREM', V.E, id)
end

-- grant_head grants to waiter id at the head of the queue, or skips it;
-- V.stop is set if it does not fit (grant() stops there).
function F.grant_head(id)
  local w, ttl, check, ch = string.match(F.get('#' .. id) or '', '^q(%d+):(%d+):(%d):(.*)$')
  w = tonumber(w)
  if w and w <= V.limit and V.used + w > V.limit then V.stop = true; return end
  F.dequeue(id)
  if not w then
    F.put('#' .. id, false) -- no info (lost apart): nothing to grant
  elseif w > V.limit then
    F.put('#' .. id, false)
    F.note(ch, id, -1)
  elseif ch == V.mychan or check == '0' then
    F.note(ch, id, F.hold(id, w, tonumber(ttl)))
  elseif F.listeners(ch) > 0 then
    F.note(ch, id, F.hold(id, w, tonumber(ttl)))
  else
    -- Nobody listens: the waiter's process is gone (its connection
    -- closed), so skip the waiter instead of granting a permit that nobody
    -- will use for a whole lease. Counted before anything is sent: a
    -- subscription left on a replica (a demoted master) still receives
    -- what the master publishes, but is not counted here.
    F.put('#' .. id, false)
  end
end

-- is_shard reports whether ch is a Cluster shard channel (it carries the
-- semaphore's hash tag, so it lives in the semaphore's slot).
function F.is_shard(ch) return string.find(ch, '{', 1, true) ~= nil end

-- listeners returns how many clients of this server listen on ch.
function F.listeners(ch)
  if F.is_shard(ch) then return redis.call('PUBSUB', 'SHARDNUMSUB', ch)[2] end
  return redis.call('PUBSUB', 'NUMSUB', ch)[2]
end

-- Milliseconds until purge() would reap the earliest lease, or -1 if none.
function F.next_expiry()
  local e = F.earliest(V.L)
  if not e then return -1 end
  return e - V.now
end

end -- cold
setmetatable(F, {__index = function(f, k) cold(); setmetatable(f, nil); return rawget(f, k) end})
