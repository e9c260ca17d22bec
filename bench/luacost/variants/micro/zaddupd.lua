local t = redis.call('TIME')
redis.call('ZADD', KEYS[2], 1000, 'luacosty')
for i = 1, 10 do redis.call('ZADD', KEYS[2], 1000 + i, 'luacosty') end
return 1
