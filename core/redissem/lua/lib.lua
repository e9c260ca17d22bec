-- Shared prelude of every distsem script (core/scripts.go prepends it, after
-- const.lua and head.lua; the acquire and release scripts then read their
-- state (state.lua) and run their fast paths, fast_*.lua, which make the
-- same writes as this code in the common cases, without it). The
-- expressions in upper case are inline.lua's, written once for both.
-- KEYS, all under one hash tag:
--   1 S  hash: the state: limit, used and hn (the holders' weights and
--        number), qn and xn (the numbers of waiters and tombstones), tok
--        (last fencing token), qseq (queue order), exp, minl, mine (expiry
--        bookkeeping), and per id the field '#'..id:
--          'h<weight>:<token>:<grant_us>'  a holder
--          'q<member>'                     a queued waiter (its member of W)
--          'x<code>'  a tombstone: id was unknown (0), released (1), left
--                     the queue (2), adopted away (3), released by id (4)
--   2 T  zset: every id of S -> its end (ms, Redis TIME): a holder's lease
--        end; OFF + a waiter's liveness end or a tombstone's end
--   3 W  zset: the queue: member '<weight>:<ttl_ms>:<#chan>:<chan><id>'
--        -> arrival sequence; a grant pops the head with everything it needs
--   4 P  string: the limit pinned by SetLimit (never expires)
-- Invariants: T holds exactly the ids that have a field, and hn + qn + xn
-- of them; W holds the members of the waiters, qn of them. T and W also
-- hold a sentinel member '' scored 2^53, so they never empty: they are
-- created, and given their expiry, with the semaphore, not on the busy path.
-- S, T and W share one expiry, extended only when the latest end comes
-- within GRACE/2 of it. One zset for every end means one ZADD for a
-- release and the grant it makes (a tombstone and a lease), sent at the
-- end of the script with every other end it set.
-- Every script is idempotent per id: running it twice (a client retry, or a
-- copy delivered late) has the effect of running it once. used is the sum
-- of the holders' weights: every change of a holder changes it by the weight
-- added or removed, and derive() recomputes the counts from T and W (stats,
-- set limit, an acquire that does not fit, and a heartbeat that finds T or W
-- of another size than the counts say), so counts that went wrong (keys
-- lost apart) are repaired.
-- Cost: a script's time is its redis.call()s (about 1 µs each) and its own
-- Lua work, of which making this prelude's functions (closures, about 0.1 µs
-- each) was the largest part. So writes to S are collected and sent in one
-- HSET (and one HDEL) at the end, as are the ends added to T; the functions
-- share their state through two tables, V (values) and F (functions),
-- instead of capturing many locals; and only the functions of the busy path
-- are made on every run: the others are made by cold() when a script first
-- asks F for one of them.
-- ARGV[1] is the caller's configured limit, ARGV[2] its notification channel.
local V = {
  S = KEYS[1], T = KEYS[2], W = KEYS[3], P = KEYS[4],
  mychan = ARGV[2], now = now, now_us = now_us,
  fresh = false, latest = 0, pend = {}, order = {}, tz = {},
  -- Every field that start() sets, here too: a table that grows rehashes.
  limit = 0, used = 0, tok = 0, exp = 0, minl = 0, mine = 0, qseq = 0,
  hn = 0, qn = 0, xn = 0,
  cache = false, o = false, notes = false, stop = false,
}
-- F's busy-path functions, named here so that the table is made at its
-- size (adding them one by one would rehash it four times).
local F = {start = false, get = false, put = false, tadd = false, purge = false,
  hold = false, tombstone = false, grant = false, finish = false}
-- The counters of S that start() reads and finish() writes back, in order.
local COUNTERS = {'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn', 'qn', 'xn'}

-- The busy path: start, get, put, purge, hold, tombstone, grant, finish.

