-- Shared prelude of every distsem script (core/redissem/scripts.go prepends it, after
-- const.lua and head.lua; the acquire and release scripts then read their
-- state (state.lua) and run their fast paths, fast_*.lua, which make the
-- same writes as this code in the common cases, without it). The
-- expressions in upper case are inline.lua's, written once for both.
-- KEYS, all under one hash tag:
--   1 S  hash: the state: limit, used and hn (the holders' weights and
--        number), qn and xn (the numbers of waiters, and of tombstones and
--        owner records), tok (last fencing token), qseq (queue order), exp,
--        minl, mine (expiry bookkeeping), and per id the field '#'..id:
--          'h<weight>:<token>:<grant_us>'  a holder
--          'q<member>'                     a queued waiter (its member of W)
--          'x<code>'  a tombstone: id was unknown (0), released (1), left
--                     the queue (2), adopted away (3), released by id (4)
--          'o<owner>' an owner record (F.own): id is a process's base
--                     (BASE, inline.lua), and owner names that process's
--                     holders and waiters (core.WithOwner). It is written
--                     off the busy path (a heartbeat, the first acquire of
--                     a process in 2 lease TTLs) for 2 lease TTLs, and
--                     reaped as a tombstone is at its end: at most one per
--                     process that held or waited in the last 2 lease TTLs
--        and, only for a noted id (NOTED: its acquire gave a note, ARGV[9]
--        of acquire.lua), the field '@'..id: '<queued_or_granted_us>:<note>',
--        read by inspect.lua alone; it goes with the id's field, except
--        that a tombstone keeps it until the tombstone goes (no command
--        more on the busy path)
--   2 T  zset: every id of S -> its end (ms, Redis TIME): a holder's lease
--        end; OFF + a waiter's liveness end, a tombstone's or an owner
--        record's end
--   3 W  zset: the queue: member '<weight>:<ttl_ms>:<#chan>:<chan><id>'
--        -> arrival sequence; a grant pops the head with everything it needs
--   4 P  string: the limit pinned by SetLimit (never expires)
--   5 Q  zset: the queues of the flows and levels (lib_fair.lua), and S's
--        counter fw, the number of their waiters
--   6 R  string: the Fairness pinned by SetFairness (never expires)
--   7 A  only with WithReplicaAck: that it is given makes PUBLISH_NOTES hand
--        the notes of other processes to the caller, which publishes them
--        once WAIT confirmed the write; only confirm.lua and the caller's
--        re-acknowledgement write it (a marker that expires in 1s)
-- Invariants: T holds exactly the ids that have a field '#'..id, and
-- hn + qn + xn of them; W holds the members of the waiters, qn of them. T
-- and W also hold a sentinel member '' scored 2^53, so they never empty:
-- they are created, and given their expiry, with the semaphore, not on the
-- busy path.
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
  S = KEYS[1], T = KEYS[2], W = KEYS[3], P = KEYS[4], Q = KEYS[5], R = KEYS[6],
  mychan = ARGV[2], now = now, now_us = now_us,
  fresh = false, latest = 0, pend = {}, order = {}, tz = {},
  -- Every field that start() sets, here too: a table that grows rehashes.
  limit = 0, used = 0, tok = 0, exp = 0, minl = 0, mine = 0, qseq = 0,
  hn = 0, qn = 0, xn = 0, fw = 0,
  cache = false, o = false, notes = false, stop = false,
}
-- F's busy-path functions, named here so that the table is made at its
-- size (adding them one by one would rehash it four times).
local F = {start = false, get = false, put = false, tadd = false, purge = false,
  hold = false, tombstone = false, grant = false, finish = false}
-- The counters of S that start() reads and finish() writes back, in order.
local COUNTERS = {'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn', 'qn', 'xn', 'fw'}

-- The busy path: start, get, put, purge, hold, tombstone, grant, finish.

-- start reads the state, and the field of id if given (as state.lua read
-- it already, for id ARGV[3], in the scripts with fast paths); a semaphore
-- without state is created with the pinned limit, or the caller's.
function F.start(id)
  local m = state
  if id then
    m = m or redis.call('HMGET', V.S, STATE_FIELDS(), '#' .. id)
    V.cache = {['#' .. id] = m[12] or false}
  else
    m = redis.call('HMGET', V.S, STATE_FIELDS())
    V.cache = {}
  end
  for i = 2, 11 do m[i] = tonumber(m[i]) or 0 end
  V.o = m -- as read: finish() writes back what changed
  V.limit, V.used, V.tok, V.exp, V.minl, V.mine, V.qseq, V.hn, V.qn, V.xn, V.fw =
    tonumber(m[1]), m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10], m[11]
  if not V.limit then
    V.limit = tonumber(redis.call('GET', V.P)) or tonumber(ARGV[1])
    F.put('limit', V.limit)
    V.fresh = true
    -- Leftovers of keys that lost their state are not trusted.
    redis.call('DEL', V.T, V.W, V.Q)
    V.used, V.hn, V.qn, V.xn, V.fw, V.minl, V.mine = 0, 0, 0, 0, 0, SENTINEL, SENTINEL
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

-- hold makes id a holder of weight w for ttl ms, and returns its token.
function F.hold(id, w, ttl)
  local at = 0
  HOLD(w, ttl, V.used, V.hn, V.tok, at, V.latest, V.minl)
  F.tadd(at, id)
  F.put('#' .. id, HOLDER(w, V.tok, V.now_us))
  return V.tok
end

-- tombstone remembers for ttl ms (longer than a late copy can come) that id
-- was released, left the queue or was unknown (code), so that a late copy
-- of its acquire is refused and a repeated release answers the same. The
-- caller has taken id out of the holders' or the waiters' count.
function F.tombstone(id, code, ttl)
  local at = 0
  TOMBSTONE(ttl, V.xn, at, V.latest, V.mine)
  F.put('#' .. id, 'x' .. code)
  F.tadd(OFF + at, id)
end

-- Grant to the head of the queue while it fits (strict FIFO: a head that
-- does not fit blocks everyone behind it). A head heavier than the limit
-- can never fit and is told so with token -1.
-- It returns true if the queue is then empty. While waiters of flows or
-- levels wait in Q, fgrant (lib_fair.lua) decides instead.
function F.grant()
  if V.fw > 0 then return F.fgrant() end
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
  for i = 1, 10 do
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
