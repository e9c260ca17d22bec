-- Leased shares: the fleet's queue and the hand-off (share.lua runs these
-- after its own decisions; leased_script.go puts this file before it).
--
-- A process is queued (starved) while the weight of its head waiter, need,
-- is more than its whole share: it cannot serve that waiter even once all
-- its own holders release, so it depends on capacity that others hold.
-- Its entry's qat is the Redis TIME (µs) at which it was first seen so;
-- the queue is the starved entries in qat order (then pid order).

-- SHARE_NOTE tells the process of entry e, on its channel ch (nothing if
-- it has none), its share, whether another process is starved (told) and
-- the version: "pid:share*2+told:ver" (leased_push.go reads it).
local function SHARE_NOTE(ch, e)
  if not ch then return end
  redis.call(string.find(ch, '{', 1, true) and 'SPUBLISH' or 'PUBLISH', ch,
    string.format('%s:%d:%d', e.pid, e.share * 2 + e.told, e.ver))
end

-- STARVED(procs) lists the starved entries, oldest first.
local function STARVED(procs)
  local q = {}
  for _, e in ipairs(procs) do
    if e.need > e.share then q[#q + 1] = e end
  end
  table.sort(q, function(a, b)
    if a.qat ~= b.qat then return a.qat < b.qat end
    return a.pid < b.pid
  end)
  return q
end

-- HANDOFF gives free units to the starved entries in queue order, strictly
-- FIFO: the head takes what it lacks, or all that is free and keeps its
-- place, accumulating, until it has enough (a heavy waiter is not passed
-- by lighter ones). It returns the entries that got units and what is
-- still free.
local function HANDOFF(q, free, bump)
  local got = {}
  for _, e in ipairs(q) do
    if free <= 0 then break end
    local g = math.min(free, e.need - e.share)
    e.share = e.share + g
    free = free - g
    bump(e)
    got[#got + 1] = e
    if e.share < e.need then break end
  end
  return got, free
end
