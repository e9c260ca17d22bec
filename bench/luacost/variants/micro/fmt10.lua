local t = redis.call('TIME')
local tok, now_us = 1763890000000123, 1763890000000000
for i = 1, 10 do local s = string.format('h%d:%d:%d', 1, tok + i, now_us) end
return 1
