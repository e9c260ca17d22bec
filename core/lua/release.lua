-- ARGV: limit, channel, id. Releases a holder, or takes a waiter out of the
-- queue (a cancelled Acquire; if the grant raced the cancel, the permit is
-- released and passed on). Returns {code, 0, limit, notes}: code 1 released,
-- 2 left the queue, 0 unknown (lease expired or never held).
local id = ARGV[3]
purge()
local code = 0
local info = redis.call('HGET', HI, id)
if info then
  used = used - weight_of(info)
  redis.call('HDEL', HI, id)
  redis.call('ZREM', H, id)
  code = 1
elseif redis.call('ZREM', Q, id) == 1 then
  redis.call('HDEL', QI, id)
  redis.call('ZREM', QE, id)
  code = 2
end
grant()
return {code, 0, limit, finish(), now_us}
