-- ARGV: limit, channel, id, weight, ttl_ms, try (1 or 0), deadline_us (0:
-- none), check (1: skip this waiter if its process stops listening).
-- Returns {code, value, limit, notes}: code 1 granted (value = token),
-- 0 no permit (try), 2 queued (value = ms to the earliest lease end, or -1),
-- -1 weight above the limit, -3 refused: delivered after deadline_us (Redis
-- TIME), -4 refused: id was already released or left the queue.
-- Idempotent: a second run for an id that holds returns its token, one for
-- a queued id reports it queued; neither changes anything, and both add a
-- sixth element 1 (an earlier reply was lost, with any grants it carried).
-- The seventh is 1 if the caller queued but nobody here listens on its
-- channel (check = 1 only).
local id, w, ttl, try = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
local deadline = tonumber(ARGV[7]) or 0
purge()
local free = grant() -- nobody queued
local code, value, again, deaf = 0, 0, 0, 0
local held = redis.call('HGET', HI, id)
local qi = not held and redis.call('HGET', QI, id)
if held then
  code, value, again = 1, tonumber(string.match(held, '^%d+:(%d+)')), 1
elseif qi then
  if is_tomb(qi) then code = -4 else code, value, again = 2, next_expiry(), 1 end
elseif deadline > 0 and now_us > deadline then
  code = -3
elseif w > limit then
  code = -1
else
  if free and used + w > limit then derive() end
  if free and used + w <= limit then
    code, value = 1, hold(id, w, ttl)
  elseif not try then
    -- Probe first (before any write): with no subscriber of the caller's
    -- channel here, its subscription is on another server (a demoted
    -- master) and the caller must subscribe again.
    if ARGV[8] == '1' and publish(mychan, '') == 0 then deaf = 1 end
    if free then new_keys(Q, QI, QE) end -- an empty zset does not exist
    local seq = redis.call('HINCRBY', M, 'qseq', 1)
    redis.call('ZADD', Q, seq, id)
    redis.call('HSET', QI, id, int(w) .. ':' .. int(ttl) .. ':' .. (ARGV[8] or '0') .. ':' .. mychan)
    redis.call('ZADD', QE, alive(ttl), id)
    code, value = 2, next_expiry()
  end
end
return {code, value, limit, finish(), now_us, again, deaf}
