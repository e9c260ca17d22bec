-- ARGV: limit, channel, id, weight, ttl_ms, try (1 or 0), deadline_us (0:
-- none), probe (1: report whether anybody here listens on the caller's
-- channel), and, only when there is one to store (the fast paths leave
-- such a call to this code): note ('' none; kept only for a NOTED id),
-- owner ('' none: the caller's process's owner record is fresh enough),
-- and, for a call with a flow or a level (lib_fair.lua; never on the fast
-- paths), flow ('' the default flow), level, hand (the flow's queues, as
-- core/internal/fair.Hand deals them, comma-separated) and fairness (the
-- caller's configured Fairness, JSON, used if none is stored).
-- A grant skips a queued waiter whose process no longer listens.
-- Returns {code, value, limit, notes}: code 1 granted (value = token),
-- 0 no permit (try), 2 queued (value = ms to the earliest lease end, or -1),
-- -1 weight above the limit, -3 refused: delivered after deadline_us (Redis
-- TIME), -4 refused: id was already released or left the queue, -5 the
-- level is not below the number of levels (value: that number).
-- Once waiters of flows or levels wait (Q), a new waiter is queued and the
-- grants made (F.fgrant), which may grant it at once: it is then reported
-- queued, with its grant among the notes.
-- Idempotent: a second run for an id that holds returns its token, one for
-- a queued id reports it queued; neither changes anything, and both add a
-- sixth element 1 (an earlier reply was lost, with any grants it carried).
-- The seventh is 1 if the caller queued but nobody here listens on its
-- channel (probe = 1 only). The eighth is 1 if the state was made afresh
-- and this run stored no owner record: the caller's process has none
-- here. All are left out when 0.
local id, w, ttl, try = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
local deadline = tonumber(ARGV[7]) or 0
local flowed, level = ARGV[11] ~= nil, tonumber(ARGV[12]) or 0
F.start(id)
F.purge()
if flowed then F.fairness(ARGV[14]) end -- stores the caller's if none is
local free = F.grant() -- nobody queued
local code, value, again, deaf = 0, 0, 0, 0
local cur = F.get('#' .. id)
local kind = cur and string.sub(cur, 1, 1)
if kind == 'h' then
  code, value, again = 1, tonumber(string.match(cur, '^h%d+:(%d+)')), 1
elseif kind == 'x' then
  code = -4
elseif kind == 'q' then
  code, value, again = 2, F.next_expiry(), 1
elseif deadline > 0 and V.now_us > deadline then
  code = -3
elseif w > V.limit then
  code = -1
elseif flowed and level >= F.fairness(ARGV[14]).n then
  code, value = -5, F.fairness().n
else
  -- A full semaphore with nobody queued: first make sure the counts are
  -- right (keys lost apart), at the cost of two commands.
  if free and V.used + w > V.limit then F.check(); free = F.grant() end
  if free and V.used + w <= V.limit then
    if flowed then code, value = 1, F.fhold(id, w, ttl, level) else code, value = 1, F.hold(id, w, ttl) end
  elseif not try then
    -- Probe first (before any write): with no subscriber of the caller's
    -- channel here, its subscription is on another server (a demoted
    -- master) and the caller must subscribe again.
    if ARGV[8] == '1' and F.listeners(V.mychan) == 0 then deaf = 1 end
    if flowed and (ARGV[11] ~= '' or level > 0) then
      F.fqueue(id, w, ttl, level, ARGV[11], ARGV[13])
    else
      F.queue(id, w, ttl)
    end
    if V.fw > 0 and V.used < V.limit then F.fgrant() end
    -- The hint: ms to the earliest lease end (a lower bound, without
    -- another command: a waiter that reaps early is told again).
    code, value = 2, F.next_expiry()
  end
end
-- The note of a new holder or waiter, and the owner record of its process.
local lone = V.fresh -- no owner record of the caller's process is left
if ARGV[9] and again == 0 and (code == 1 or code == 2) then
  if ARGV[9] ~= '' and NOTED(id) then F.put('@' .. id, INT(V.now_us) .. ':' .. ARGV[9]) end
  if (ARGV[10] or '') ~= '' then F.own(BASE(id), ARGV[10], 2 * ttl); lone = false end
end
if again == 0 and deaf == 0 and not lone then return {code, value, V.limit, F.finish(), V.now_us} end
return {code, value, V.limit, F.finish(), V.now_us, again, deaf, lone and 1 or 0}
