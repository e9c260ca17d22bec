-- ARGV: limit, channel. Returns {used, waiting, limit, notes, now_us, 0, 0,
-- 0, levels}: levels is, for each of the MaxLevels levels, the weight held
-- and the waiters, then the number of queues with waiters (lib_fair.lua).
F.start()
F.purge()
F.check()
F.grant()
local levels = F.level_stats()
return {V.used, V.qn + V.fw, V.limit, F.finish(), V.now_us, 0, 0, 0, levels}
