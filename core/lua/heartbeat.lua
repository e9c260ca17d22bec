-- ARGV: limit, channel, n, then n pairs (holder id, ttl_ms), then waiter ids.
-- Renews the leases of the caller's holders, keeps its waiters alive, reaps
-- expired leases and grants freed permits. Returns {lost, next, limit,
-- notes}: lost = holder ids whose lease had ended; next = ms to the earliest
-- lease end or -1; notes also carry, for each of the caller's waiters, its
-- grant (healing a lost notification) or -2 if it is no longer queued.
local n = tonumber(ARGV[3])
F.start()
local lost = {}
for i = 0, n - 1 do
  local id, ttl = ARGV[4 + 2 * i], tonumber(ARGV[5 + 2 * i])
  local s = redis.call('ZSCORE', V.L, id)
  if s and tonumber(s) > V.now then
    redis.call('ZADD', V.L, F.lease_end(V.now + ttl), id)
  else
    lost[#lost + 1] = id
    -- A holder whose lease is gone from L (lost apart, or ended): its
    -- record goes too, so that its Release answers "not held".
    local cur = F.get('#' .. id)
    if not s and cur and string.sub(cur, 1, 1) == 'h' then
      V.used, V.hn = V.used - F.weight_of(cur), V.hn - 1
      F.put('#' .. id, false)
    end
  end
end
F.purge()
-- A check that costs one command: the holders counted against the holders
-- recorded; any difference (keys lost apart) recomputes the count.
if redis.call('ZCOUNT', V.L, '-inf', '(' .. SENTINEL_S) ~= V.hn or V.used < 0 then F.derive() end
F.grant()
for i = 4 + 2 * n, #ARGV do
  local id = ARGV[i]
  local cur = F.get('#' .. id)
  local kind = cur and string.sub(cur, 1, 1)
  if kind == 'q' then
    local ttl = tonumber(string.match(cur, '^q%d+:(%d+):'))
    redis.call('ZADD', V.E, F.alive(ttl), id)
  elseif kind == 'h' then
    -- A grant whose notification was lost, with its real grant time.
    local tk, at = string.match(cur, '^h%d+:(%d+):?(%d*)$')
    F.note(V.mychan, id, tonumber(tk), tonumber(at))
  else
    F.note(V.mychan, id, -2)
  end
end
return {lost, F.next_expiry(), V.limit, F.finish(), V.now_us}
