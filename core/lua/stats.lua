-- ARGV: limit, channel. Returns {used, waiting, limit, notes}.
F.start()
F.purge()
F.derive()
F.grant()
return {V.used, redis.call('ZCOUNT', V.W, '-inf', '(' .. SENTINEL_S), V.limit, F.finish(), V.now_us}
