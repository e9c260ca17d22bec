-- Inspect (Semaphore.Inspect): reads the holders and waiters, and changes
-- nothing, so expired leases and dead waiters that no script has reaped yet
-- are left out by their ends in T rather than dropped. After const.lua and
-- head.lua (the clock); not on the prelude.
-- KEYS: S, T, W, P (lib.lua). ARGV: 1 the caller's configured limit, 2 n,
-- the most holders and waiters to list.
-- Returns {now_us, limit, used, holders, waiters, hlist, wlist}: used the
-- permits held by live leases, holders and waiters the numbers of live
-- holders and queued waiters; hlist is id, lease end (ms), field, meta
-- ('' if none) for each of the n earliest lease ends; wlist is member,
-- meta for each of the n first waiters in queue order.
local S, T, W = KEYS[1], KEYS[2], KEYS[3]
local n = tonumber(ARGV[2])
local m = redis.call('HMGET', S, 'limit', 'used', 'qn', 'hn')
local limit = tonumber(m[1]) or tonumber(redis.call('GET', KEYS[4])) or tonumber(ARGV[1])
local used, qn, holders = tonumber(m[2]) or 0, tonumber(m[3]) or 0, tonumber(m[4]) or 0
-- Leases that ended but are still counted (used, hn): not in use any more.
local gone = redis.call('ZRANGEBYSCORE', T, '-inf', now)
for i = 1, #gone, 1000 do
  local f = {}
  for j = i, math.min(i + 999, #gone) do f[#f + 1] = '#' .. gone[j] end
  local v = redis.call('HMGET', S, unpack(f))
  for j = 1, #v do
    local w = v[j] and tonumber(string.match(v[j], '^h(%d+):'))
    if w then used, holders = used - w, holders - 1 end
  end
end
local lo, hi = '(' .. INT(now), '(' .. INT(OFF)
local h = redis.call('ZRANGEBYSCORE', T, lo, hi, 'WITHSCORES', 'LIMIT', 0, n)
local hlist = {}
if #h > 0 then
  local f = {}
  for i = 1, #h, 2 do
    f[#f + 1] = '#' .. h[i]
    f[#f + 1] = '@' .. h[i]
  end
  local v = redis.call('HMGET', S, unpack(f))
  for i = 1, #h, 2 do
    local rec = v[i] or ''
    if string.sub(rec, 1, 1) == 'h' then
      hlist[#hlist + 1] = h[i]
      hlist[#hlist + 1] = h[i + 1]
      hlist[#hlist + 1] = rec
      hlist[#hlist + 1] = v[i + 1] or ''
    end
  end
end
local q = redis.call('ZRANGE', W, 0, n) -- n + 1: the sentinel '' may be among them
local members, f = {}, {}
for i = 1, #q do
  local head, len = string.match(q[i], '^(%d+:%d+:(%d+):)')
  if head and #members < n then
    members[#members + 1] = q[i]
    f[#f + 1] = '@' .. string.sub(q[i], #head + tonumber(len) + 1)
  end
end
local wlist = {}
if #f > 0 then
  local v = redis.call('HMGET', S, unpack(f))
  for i = 1, #f do
    wlist[#wlist + 1] = members[i]
    wlist[#wlist + 1] = v[i] or ''
  end
end
return {now_us, limit, used, holders, qn, hlist, wlist}
