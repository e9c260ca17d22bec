local t = redis.call('TIME')
for i = 1, 10 do redis.call('ZADD', KEYS[2], 1000 + i, 'luacostx'); redis.call('ZREM', KEYS[2], 'luacostx') end
return 1