-- start reads the state, and the field of id if given (as state.lua read
-- it already, for id ARGV[3], in the scripts with fast paths); a semaphore
-- without state is created with the pinned limit, or the caller's.
function F.start(id)
  local m = state
  if id then
    m = m or redis.call('HMGET', V.S, STATE_FIELDS(), '#' .. id)
    V.cache = {['#' .. id] = m[11] or false}
  else
    m = redis.call('HMGET', V.S, STATE_FIELDS())
    V.cache = {}
  end
  for i = 2, 10 do m[i] = tonumber(m[i]) or 0 end
  V.o = m -- as read: finish() writes back what changed
  V.limit, V.used, V.tok, V.exp, V.minl, V.mine, V.qseq, V.hn, V.qn, V.xn =
    tonumber(m[1]), m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10]
  if not V.limit then
    V.limit = tonumber(redis.call('GET', V.P)) or tonumber(ARGV[1])
    F.put('limit', V.limit)
    V.fresh = true
    -- Leftovers of keys that lost their state are not trusted.
    redis.call('DEL', V.T, V.W)
    V.used, V.hn, V.qn, V.xn, V.minl, V.mine = 0, 0, 0, 0, SENTINEL, SENTINEL
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
-- tadd sets id's end in T to at, sent at the end of the script (or before
-- the script reads T: tflush).
function F.tadd(at, id)
  local tz = V.tz
  tz[#tz + 1] = at
  tz[#tz + 1] = id
end

-- purge drops expired holders (their permits come back) as soon as their
-- lease ends, and dead waiters and old tombstones at most SLACK ms late.
function F.purge()
  if not NONE_DUE(V.now, V.minl, V.mine) then F.reap() end
end

function F.hold(id, w, ttl)
  V.used, V.hn = V.used + w, V.hn + 1
  V.tok = NEXT_TOKEN(V.tok, V.now_us)
  local at = V.now + ttl
  if at > V.latest then V.latest = at end
  if at < V.minl then V.minl = at end
  F.tadd(at, id)
  F.put('#' .. id, HOLDER(w, V.tok, V.now_us))
  return V.tok
end

-- tombstone remembers for ttl ms (longer than a late copy can come) that id
-- was released, left the queue or was unknown (code), so that a late copy
-- of its acquire is refused and a repeated release answers the same. The
-- caller has taken id out of the holders' or the waiters' count.
function F.tombstone(id, code, ttl)
  local at = V.now + ttl
  if at > V.latest then V.latest = at end
  if at < V.mine then V.mine = at end
  V.xn = V.xn + 1
  F.put('#' .. id, 'x' .. code)
  F.tadd(OFF + at, id)
end

-- Grant to the head of the queue while it fits (strict FIFO: a head that
-- does not fit blocks everyone behind it). A head heavier than the limit
-- can never fit and is told so with token -1.
-- It returns true if the queue is then empty.
function F.grant()
  while V.qn > 0 and V.used < V.limit do
    local h = redis.call('ZPOPMIN', V.W)
    if h[1] == nil or h[1] == '' then
      -- Only the sentinel: the count was wrong.
      if h[1] then redis.call('ZADD', V.W, SENTINEL_S, '') end
      V.qn = 0
      return true
    end
    F.grant_head(h[1], h[2])
    if V.stop then return false end
  end
  return V.qn == 0
end

-- finish stores what changed in one HSET and one HDEL, and the new ends in
-- one ZADD, extends the keys' expiry when needed, publishes the grants of
-- other processes and returns those of the caller's process.
function F.finish()
  local refresh = V.fresh or NEAR_EXPIRY(V.latest, V.exp)
  if refresh then V.exp = math.max(V.latest, V.now) + GRACE end
  local set, del, order, pend, o = {}, nil, V.order, V.pend, V.o
  for i = 1, 9 do
    local v = V[COUNTERS[i]]
    if v ~= o[i + 1] then
      set[#set + 1] = COUNTERS[i]
      set[#set + 1] = NUM(v)
    end
  end
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
  local tz = V.tz
  if #tz > 1000 then F.tflush()
  elseif #tz > 0 then redis.call('ZADD', V.T, unpack(tz)) end
  if refresh then F.expire() end
  if not V.notes then return {} end
  return F.publish()
end

-- The hand-off path (queue, grant to the head, notify) is made when a
-- script first asks F for one of its functions, the rest after it.
local function warm()

-- publish sends the notes of other processes and returns the caller's.
function F.publish()
  local mine = {}
  for ch, l in pairs(V.notes) do
    if ch == V.mychan then
      mine = l
    else
      PUBLISH(ch, table.concat(l, ','))
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
  l[#l + 1] = NOTE(id, tk, at or V.now_us)
end

-- lease_end and e_end record a new lease end, or a new waiter or tombstone
-- end: minl is a lower bound of the earliest lease end and mine of the
-- earliest end of any kind in T (purge() does nothing before either), and
-- an end that comes within GRACE/2 of the keys' expiry makes finish()
-- extend it.
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

-- alive records the end of a waiter's liveness (ALIVE).
function F.alive(ttl) return F.e_end(ALIVE(V.now, ttl)) end

-- parse splits W's member m (MEMBER) into weight, ttl, channel and id.
function F.parse(m)
  local w, ttl, n, rest = MEMBER_PARTS(m)
  if not w then return nil end
  n = tonumber(n)
  return tonumber(w), tonumber(ttl), string.sub(rest, 1, n), string.sub(rest, n + 1)
end

-- queue puts waiter id at the tail.
function F.queue(id, w, ttl)
  local m = MEMBER(id, w, ttl, V.mychan)
  V.qseq, V.qn = V.qseq + 1, V.qn + 1
  redis.call('ZADD', V.W, V.qseq, m)
  F.tadd(OFF + F.alive(ttl), id)
  F.put('#' .. id, 'q' .. m)
end

-- grant_head grants to the head of the queue, popped from W with its
-- arrival sequence seq, or skips it; V.stop is set if it does not fit (it
-- goes back to the head, and grant() stops there).
function F.grant_head(m, seq)
  local w, ttl, ch, id = F.parse(m)
  if w and w <= V.limit and V.used + w > V.limit then
    redis.call('ZADD', V.W, seq, m)
    V.stop = true
    return
  end
  V.qn = V.qn - 1
  if not w then
    return -- not a member this code makes: dropped
  elseif w > V.limit then
    F.put('#' .. id, false)
    redis.call('ZREM', V.T, id)
    F.note(ch, id, -1)
  elseif ch == V.mychan or F.listeners(ch) > 0 then
    -- hold() counts the holder, and its lease end replaces the waiter's
    -- end in T.
    F.note(ch, id, F.hold(id, w, ttl))
  else
    -- Nobody listens: the waiter's process is gone (its connection
    -- closed), so skip the waiter instead of granting a permit that nobody
    -- will use for a whole lease. Counted before anything is sent: a
    -- subscription left on a replica (a demoted master) still receives
    -- what the master publishes, but is not counted here.
    F.put('#' .. id, false)
    redis.call('ZREM', V.T, id)
  end
end

-- listeners returns how many clients of this server listen on ch.
function F.listeners(ch) return LISTENERS(ch) end

-- Milliseconds until purge() would reap the earliest lease, or -1 if none.
function F.next_expiry() return NEXT_EXPIRY(V.minl, V.now) end

end -- warm

local function cold()
-- chunked runs cmd key args..., in chunks (unpack is bounded).
function F.chunked(cmd, key, args)
  for i = 1, #args, 1000 do redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args))) end
end

-- tflush sends the ends that tadd() collected, before the script reads T.
function F.tflush()
  if #V.tz > 0 then F.chunked('ZADD', V.T, V.tz) end
  V.tz = {}
end

-- expire extends the expiry of every key to V.exp, and (re)creates the
-- sentinels: a zset lost apart from S gets one again.
function F.expire()
  for _, k in ipairs({V.T, V.W}) do redis.call('ZADD', k, 'NX', SENTINEL_S, '') end
  for _, k in ipairs({V.S, V.T, V.W}) do redis.call('PEXPIREAT', k, V.exp) end
end

function F.weight_of(info) return WEIGHT(info) end

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

-- derive recomputes the counts from T and its ids' fields, and makes W
-- agree with them: a member of W that is not a waiter's goes, and so does a
-- waiter missing from W (lost apart; its process is told it is no longer
-- queued, and queues again).
function F.derive()
  F.tflush()
  local ids = redis.call('ZRANGE', V.T, 0, -1)
  if ids[#ids] == '' then ids[#ids] = nil end
  local v = F.hmget(ids)
  local used, hn, qn, xn, want = 0, 0, 0, 0, {}
  for i = 1, #ids do
    local k = v[i] and string.sub(v[i], 1, 1)
    if k == 'h' then
      used, hn = used + F.weight_of(v[i]), hn + 1
    elseif k == 'q' then
      want[string.sub(v[i], 2)] = ids[i]
    elseif k == 'x' then
      xn = xn + 1
    end
  end
  local members = redis.call('ZRANGE', V.W, 0, -1)
  local stray = {}
  for i = 1, #members do
    local m = members[i]
    if want[m] then
      want[m] = nil
      qn = qn + 1
    elseif m ~= '' then
      stray[#stray + 1] = m
    end
  end
  if #stray > 0 then F.chunked('ZREM', V.W, stray) end
  for m, id in pairs(want) do
    local _, _, ch = F.parse(m)
    redis.call('ZREM', V.T, id)
    F.put('#' .. id, false)
    if ch then F.note(ch, id, -2) end
  end
  V.used, V.hn, V.qn, V.xn = used, hn, qn, xn
end

-- reap is purge()'s work, then it finds the new lower bounds: minl, the
-- earliest lease end, exactly (T's first score, if a lease's), and mine
-- from the earliest other end, no sooner than SLACK.
function F.reap()
  F.tflush()
  local now = V.now
  if now >= V.minl then
    F.reap_range('-inf', now)
    local h = redis.call('ZRANGE', V.T, 0, 0, 'WITHSCORES')
    local e = tonumber(h[2])
    V.minl = e and e < OFF and e or SENTINEL
  end
  if now >= V.mine then
    F.reap_range(OFF, OFF + now)
    local h = redis.call('ZRANGEBYSCORE', V.T, OFF, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    local e = tonumber(h[2])
    V.mine = math.max(e and e < SENTINEL and e - OFF or SENTINEL, now + SLACK)
  end
  if V.used < 0 or V.hn < 0 or V.qn < 0 or V.xn < 0 then F.derive() end
end

-- reap_range drops the ids of T scored lo to hi, and their records.
function F.reap_range(lo, hi)
  local gone = redis.call('ZRANGEBYSCORE', V.T, lo, hi)
  if #gone == 0 then return end
  local v = F.hmget(gone)
  local dead = {}
  for i = 1, #gone do
    local k = v[i] and string.sub(v[i], 1, 1)
    if k == 'h' then
      V.used, V.hn = V.used - F.weight_of(v[i]), V.hn - 1
    elseif k == 'q' then
      dead[#dead + 1] = string.sub(v[i], 2)
      V.qn = V.qn - 1
    elseif k == 'x' then
      V.xn = V.xn - 1
    end
    F.put('#' .. gone[i], false)
  end
  if #dead > 0 then F.chunked('ZREM', V.W, dead) end
  redis.call('ZREMRANGEBYSCORE', V.T, lo, hi)
end

-- check compares the sizes of T and W with the counts (two commands), and
-- recomputes the counts if they differ or went negative.
function F.check()
  F.tflush()
  if V.used < 0 or redis.call('ZCARD', V.T) ~= V.hn + V.qn + V.xn + 1
    or redis.call('ZCARD', V.W) ~= V.qn + 1 then
    F.derive()
  end
end

-- unqueue takes waiter id, whose field is cur, out of the queue (its field
-- is left to the caller).
function F.unqueue(id, cur)
  redis.call('ZREM', V.W, string.sub(cur, 2))
  V.qn = V.qn - 1
end

end -- cold
local made = 0
setmetatable(F, {__index = function(f, k)
  while made < 2 do
    made = made + 1
    if made == 1 then warm() else cold() end
    local v = rawget(f, k)
    if v ~= nil then return v end
  end
end})
