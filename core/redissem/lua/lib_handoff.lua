-- The prelude, continued (lib.lua): the hand-off path.
-- The hand-off path (queue, grant to the head, notify) is made when a
-- script first asks F for one of its functions, the rest after it.
local function warm()

-- publish sends the notes of other processes and returns the caller's.
function F.publish()
  local mine = {}
  for ch, l in pairs(V.notes) do
    if ch == V.mychan then
      mine = l
    else
      PUBLISH(ch, table.concat(l, ','))
    end
  end
  return mine
end

-- note records a grant (or a rejection) for waiter id of channel ch; at is
-- the grant's time (µs), now unless given.
function F.note(ch, id, tk, at)
  V.notes = V.notes or {}
  local l = V.notes[ch]
  if not l then l = {}; V.notes[ch] = l end
  l[#l + 1] = NOTE(id, tk, at or V.now_us)
end

-- lease_end and e_end record a new lease end, or a new waiter or tombstone
-- end: minl is a lower bound of the earliest lease end and mine of the
-- earliest end of any kind in T (purge() does nothing before either), and
-- an end that comes within GRACE/2 of the keys' expiry makes finish()
-- extend it.
function F.lease_end(at)
  if at > V.latest then V.latest = at end
  if at < V.minl then V.minl = at end
  return at
end
function F.e_end(at)
  if at > V.latest then V.latest = at end
  if at < V.mine then V.mine = at end
  return at
end

-- alive records the end of a waiter's liveness (ALIVE).
function F.alive(ttl) return F.e_end(ALIVE(V.now, ttl)) end

-- parse splits W's member m (MEMBER) into weight, ttl, channel and id.
function F.parse(m)
  local w, ttl, n, rest = MEMBER_PARTS(m)
  if not w then return nil end
  n = tonumber(n)
  return tonumber(w), tonumber(ttl), string.sub(rest, 1, n), string.sub(rest, n + 1)
end

-- queue puts waiter id at the tail.
function F.queue(id, w, ttl)
  local m = MEMBER(id, w, ttl, V.mychan)
  V.qseq, V.qn = V.qseq + 1, V.qn + 1
  redis.call('ZADD', V.W, V.qseq, m)
  F.tadd(OFF + F.alive(ttl), id)
  F.put('#' .. id, 'q' .. m)
end

-- grant_head grants to the head of the queue, popped from W with its
-- arrival sequence seq, or skips it; V.stop is set if it does not fit (it
-- goes back to the head, and grant() stops there).
function F.grant_head(m, seq)
  local w, ttl, ch, id = F.parse(m)
  if w and w <= V.limit and V.used + w > V.limit then
    redis.call('ZADD', V.W, seq, m)
    V.stop = true
    return
  end
  V.qn = V.qn - 1
  if not w then
    return -- not a member this code makes: dropped
  elseif w > V.limit then
    F.put('#' .. id, false)
    redis.call('ZREM', V.T, id)
    F.note(ch, id, -1)
  elseif ch == V.mychan or F.listeners(ch) > 0 then
    -- hold() counts the holder, and its lease end replaces the waiter's
    -- end in T.
    F.note(ch, id, F.hold(id, w, ttl))
  else
    -- Nobody listens: the waiter's process is gone (its connection
    -- closed), so skip the waiter instead of granting a permit that nobody
    -- will use for a whole lease. Counted before anything is sent: a
    -- subscription left on a replica (a demoted master) still receives
    -- what the master publishes, but is not counted here.
    F.put('#' .. id, false)
    redis.call('ZREM', V.T, id)
  end
end

-- listeners returns how many clients of this server listen on ch.
function F.listeners(ch) return LISTENERS(ch) end

-- Milliseconds until purge() would reap the earliest lease, or -1 if none.
function F.next_expiry() return NEXT_EXPIRY(V.minl, V.now) end

end -- warm
