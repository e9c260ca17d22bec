-- ARGV: limit, channel, fairness (JSON {"r": reserves, "w": weights}, ''
-- the zero Fairness). Stores the Fairness for every process and pins it in
-- R (a semaphore made again later starts with it), fails every queued
-- waiter at a level the new Fairness does not have (note -3), and grants
-- under the new reserves and weights. Returns {1, 0, limit, notes, now_us}.
F.start()
F.purge()
F.check()
redis.call('SET', V.R, ARGV[3])
F.put('fair', ARGV[3])
V.fz = nil
local n = F.fairness().n
if V.fw > 0 and n < 8 then
  local lo = F.band_score(n)
  local fm = redis.call('ZRANGEBYSCORE', V.Q, lo, '(' .. SENTINEL_S)
  for i = 1, #fm do
    local _, _, ch, id = F.parse(fm[i])
    F.funqueue(fm[i])
    if id then
      redis.call('ZREM', V.T, id)
      F.drop(id)
      F.note(ch, id, -3)
    end
  end
end
F.grant()
return {1, 0, V.limit, F.finish(), V.now_us}
