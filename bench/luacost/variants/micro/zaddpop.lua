local t = redis.call('TIME')
for i = 1, 10 do redis.call('ZADD', KEYS[3], 1000 + i, 'luacostx'); redis.call('ZPOPMIN', KEYS[3]) end
redis.call('ZADD', KEYS[3], 'NX', '9007199254740992', '')
return 1
