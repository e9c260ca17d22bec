-- KEYS: a semaphore's meta hash (KEYS[1] of the other scripts).
-- ARGV: floor. Raises the semaphore's last fencing token ('tok') to at least
-- floor, so that every later grant on this master gets a larger token. A
-- quorum permit's token is the largest of its masters' tokens; raising the
-- others to it makes tokens increase across grants that share a master.
-- Does nothing if the hash is gone (the master forgot the semaphore).
-- Returns 1 if the token is now >= floor, 0 if the hash is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local cur = tonumber(redis.call('HGET', KEYS[1], 'tok')) or 0
local floor = tonumber(ARGV[1])
if floor > cur then
  redis.call('HSET', KEYS[1], 'tok', string.format('%d', floor))
end
return 1
