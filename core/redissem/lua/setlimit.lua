-- ARGV: new limit, channel. Stores the limit for every process, pins it
-- (it outlives the semaphore's other keys: a semaphore made again later
-- starts with it) and grants waiters under it; every queued request heavier
-- than it fails at once (-1), not only the head.
F.start()
V.limit = tonumber(ARGV[1])
redis.call('SET', V.P, V.limit)
F.put('limit', V.limit)
F.purge()
F.check()
local members = redis.call('ZRANGE', V.W, 0, -1)
for i = 1, #members do
  local w, _, ch, id = F.parse(members[i])
  if w and w > V.limit then
    redis.call('ZREM', V.W, members[i])
    redis.call('ZREM', V.T, id)
    V.qn = V.qn - 1
    F.drop(id)
    F.note(ch, id, -1)
  end
end
if V.fw > 0 then
  V.fz = nil -- its reserves scale with the limit
  local fm = redis.call('ZRANGE', V.Q, 0, -1)
  for i = 1, #fm do
    local w, _, ch, id = F.parse(fm[i])
    if w and w > V.limit then
      F.funqueue(fm[i])
      redis.call('ZREM', V.T, id)
      F.drop(id)
      F.note(ch, id, -1)
    end
  end
end
F.grant()
return {1, 0, V.limit, F.finish(), V.now_us}
