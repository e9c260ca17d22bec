local t = redis.call('TIME')
local cur = 'h1:1763890000000123:1763890000000000'
for i = 1, 10 do local w = tonumber(string.match(cur, '^h(%d+):')) end
return 1
