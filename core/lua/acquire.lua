-- ARGV: limit, channel, id, weight, ttl_ms, try (1 or 0).
-- Returns {code, value, limit, notes}: code 1 granted (value = token),
-- 0 no permit (try), 2 queued (value = ms to the earliest lease end, or -1),
-- -1 weight above the limit.
local id, w, ttl, try = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
purge()
grant()
local code, value = 0, 0
if w > limit then
  code = -1
elseif used + w <= limit and redis.call('ZCARD', Q) == 0 then
  code, value = 1, hold(id, w, ttl)
elseif not try then
  if redis.call('EXISTS', Q) == 0 then fresh = true end
  local seq = redis.call('HINCRBY', M, 'qseq', 1)
  redis.call('ZADD', Q, seq, id)
  redis.call('HSET', QI, id, int(w) .. ':' .. int(ttl) .. ':' .. mychan)
  redis.call('ZADD', QE, alive(ttl), id)
  code, value = 2, next_expiry()
end
return {code, value, limit, finish(), now_us}
