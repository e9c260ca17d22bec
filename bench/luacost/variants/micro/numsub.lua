local t = redis.call('TIME')
for i = 1, 10 do local h = redis.call('PUBSUB', 'NUMSUB', ARGV[2]) end
return 1
