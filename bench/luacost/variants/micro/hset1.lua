local t = redis.call('TIME')
for i = 1, 10 do redis.call('HSET', KEYS[1], 'luacost1', i) end
return 1
