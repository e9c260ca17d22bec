local t = redis.call('TIME')
for i = 1, 10 do local h = redis.call('ZRANGE', KEYS[3], 0, 0) end
return 1
