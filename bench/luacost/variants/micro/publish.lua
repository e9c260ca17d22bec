local t = redis.call('TIME')
for i = 1, 10 do redis.call('PUBLISH', ARGV[2], 'b7kq2m9x4c1:12345:1763890000000000') end
return 1
