-- The prelude, continued (lib.lua, lib_handoff.lua): the rarely used
-- functions, and the table that makes the lazy parts on first use.
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
  if V.fw > 0 then redis.call('PEXPIREAT', V.Q, V.exp) end
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
  local used, hn, qn, xn, want, hv = 0, 0, 0, 0, {}, {}
  for i = 1, #ids do
    local k = v[i] and string.sub(v[i], 1, 1)
    if k == 'h' then
      used, hn = used + F.weight_of(v[i]), hn + 1
      hv[ids[i]] = v[i]
    elseif k == 'q' then
      want[string.sub(v[i], 2)] = ids[i]
    elseif k == 'x' or k == 'o' then
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
  F.fderive(want, hv)
  for m, id in pairs(want) do
    local _, _, ch = F.parse(m)
    redis.call('ZREM', V.T, id)
    F.drop(id)
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
  if V.used < 0 or V.hn < 0 or V.qn < 0 or V.xn < 0 or V.fw < 0 then F.derive() end
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
      F.unheld(v[i])
    elseif k == 'q' and string.sub(v[i], 2, 2) == 'f' then
      F.funqueue(string.sub(v[i], 2))
    elseif k == 'q' then
      dead[#dead + 1] = string.sub(v[i], 2)
      V.qn = V.qn - 1
    elseif k == 'x' or k == 'o' then
      V.xn = V.xn - 1
    end
    F.drop(gone[i])
  end
  if #dead > 0 then F.chunked('ZREM', V.W, dead) end
  redis.call('ZREMRANGEBYSCORE', V.T, lo, hi)
end

-- drop deletes id's field, and its note if it may have one (NOTED).
function F.drop(id)
  F.put('#' .. id, false)
  if NOTED(id) then F.put('@' .. id, false) end
end

-- own stores the owner record of base (BASE of the caller's ids) for keep
-- ms: a new one is counted with the tombstones (xn), and one that exists
-- gets the new end (ZADD GT: never an earlier one, whatever the order in
-- which copies run). A field of base that is not an owner record is left
-- alone.
function F.own(base, owner, keep)
  local f = '#' .. base
  local cur = F.get(f)
  if base == '' or cur and string.sub(cur, 1, 1) ~= 'o' then return end
  if not cur then V.xn = V.xn + 1 end
  local at = V.now + keep
  OTHER_END(at, V.latest, V.mine)
  F.put(f, 'o' .. owner)
  F.tflush()
  redis.call('ZADD', V.T, 'GT', OFF + at, base)
end

-- check compares the sizes of T and W with the counts (two commands), and
-- recomputes the counts if they differ or went negative.
function F.check()
  F.tflush()
  if V.used < 0 or redis.call('ZCARD', V.T) ~= V.hn + V.qn + V.fw + V.xn + 1
    or redis.call('ZCARD', V.W) ~= V.qn + 1
    or V.fw > 0 and redis.call('ZCARD', V.Q) ~= V.fw + 1 then
    F.derive()
  end
end

-- unqueue takes waiter id, whose field is cur, out of its queue (its field
-- is left to the caller).
function F.unqueue(id, cur)
  if string.sub(cur, 2, 2) == 'f' then return F.funqueue(string.sub(cur, 2)) end
  redis.call('ZREM', V.W, string.sub(cur, 2))
  V.qn = V.qn - 1
end

end -- cold
local made = 0
setmetatable(F, {__index = function(f, k)
  while made < 3 do
    made = made + 1
    if made == 1 then warm() elseif made == 2 then cold() else fair() end
    local v = rawget(f, k)
    if v ~= nil then return v end
  end
end})
