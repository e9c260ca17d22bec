local t = redis.call('TIME')
for i = 1, 10 do local x = {} end
return 1
