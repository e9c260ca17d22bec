local t = redis.call('TIME')
local a, b, c, d = 1763890000000123, 1763890000123, 1763890004000, 17
for i = 1, 10 do redis.call('HSET', KEYS[1], 'luacost1', a, 'luacost2', b, 'luacost3', c, 'luacost4', d) end
return 1
