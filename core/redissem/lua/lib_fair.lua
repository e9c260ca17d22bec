-- The prelude, continued (lib.lua): flows and priority levels, made when a
-- script first asks F for one of these functions (never on the default
-- path: a call with no flow and no level, while no waiter has one).
-- A waiter of a flow (core.WithFlow), or at a level above 0, waits in Q
-- (KEYS[5]), a zset of the queues of every level: level l has QN queues,
-- its bands l*QN .. l*QN+QN-1, and a member of band b scores b*SPAN + its
-- arrival sequence (qseq, shared with W), so each band is FIFO and every
-- score is an exact integer below 2^53 (the sentinel '' sits there). The
-- member is 'f<level>:<queue>:<#flow>:<flow>' .. MEMBER (inline.lua); the
-- waiter's field in S is 'q' .. member, as for W's. The default flow at
-- level 0 keeps W, which counts as queue QN of level 0.
-- S's fields of the flows, none of them present while nobody waits in Q:
--   fw         the number of Q's waiters (a counter read with the state)
--   lw<l>      the waiters of level l in Q; lu<l> (l >= 1) the weight held
--              at level l: level 0 holds used minus the others
--   qc<b>      the waiters of band b; bq the number of bands with waiters
--   ff<l>:<f>  '<queue>:<n>': the queue of flow f at level l, while it has
--              n waiters, so that its waiters stay FIFO (shuffle sharding:
--              a flow with none joins the shortest queue of its hand)
--   dq<l>:<i>  the deficit of queue i of level l (deficit round robin),
--              rr<l> the queue whose turn it is
--   fair       the Fairness in force, as JSON {"r": reserves, "w":
--              weights}; R (KEYS[6]) pins one set by SetFairness
-- A holder granted at level l >= 1 has the field 'h<w>:<tok>:<us>:<l>'.
local function fair()
local QN, SPAN = 64, 17592186044416 -- 2^44

-- num is tonumber of a string.match: miniredis's Lua returns no value,
-- not nil, from a match that fails.
function F.num(...) local x = ...; return tonumber(x) end

-- cnt adds d to S's counter f and returns it; a counter at 0 is deleted.
function F.cnt(f, d)
  local v = (tonumber(F.get(f)) or 0) + d
  F.put(f, v ~= 0 and v or false)
  return v
end

