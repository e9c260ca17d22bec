local t = redis.call('TIME')
return {1, 0, 1, {}, tonumber(t[1]), 0, 0}
