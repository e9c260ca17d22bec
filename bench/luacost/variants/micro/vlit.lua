local t = redis.call('TIME')
local V = {
  S = KEYS[1], L = KEYS[2], W = KEYS[3], E = KEYS[4], P = KEYS[5],
  mychan = ARGV[2],
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2]),
  fresh = false, latest = 0, pend = {}, order = {},
  limit = 0, used = 0, tok = 0, exp = 0, minl = 0, mine = 0, qseq = 0, hn = 0,
  cache = false, o = false, notes = false, stop = false,
}
return 1
