-- ARGV: limit, channel, id, tomb_ms. Releases a holder, or takes a waiter
-- out of the queue (a cancelled Acquire; if the grant raced the cancel, the
-- permit is released and passed on), and leaves a tombstone for tomb_ms.
-- Returns {code, 0, limit, notes}: code 1 released, 2 left the queue, 0
-- unknown (lease expired or never held). Idempotent: a repeated run finds
-- the tombstone and returns the first run's code, and a sixth element 1.
local id, ttl = ARGV[3], tonumber(ARGV[4]) or 10000
purge()
local code = 0
local info = redis.call('HGET', HI, id)
local qi = not info and redis.call('HGET', QI, id)
if info then
  used = used - weight_of(info)
  redis.call('HDEL', HI, id)
  redis.call('ZREM', H, id)
  code = 1
elseif qi and is_tomb(qi) then
  return {tonumber(string.sub(qi, 2)), 0, limit, finish(), now_us, 1}
elseif qi then
  redis.call('ZREM', Q, id)
  code = 2
end
tombstone(id, code, ttl)
grant()
return {code, 0, limit, finish(), now_us}
