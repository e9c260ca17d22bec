local t = redis.call('TIME')
return 1