-- fairness returns the Fairness in force: {r = reserves, w = weights, n =
-- levels}, from S, else R, else enc (the caller's configured one, or nil),
-- which it then stores in S. Reserves that add up to more than the limit
-- are honoured level by level, from level 0, until they add up to it (as
-- core.Local does).
function F.fairness(enc)
  if V.fz then return V.fz end
  local s = F.get('fair')
  if not s then
    s = redis.call('GET', V.R) or enc or ''
    F.put('fair', s)
  end
  local ok, d = false, nil
  if s ~= '' then ok, d = pcall(cjson.decode, s) end
  if not ok or type(d) ~= 'table' then d = {} end
  local r, left = {}, V.limit
  for i, x in ipairs(type(d.r) == 'table' and d.r or {}) do
    r[i] = math.max(math.min(tonumber(x) or 0, left), 0)
    left = left - r[i]
  end
  V.fz = {r = r, w = type(d.w) == 'table' and d.w or {}, n = math.max(#r, 1)}
  return V.fz
end

-- levels reads the counters of every level once per script (waiting and in
-- use).
function F.levels()
  if V.lw then return end
  local f = {}
  for l = 0, 7 do f[#f + 1] = 'lw' .. l end
  for l = 1, 7 do f[#f + 1] = 'lu' .. l end
  local v = redis.call('HMGET', V.S, unpack(f))
  for i = 1, #f do
    if V.cache[f[i]] == nil then V.cache[f[i]] = v[i] or false end
  end
  V.lw = true
end

-- waiting and inuse of level l.
function F.waiting(l) return (tonumber(F.get('lw' .. l)) or 0) + (l == 0 and V.qn or 0) end
function F.inuse(l)
  if l > 0 then return tonumber(F.get('lu' .. l)) or 0 end
  local u = V.used
  for i = 1, 7 do u = u - (tonumber(F.get('lu' .. i)) or 0) end
  return u
end

-- band_score is the lowest score of level l's queues in Q.
function F.band_score(l) return INT(l * QN * SPAN) end

-- fparse splits Q's member fm into level, queue, flow and W's member.
function F.fparse(fm)
  local l, q, n, rest = string.match(fm, '^f(%d+):(%d+):(%d+):(.*)$')
  if not l then return nil end
  n = tonumber(n)
  return tonumber(l), tonumber(q), string.sub(rest, 1, n), string.sub(rest, n + 1)
end

-- fqueue puts waiter id of flow at level at the tail of its flow's queue,
-- or, if the flow has no waiters there, of the shortest queue of hand (a
-- comma-separated list of queue indices).
function F.fqueue(id, w, ttl, level, flow, hand)
  local key = 'ff' .. level .. ':' .. flow
  local cur = F.get(key)
  local q, n
  if cur then
    q, n = string.match(cur, '^(%d+):(%d+)$')
    q, n = tonumber(q), tonumber(n)
  end
  if not q then
    local cs, f = {}, {}
    for c in string.gmatch(hand, '%d+') do
      c = tonumber(c)
      if c < QN then cs[#cs + 1] = c; f[#f + 1] = 'qc' .. (level * QN + c) end
    end
    local v = #f > 0 and redis.call('HMGET', V.S, unpack(f)) or {}
    local best = nil
    for j = 1, #cs do
      local x = V.pend[f[j]]
      if x == nil then x = v[j] end
      local k = tonumber(x) or 0
      if not best or k < best then q, best = cs[j], k end
    end
    q, n = q or 0, 0
  end
  F.put(key, q .. ':' .. (n + 1))
  if V.fw == 0 then
    -- The first waiter of Q: its sentinel and expiry (F.expire keeps them).
    redis.call('ZADD', V.Q, 'NX', SENTINEL_S, '')
    if V.exp > 0 then redis.call('PEXPIREAT', V.Q, V.exp) end
  end
  local at = 0
  QUEUE(ttl, V.qseq, V.fw, at, V.latest, V.mine)
  local b = level * QN + q
  local m = string.format('f%d:%d:%d:', level, q, #flow) .. flow .. MEMBER(id, w, ttl, V.mychan)
  redis.call('ZADD', V.Q, INT(b * SPAN + V.qseq), m)
  F.tadd(OFF + at, id)
  F.put('#' .. id, 'q' .. m)
  F.cnt('lw' .. level, 1)
  if F.cnt('qc' .. b, 1) == 1 then F.cnt('bq', 1) end
end

-- fleft counts a waiter of Q out (level, queue, flow), once its member is
-- gone from Q.
function F.fleft(l, q, flow)
  V.fw = V.fw - 1
  if F.cnt('lw' .. l, -1) <= 0 and (l > 0 or V.qn == 0) then F.put('rr' .. l, false) end
  local b = l * QN + q
  if F.cnt('qc' .. b, -1) <= 0 then
    F.put('qc' .. b, false)
    F.put('dq' .. l .. ':' .. q, false)
    F.cnt('bq', -1)
  end
  local key = 'ff' .. l .. ':' .. flow
  local n = F.num(string.match(F.get(key) or '', ':(%d+)$')) or 1
  F.put(key, n > 1 and (q .. ':' .. (n - 1)) or false)
end

-- funqueue takes Q's member fm out of Q.
function F.funqueue(fm)
  local l, q, flow = F.fparse(fm)
  redis.call('ZREM', V.Q, fm)
  if l then F.fleft(l, q, flow) end
end

-- fhold makes id a holder of weight w at level l, and returns its token.
function F.fhold(id, w, ttl, l)
  local tok = F.hold(id, w, ttl)
  if l > 0 then
    F.put('#' .. id, HOLDER(w, tok, V.now_us) .. ':' .. l)
    F.cnt('lu' .. l, w)
  end
  return tok
end

-- unheld counts out holder field cur (used, hn, and its level's use).
function F.unheld(cur)
  local w = WEIGHT(cur)
  V.used, V.hn = V.used - w, V.hn - 1
  local l = F.num(string.match(cur, '^h%d+:%d+:%d+:(%d+)$'))
  if l and l > 0 then F.cnt('lu' .. l, -w) end
end

-- head returns the head of queue i of level l (i == QN: W), as {m, member
-- of W, weight, flow}, or nil if the queue is empty.
function F.head(l, i)
  if i == QN then
    if V.qn <= 0 then return nil end
    local h = redis.call('ZRANGE', V.W, 0, 0)[1]
    if not h or h == '' then return nil end
    return {h, h, F.num(string.match(h, '^(%d+):')) or 0, ''}
  end
  local b = l * QN + i
  return F.qhead(redis.call('ZRANGEBYSCORE', V.Q, INT(b * SPAN), '(' .. INT((b + 1) * SPAN), 'LIMIT', 0, 1)[1])
end

-- qhead is head's answer for h, a member of Q (nil: nil).
function F.qhead(h)
  if not h then return nil end
  local _, _, flow, m = F.fparse(h)
  return {h, m or '', F.num(string.match(m or '', '^(%d+):')) or 0, flow or ''}
end

-- next_queue returns the first queue of level l after i (cyclically) with
-- waiters, and its head, or nil: the queues of Q in band order, then, at
-- level 0, W. One command finds the next band with waiters, and its head.
function F.next_queue(l, i)
  local function from(c, to)
    if c >= to then return nil end
    local h = redis.call('ZRANGEBYSCORE', V.Q, INT((l * QN + c) * SPAN), '(' .. INT((l * QN + to) * SPAN), 'LIMIT', 0, 1)[1]
    local lv, q = F.fparse(h or '')
    if lv then return q, F.qhead(h) end
  end
  local w = l == 0 and V.qn > 0
  local start = (i and i < QN) and i + 1 or 0
  local c, h = from(start, QN)
  if c then return c, h end
  if w and i ~= QN then return QN, F.head(0, QN) end
  c, h = from(0, math.min(start, QN))
  if c then return c, h end
  if w then return QN, F.head(0, QN) end
  return nil
end

-- serve grants the head h of queue i of level l, or takes it out if it can
-- never be granted (HEAD); returns HEAD's kind (HEAD_WAIT: left in place).
function F.serve(l, i, h)
  local kind, w, ttl, ch, id
  HEAD(h[2], V.limit, V.used, V.mychan, kind, w, ttl, ch, id)
  if kind == HEAD_WAIT then return kind end
  if i == QN then
    redis.call('ZREM', V.W, h[1])
    V.qn = V.qn - 1
  else
    F.funqueue(h[1])
  end
  if kind == HEAD_GRANT then
    F.note(ch, id, F.fhold(id, w, ttl, l))
  elseif kind == HEAD_REJECT or kind == HEAD_SKIP then
    F.drop(id)
    redis.call('ZREM', V.T, id)
    if kind == HEAD_REJECT then F.note(ch, id, -1) end
  end
  return kind
end

-- fgrant is F.grant while Q has waiters: each grant goes to the highest
-- level with waiters that holds less than its reserve, else to the highest
-- level with waiters; within the level, to the queue whose turn it is by
-- deficit round robin (cost: the permit's weight; quantum: the weight of
-- the flow at the queue's head). A candidate that does not fit now stops
-- every grant until it does, whatever its level. Returns true if nobody
-- is queued.
function F.fgrant()
  if V.used >= V.limit then return V.qn == 0 and V.fw == 0 end
  local fz = F.fairness()
  -- One level: every waiter is at level 0, and no counter of the levels
  -- is needed to choose.
  if fz.n == 1 then
    while V.used < V.limit and V.qn + V.fw > 0 and F.grant_level(0, fz) do end
    return V.qn == 0 and V.fw == 0
  end
  F.levels()
  while V.used < V.limit and V.qn + V.fw > 0 do
    local pick, first = nil, nil
    for l = 0, 7 do
      if F.waiting(l) > 0 then
        first = first or l
        if not pick and F.inuse(l) < (fz.r[l + 1] or 0) then pick = l end
      end
    end
    pick = pick or first
    if not pick or not F.grant_level(pick, fz) then break end
  end
  return V.qn == 0 and V.fw == 0
end

-- grant_level makes one grant (or drop) in level l by deficit round robin,
-- and returns false if the candidate does not fit now.
function F.grant_level(l, fz)
  local rk = 'rr' .. l
  local i = tonumber(F.get(rk))
  local nh = nil
  for round = 1, 4 * QN do
    local h = nh or i and F.head(l, i)
    nh = nil
    if h then
      local dk = 'dq' .. l .. ':' .. i
      local d = tonumber(F.get(dk)) or 0
      -- Past two rounds of every queue, the turn's queue is served
      -- whatever its deficit: a bound on the work of heavy permits.
      if h[3] <= d or round > 2 * QN then
        local kind = F.serve(l, i, h)
        if kind == HEAD_WAIT then return false end
        if kind == HEAD_GRANT then
          d = math.max(d - h[3], 0)
          F.put(dk, (d > 0 and F.head(l, i)) and d or false)
        end
        F.put(rk, F.waiting(l) > 0 and i or false)
        return true
      end
    end
    i, nh = F.next_queue(l, i)
    if not i then return false end
    local q = nh and tonumber(fz.w[nh[4]]) or 1
    local dk = 'dq' .. l .. ':' .. i
    F.put(dk, (tonumber(F.get(dk)) or 0) + q)
    F.put(rk, i)
  end
  return false
end

-- level_stats returns, for each level, the weight held and the waiters,
-- then the number of queues with waiters.
function F.level_stats()
  F.levels()
  local out = {}
  for l = 0, 7 do
    out[#out + 1] = F.inuse(l)
    out[#out + 1] = F.waiting(l)
  end
  out[#out + 1] = (tonumber(F.get('bq')) or 0) + (V.qn > 0 and 1 or 0)
  return out
end

-- fderive is derive()'s part for the flows: it recounts Q's waiters
-- (members, the ids of T that want them) and the levels' use from the
-- holders' fields (hv: id -> field), after dropping every flow counter.
function F.fderive(want, hv)
  local all = redis.call('HGETALL', V.S)
  for i = 1, #all, 2 do
    local f = all[i]
    if string.match(f, '^lw%d$') or string.match(f, '^lu%d$') or string.match(f, '^qc%d+$')
      or string.match(f, '^dq%d+:%d+$') or string.match(f, '^rr%d$') or f == 'bq'
      or string.sub(f, 1, 2) == 'ff' then
      F.put(f, false)
      V.cache[f] = false
    end
  end
  V.lw = nil
  for _, cur in pairs(hv) do
    local l = F.num(string.match(cur, '^h%d+:%d+:%d+:(%d+)$'))
    if l and l > 0 then F.cnt('lu' .. l, WEIGHT(cur)) end
  end
  V.fw = 0
  local members = redis.call('ZRANGE', V.Q, 0, -1)
  local stray = {}
  for i = 1, #members do
    local m = members[i]
    if want[m] then
      want[m] = nil
      local l, q, flow = F.fparse(m)
      V.fw = V.fw + 1
      F.cnt('lw' .. l, 1)
      if F.cnt('qc' .. (l * QN + q), 1) == 1 then F.cnt('bq', 1) end
      local key = 'ff' .. l .. ':' .. flow
      local n = F.num(string.match(F.get(key) or '', ':(%d+)$')) or 0
      F.put(key, q .. ':' .. (n + 1))
    elseif m ~= '' then
      stray[#stray + 1] = m
    end
  end
  if #stray > 0 then F.chunked('ZREM', V.Q, stray) end
end

end -- fair
