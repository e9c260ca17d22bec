-- ARGV: limit, channel, n, then n pairs (holder id, ttl_ms), then waiter ids.
-- Renews the leases of the caller's holders, keeps its waiters alive, reaps
-- expired leases and grants freed permits. Returns {lost, next, limit,
-- notes}: lost = holder ids whose lease had ended; next = ms to the earliest
-- lease end (a lower bound) or -1; notes also carry, for each of the
-- caller's waiters, its grant (healing a lost notification) or -2 if it is
-- no longer queued.
local n = tonumber(ARGV[3])
F.start()
-- The fields of every id named, in one command.
if #ARGV > 3 then
  local ids = {}
  for i = 0, n - 1 do ids[#ids + 1] = ARGV[4 + 2 * i] end
  for i = 4 + 2 * n, #ARGV do ids[#ids + 1] = ARGV[i] end
  local v = F.hmget(ids)
  for i = 1, #ids do V.cache['#' .. ids[i]] = v[i] end
end
local lost = {}
for i = 0, n - 1 do
  local id, ttl = ARGV[4 + 2 * i], tonumber(ARGV[5 + 2 * i])
  local s = redis.call('ZSCORE', V.T, id)
  local cur = F.get('#' .. id)
  local held = cur and string.sub(cur, 1, 1) == 'h'
  if held and s and tonumber(s) > V.now then
    F.tadd(F.lease_end(V.now + ttl), id)
  else
    lost[#lost + 1] = id
    -- A holder whose lease is gone from T (lost apart): its record goes
    -- too, so that its Release answers "not held".
    if held and not s then
      V.used, V.hn = V.used - F.weight_of(cur), V.hn - 1
      F.put('#' .. id, false); F.put('@' .. id, false)
    end
  end
end
F.purge()
-- A check that costs two commands: the sizes of T and W against the
-- counts; any difference (keys lost apart) recomputes them.
F.check()
F.grant()
for i = 4 + 2 * n, #ARGV do
  local id = ARGV[i]
  local cur = F.get('#' .. id)
  local kind = cur and string.sub(cur, 1, 1)
  if kind == 'q' then
    local _, ttl = F.parse(string.sub(cur, 2))
    F.tadd(OFF + F.alive(ttl), id)
  elseif kind == 'h' then
    -- A grant whose notification was lost, with its real grant time.
    local tk, at = string.match(cur, '^h%d+:(%d+):?(%d*)$')
    F.note(V.mychan, id, tonumber(tk), tonumber(at))
  else
    F.note(V.mychan, id, -2)
  end
end
return {lost, F.next_expiry(), V.limit, F.finish(), V.now_us}
