-- ARGV: limit, channel. Returns {used, waiting, limit, notes}.
F.start()
F.purge()
F.check()
F.grant()
return {V.used, V.qn, V.limit, F.finish(), V.now_us}
