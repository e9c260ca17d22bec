local t = redis.call('TIME')
local m = {'1', '1', '1763890000000123', '1763890060000', '1763890010000', '1763890004000', '12345', '1'}
for i = 1, 10 do for j = 1, 8 do local x = tonumber(m[j]) end end
return 1
