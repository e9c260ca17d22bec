local t = redis.call('TIME')
for i = 1, 10 do redis.call('HSET', KEYS[1], 'luacost1', i, 'luacost2', i, 'luacost3', i, 'luacost4', i, 'luacost5', i, 'luacost6', i, 'luacost7', i, 'luacost8', i) end
return 1
