local t = redis.call('TIME')
local cur = 'h1:1763890000000123:1763890000000000'
for i = 1, 10 do local k = string.sub(cur, 1, 1) end
return 1
