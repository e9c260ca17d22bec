-- ARGV: new limit, channel. Stores the limit for every process, pins it
-- (it outlives the semaphore's other keys: a semaphore made again later
-- starts with it) and grants waiters under it; every queued request heavier
-- than it fails at once (-1), not only the head.
F.start()
V.limit = tonumber(ARGV[1])
redis.call('SET', V.P, V.limit)
F.put('limit', V.limit)
F.purge()
F.derive()
local ids = redis.call('ZRANGE', V.W, 0, -1)
if ids[#ids] == '' then ids[#ids] = nil end
local infos = F.hmget(ids)
for i = 1, #ids do
  local w, ch = string.match(infos[i] or '', '^q(%d+):%d+:%d:(.*)$')
  if w and tonumber(w) > V.limit then
    F.dequeue(ids[i])
    F.put('#' .. ids[i], false)
    F.note(ch, ids[i], -1)
  end
end
F.grant()
return {1, 0, V.limit, F.finish(), V.now_us}
