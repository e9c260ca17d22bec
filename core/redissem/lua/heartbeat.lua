-- ARGV: limit, channel, n, owner ('' none), keep_ms, then n pairs (holder
-- id, ttl_ms), then waiter ids. Renews the leases of the caller's holders,
-- keeps its waiters alive and its process's owner record (F.own) for
-- keep_ms, reaps expired leases and grants freed permits. Returns {lost,
-- next, limit, notes}: lost = holder ids whose lease had ended; next = ms
-- to the earliest lease end (a lower bound) or -1; notes also carry, for
-- each of the caller's waiters, its grant (healing a lost notification) or
-- -2 if it is no longer queued.
local n, owner, base = tonumber(ARGV[3]), ARGV[4], ''
local first = 6 + 2 * n -- the first waiter id
F.start()
-- The fields of every id named, and of the owner record, in one command.
local ids = {}
for i = 0, n - 1 do ids[#ids + 1] = ARGV[6 + 2 * i] end
for i = first, #ARGV do ids[#ids + 1] = ARGV[i] end
if owner ~= '' then
  base = BASE(ids[1] or '')
  if base ~= '' then ids[#ids + 1] = base end
end
if #ids > 0 then
  local v = F.hmget(ids)
  for i = 1, #ids do V.cache['#' .. ids[i]] = v[i] end
end
local lost = {}
for i = 0, n - 1 do
  local id, ttl = ARGV[6 + 2 * i], tonumber(ARGV[7 + 2 * i])
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
      F.unheld(cur)
      F.drop(id)
    end
  end
end
F.purge()
-- A check that costs two commands: the sizes of T and W against the
-- counts; any difference (keys lost apart) recomputes them.
F.check()
F.grant()
if base ~= '' then F.own(base, owner, tonumber(ARGV[5])) end
for i = first, #ARGV do
  local id = ARGV[i]
  local cur = F.get('#' .. id)
  local kind = cur and string.sub(cur, 1, 1)
  if kind == 'q' then
    local _, ttl = F.parse(string.sub(cur, 2))
    F.tadd(OFF + F.alive(ttl), id)
  elseif kind == 'h' then
    -- A grant whose notification was lost, with its real grant time.
    local tk, at = string.match(cur, '^h%d+:(%d+):?(%d*)')
    F.note(V.mychan, id, tonumber(tk), tonumber(at))
  else
    F.note(V.mychan, id, -2)
  end
end
return {lost, F.next_expiry(), V.limit, F.finish(), V.now_us}
