-- ARGV: limit, channel. Returns {used, waiting, limit, notes}.
purge()
derive()
grant()
return {used, redis.call('ZCARD', Q), limit, finish(), now_us}
