local t = redis.call('TIME')
local a, b, c, d = 1763890000000123, 1763890000123, 1763890004000, 17
local f = string.format
for i = 1, 10 do redis.call('HSET', KEYS[1], 'luacost1', f('%d', a), 'luacost2', f('%d', b), 'luacost3', f('%d', c), 'luacost4', f('%d', d)) end
return 1
