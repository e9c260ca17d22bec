-- Stores the controller's state unless a state of a later (or the same)
-- window is stored. KEYS[1]: the state's hash.
-- ARGV: window, state (JSON), TTL (ms). Returns 1 if stored, else 0.
local w = tonumber(redis.call('HGET', KEYS[1], 'w') or '0')
if tonumber(ARGV[1]) <= w then
  return 0
end
redis.call('HSET', KEYS[1], 'w', ARGV[1], 's', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
