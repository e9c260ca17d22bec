local t = redis.call('TIME')
local tok, now_us = '1763890000000123', t[1] .. string.sub('00000' .. t[2], -6)
for i = 1, 10 do local s = 'h' .. 1 .. ':' .. tok .. ':' .. now_us end
return 1
