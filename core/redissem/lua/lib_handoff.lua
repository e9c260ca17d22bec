-- The prelude, continued (lib.lua): the hand-off path.
-- The hand-off path (queue, grant to the head, notify) is made when a
-- script first asks F for one of its functions, the rest after it.
local function warm()

-- publish sends the notes of other processes and returns the caller's.
function F.publish()
  local mine = {}
  PUBLISH_NOTES(V.notes, V.mychan, mine)
  return mine
end

-- note records a grant (or a rejection) for waiter id of channel ch; at is
-- the grant's time (µs), now unless given.
function F.note(ch, id, tk, at)
  ADD_NOTE(V.notes, ch, id, tk, at or V.now_us)
end

-- lease_end records a new lease end at (LEASE_END) and returns it.
function F.lease_end(at)
  LEASE_END(at, V.latest, V.minl)
  return at
end

-- alive records the end of the liveness of a waiter with lease ttl (ALIVE)
-- and returns it.
function F.alive(ttl)
  local at = ALIVE(V.now, ttl)
  OTHER_END(at, V.latest, V.mine)
  return at
end

-- parse splits W's member m (MEMBER), or the part of one of Q's members
-- (lib_fair.lua) that is one, into weight, ttl, channel and id.
function F.parse(m)
  if string.sub(m, 1, 1) == 'f' then m = select(4, F.fparse(m)) or '' end
  local w, ttl, n, rest = MEMBER_PARTS(m)
  if not w then return nil end
  n = tonumber(n)
  return tonumber(w), tonumber(ttl), string.sub(rest, 1, n), string.sub(rest, n + 1)
end

-- queue puts waiter id at the tail.
function F.queue(id, w, ttl)
  local m, at = MEMBER(id, w, ttl, V.mychan), 0
  QUEUE(ttl, V.qseq, V.qn, at, V.latest, V.mine)
  redis.call('ZADD', V.W, V.qseq, m)
  F.tadd(OFF + at, id)
  F.put('#' .. id, 'q' .. m)
end

-- grant_head grants to the head of the queue, popped from W with its
-- arrival sequence seq, or skips it (HEAD); V.stop is set if it does not
-- fit now (it goes back to the head, and grant() stops there).
function F.grant_head(m, seq)
  local kind, w, ttl, ch, id
  HEAD(m, V.limit, V.used, V.mychan, kind, w, ttl, ch, id)
  if kind == HEAD_WAIT then
    redis.call('ZADD', V.W, seq, m)
    V.stop = true
    return
  end
  V.qn = V.qn - 1
  if kind == HEAD_GRANT then
    -- hold() counts the holder, and its lease end replaces the waiter's
    -- end in T.
    F.note(ch, id, F.hold(id, w, ttl))
  elseif kind == HEAD_REJECT then
    F.drop(id)
    redis.call('ZREM', V.T, id)
    F.note(ch, id, -1)
  elseif kind == HEAD_SKIP then
    -- Nobody listens: the waiter's process is gone (its connection
    -- closed), so skip the waiter instead of granting a permit that nobody
    -- will use for a whole lease. Counted before anything is sent: a
    -- subscription left on a replica (a demoted master) still receives
    -- what the master publishes, but is not counted here.
    F.drop(id)
    redis.call('ZREM', V.T, id)
  end -- HEAD_DROP: a member that this code does not make is dropped
end

-- listeners returns how many clients of this server listen on ch.
function F.listeners(ch) return LISTENERS(ch) end

-- Milliseconds until purge() would reap the earliest lease, or -1 if none.
function F.next_expiry() return NEXT_EXPIRY(V.minl, V.now) end

end -- warm
