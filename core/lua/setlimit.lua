-- ARGV: new limit, channel. Stores the limit for every process, pins it
-- (the meta key no longer expires) and grants waiters under it; every
-- queued request heavier than it fails at once (-1), not only the head.
limit = tonumber(ARGV[1])
redis.call('HSET', M, 'limit', limit, 'pinned', 1)
fresh = true
purge()
derive()
local ids = redis.call('ZRANGE', Q, 0, -1)
local infos = hmget(QI, ids)
for i = 1, #ids do
  local id, info = ids[i], infos[i] or ''
  local w, ch = string.match(info, '^(%d+):%d+:%d:(.*)$')
  if w and tonumber(w) > limit then
    redis.call('ZREM', Q, id)
    redis.call('HDEL', QI, id)
    redis.call('ZREM', QE, id)
    note(ch, id, -1)
  end
end
grant()
return {1, 0, limit, finish(), now_us}
