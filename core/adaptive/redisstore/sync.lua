-- Adds one process's samples of one window and elects the process that
-- computes the window before, in one step.
-- KEYS[1]: the window's hash, KEYS[2]: the previous window's hash,
-- KEYS[3]: the state's hash.
-- ARGV: window, window length (µs), process, samples, latency (µs),
-- failed, timed out, TTL of a window's hash (ms).
-- Returns {0, sec, µs} when the window is not one of the last three (the
-- caller picks it again from the time returned), else {1, sec, µs,
-- elected, samples, latency, failed, timed out, state}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = tonumber(ARGV[1])
local cur = math.floor(now / tonumber(ARGV[2]))
if n < cur - 2 or n > cur then
  return {0, t[1], t[2]}
end
local ttl = tonumber(ARGV[8])
if redis.call('HSETNX', KEYS[1], 'p:' .. ARGV[3], 1) == 1 then
  redis.call('HINCRBY', KEYS[1], 'n', ARGV[4])
  redis.call('HINCRBY', KEYS[1], 'lat', ARGV[5])
  redis.call('HINCRBY', KEYS[1], 'failed', ARGV[6])
  redis.call('HINCRBY', KEYS[1], 'to', ARGV[7])
end
redis.call('PEXPIRE', KEYS[1], ttl)
local elected = 0
local agg = {false, false, false, false}
redis.call('HSETNX', KEYS[2], 'elected', ARGV[3])
if redis.call('HGET', KEYS[2], 'elected') == ARGV[3] then
  elected = 1
  agg = redis.call('HMGET', KEYS[2], 'n', 'lat', 'failed', 'to')
end
redis.call('PEXPIRE', KEYS[2], ttl)
local st = redis.call('HGET', KEYS[3], 's')
return {1, t[1], t[2], elected, agg[1], agg[2], agg[3], agg[4], st}
