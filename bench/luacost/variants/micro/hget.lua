local t = redis.call('TIME')
for i = 1, 10 do local m = redis.call('HGET', KEYS[1], 'limit') end
return 1
