-- ARGV: limit, channel, n, then n pairs (holder id, ttl_ms), then waiter ids.
-- Renews the leases of the caller's holders, keeps its waiters alive, reaps
-- expired leases and grants freed permits. Returns {lost, next, limit,
-- notes}: lost = holder ids whose lease had ended; next = ms to the earliest
-- lease end or -1; notes also carry, for each of the caller's waiters, its
-- grant (healing a lost notification) or -2 if it is no longer queued.
local n = tonumber(ARGV[3])
local lost = {}
for i = 0, n - 1 do
  local id, ttl = ARGV[4 + 2 * i], tonumber(ARGV[5 + 2 * i])
  local s = redis.call('ZSCORE', H, id)
  if s and tonumber(s) > now then
    redis.call('ZADD', H, lease(ttl), id)
  else
    lost[#lost + 1] = id
  end
end
purge()
derive() -- repairs a count that went wrong, at least every TTL/3
grant()
for i = 4 + 2 * n, #ARGV do
  local id = ARGV[i]
  local info = redis.call('HGET', QI, id)
  if info and not is_tomb(info) then
    local ttl = tonumber(string.match(info, '^%d+:(%d+):'))
    redis.call('ZADD', QE, alive(ttl), id)
  else
    local held = redis.call('HGET', HI, id)
    if held then
      -- A grant whose notification was lost, with its real grant time.
      local tok, at = string.match(held, '^%d+:(%d+):?(%d*)$')
      note(mychan, id, tonumber(tok), tonumber(at))
    else
      note(mychan, id, -2)
    end
  end
end
return {lost, next_expiry(), limit, finish(), now_us}
