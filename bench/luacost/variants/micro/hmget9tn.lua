local t = redis.call('TIME')
for i = 1, 10 do
local m = redis.call('HMGET', KEYS[1], 'limit', 'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn', '#' .. ARGV[3])
local c = {['#' .. ARGV[3]] = m[9] or false}
local o = {}
for i = 2, 8 do o[i] = tonumber(m[i]) or 0 end
local limit, used, tok, exp, minl, mine, qseq, hn = tonumber(m[1]), o[2], o[3], o[4], o[5], o[6], o[7], o[8]
end
return 1
