local t = redis.call('TIME')
local S, L, W, E, P = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local mychan = ARGV[2]
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local fresh, latest, pend, order = false, 0, {}, {}
local limit, used, tok, exp, minl, mine, qseq, hn = 0, 0, 0, 0, 0, 0, 0, 0
return 1
