local t = redis.call('TIME')
for i = 1, 10 do
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn', '#' .. ARGV[3])
end
return 1
