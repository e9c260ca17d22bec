local t = redis.call('TIME')
for i = 1, 10 do local m = redis.call('TIME') end
return 1
