-- Inspect (Semaphore.Inspect): reads the holders and waiters, and changes
-- nothing, so expired leases and dead waiters that no script has reaped yet
-- are left out by their ends in T rather than dropped. After const.lua and
-- head.lua (the clock); not on the prelude.
-- KEYS: S, T, W, P, Q (lib.lua). ARGV: 1 the caller's configured limit, 2 n,
-- the most holders and waiters to list.
-- Returns {now_us, limit, used, holders, waiters, hlist, wlist}: used the
-- permits held by live leases, holders and waiters the numbers of live
-- holders and queued waiters; hlist is id, lease end (ms), field, owner,
-- note for each of the n earliest lease ends; wlist is member, owner,
-- note for each of the n first waiters: W's in queue order, then Q's
-- (lib_fair.lua) by level, queue and arrival. owner is the owner
-- record of the id's process (BASE), note its field '@'..id
-- ('<us>:<note>'); '' if none.
local S, T, W = KEYS[1], KEYS[2], KEYS[3]
local n = tonumber(ARGV[2])
local m = redis.call('HMGET', S, 'limit', 'used', 'qn', 'hn', 'fw')
local limit = tonumber(m[1]) or tonumber(redis.call('GET', KEYS[4])) or tonumber(ARGV[1])
local used, qn, holders = tonumber(m[2]) or 0, (tonumber(m[3]) or 0) + (tonumber(m[5]) or 0), tonumber(m[4]) or 0
-- hmget returns S's fields f (in chunks: unpack is bounded).
local function hmget(f)
  local out = {}
  for i = 1, #f, 1000 do
    local v = redis.call('HMGET', S, unpack(f, i, math.min(i + 999, #f)))
    for j = 1, #v do out[#out + 1] = v[j] or '' end
  end
  return out
end
-- Leases that ended but are still counted (used, hn): not in use any more.
local gone = redis.call('ZRANGEBYSCORE', T, '-inf', now)
for i = 1, #gone do gone[i] = '#' .. gone[i] end
for _, rec in ipairs(hmget(gone)) do
  local w = tonumber(string.match(rec, '^h(%d+):'))
  if w then used, holders = used - w, holders - 1 end
end
-- meta returns, for each of ids, its process's owner (the owner record of
-- its BASE) and its note field ('' for either if none).
local function meta(ids)
  local bases, idx, f = {}, {}, {}
  for i = 1, #ids do
    local b = BASE(ids[i])
    if b ~= '' and not idx[b] then
      f[#f + 1] = '#' .. b
      idx[b] = #f
    end
    bases[i] = b
  end
  local nf = #f
  for i = 1, #ids do
    if NOTED(ids[i]) then f[#f + 1] = '@' .. ids[i] end
  end
  local v = hmget(f)
  local owner, note, k = {}, {}, nf
  for i = 1, #ids do
    local o = idx[bases[i]] and v[idx[bases[i]]] or ''
    owner[i] = string.sub(o, 1, 1) == 'o' and string.sub(o, 2) or ''
    note[i] = ''
    if NOTED(ids[i]) then
      k = k + 1
      note[i] = v[k]
    end
  end
  return owner, note
end
local lo, hi = '(' .. INT(now), '(' .. INT(OFF)
local h = redis.call('ZRANGEBYSCORE', T, lo, hi, 'WITHSCORES', 'LIMIT', 0, n)
local hlist = {}
if #h > 0 then
  local ids, f = {}, {}
  for i = 1, #h, 2 do
    ids[#ids + 1] = h[i]
    f[#f + 1] = '#' .. h[i]
  end
  local recs = hmget(f)
  local owner, note = meta(ids)
  for i = 1, #ids do
    if string.sub(recs[i], 1, 1) == 'h' then
      hlist[#hlist + 1] = ids[i]
      hlist[#hlist + 1] = h[2 * i]
      hlist[#hlist + 1] = recs[i]
      hlist[#hlist + 1] = owner[i]
      hlist[#hlist + 1] = note[i]
    end
  end
end
local q = redis.call('ZRANGE', W, 0, n) -- n + 1: the sentinel '' may be among them
if #q <= n and (tonumber(m[5]) or 0) > 0 then
  for _, fm in ipairs(redis.call('ZRANGE', KEYS[5], 0, n - #q)) do q[#q + 1] = fm end
end
local members, ids = {}, {}
for i = 1, #q do
  local inner = q[i]
  local fl = string.match(inner, '^f%d+:%d+:(%d+):')
  if fl then inner = string.sub(inner, #string.match(inner, '^f%d+:%d+:%d+:') + tonumber(fl) + 1) end
  local head, len = string.match(inner, '^(%d+:%d+:(%d+):)')
  if head and #members < n then
    members[#members + 1] = q[i]
    ids[#ids + 1] = string.sub(inner, #head + tonumber(len) + 1)
  end
end
local wlist = {}
if #ids > 0 then
  local owner, note = meta(ids)
  for i = 1, #ids do
    wlist[#wlist + 1] = members[i]
    wlist[#wlist + 1] = owner[i]
    wlist[#wlist + 1] = note[i]
  end
end
return {now_us, limit, used, holders, qn, hlist, wlist}
