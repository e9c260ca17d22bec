-- What the fast paths (fast_*.lua) and the prelude (lib*.lua) share: every
-- decision and every change of the counters that both make. None of it is
-- sent as a function: lua_inline.go replaces every call of these names in a
-- script by the body, with the arguments in place of the parameters (in
-- parentheses unless a name, a field or a literal), since making a Lua
-- function costs more on every run than the fast paths' whole own work.
-- Names are upper case. An expression is one line: local function
-- NAME(params) return body end. A block spans lines, ends with "end" at the
-- start of a line, and is called as a statement; it runs as "do body end",
-- and what it assigns to a parameter is assigned to the variable or field
-- that the caller passed there. Bodies refer to no local of the script but
-- the clock (now, now_us) and the constants (const.lua); a block's own
-- locals end in "_", so that they never hide a caller's name.

-- The counters of S, in the order in which start() reads them.
local function STATE_FIELDS() return 'limit', 'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn', 'qn', 'xn', 'fw' end
-- Nothing in T has come due: purge() has nothing to do.
local function NONE_DUE(now, minl, mine) return (now < minl and now < mine) end
-- An end at that comes within GRACE/2 of the keys' expiry makes finish()
-- extend it.
local function NEAR_EXPIRY(at, exp) return (at + GRACE / 2 > exp) end
-- A grant's fencing token: above the last one, and at least the grant time.
local function NEXT_TOKEN(tok, now_us) return math.max(tok + 1, now_us) end
-- A holder's field of S.
local function HOLDER(w, tok, now_us) return string.format('h%d:%d:%d', w, tok, now_us) end
-- The weight of a holder's field.
local function WEIGHT(h) return tonumber(string.match(h, '^h(%d+):')) end
-- A waiter's member of W, and its parts: weight, ttl, the channel's length,
-- then the channel and the id.
local function MEMBER(id, w, ttl, ch) return string.format('%d:%d:%d:', w, ttl, #ch) .. ch .. id end
local function MEMBER_PARTS(m) return string.match(m, '^(%d+):(%d+):(%d+):(.*)$') end
-- A waiter stays queued for 2/3 of its lease TTL after each heartbeat (sent
-- every TTL/3), so a dead process's waiters always leave the queue before
-- the leases renewed by its last heartbeat end.
local function ALIVE(now, ttl) return (now + math.floor(ttl * 2 / 3)) end
-- Milliseconds until purge() would reap the earliest lease, or -1 if none.
local function NEXT_EXPIRY(minl, now) return (minl >= SENTINEL and -1 or math.max(minl - now, 0)) end
-- Lua 5.1 prints large numbers in exponent form: integers are formatted
-- exactly (INT), and so are counters written to S when large (NUM).
local function INT(x) return string.format('%d', x) end
local function NUM(v) return (v >= 1e14 and INT(v) or v) end
-- The ids of a process are '<base>.<counter>' (core/redissem's newID: a
-- base of 16 random characters for all of them), with '_n' after the
-- counter when its Acquire gave a note. BASE is the owner record's id of
-- id's process, '<base>.' ('' for an id of another form), and NOTED tells
-- whether id may have a note, the field '@'..id (lib.lua).
local function BASE(id) return (string.match(id, '^[^.:]+%.') or '') end
local function NOTED(id) return (string.sub(id, -2) == '_n') end
-- A grant note: "id:token:time_us".
local function NOTE(id, tk, at) return id .. ':' .. INT(tk) .. ':' .. INT(at) end
-- A Cluster shard channel carries the semaphore's hash tag, so it lives in
-- the semaphore's slot; LISTENERS is how many clients of this server listen
-- on ch, PUBLISH sends msg on it.
local function IS_SHARD(ch) return string.find(ch, '{', 1, true) end
local function LISTENERS(ch) return redis.call('PUBSUB', IS_SHARD(ch) and 'SHARDNUMSUB' or 'NUMSUB', ch)[2] end
local function PUBLISH(ch, msg) return redis.call(IS_SHARD(ch) and 'SPUBLISH' or 'PUBLISH', ch, msg) end

-- An end at of a lease, or of anything else in T (a waiter's liveness, a
-- tombstone): minl is a lower bound of the earliest lease end and mine of
-- the earliest end of any kind (purge() does nothing before either), and
-- latest is the latest end this script set (NEAR_EXPIRY).
local function LEASE_END(at, latest, minl)
  if at > latest then latest = at end
  if at < minl then minl = at end
end
local function OTHER_END(at, latest, mine)
  if at > latest then latest = at end
  if at < mine then mine = at end
end

-- A grant of weight w for ttl ms: the holders' weight and number, the new
-- fencing token tok, and the lease's end at.
local function HOLD(w, ttl, used, hn, tok, at, latest, minl)
  used, hn = used + w, hn + 1
  tok = NEXT_TOKEN(tok, now_us)
  at = now + ttl
  LEASE_END(at, latest, minl)
end

-- A waiter queued with lease ttl: its place qseq in the queue, the
-- waiters' number, and the end of its liveness at.
local function QUEUE(ttl, qseq, qn, at, latest, mine)
  qseq, qn = qseq + 1, qn + 1
  at = ALIVE(now, ttl)
  OTHER_END(at, latest, mine)
end

-- A tombstone kept for ttl ms: the tombstones' number and its end at.
local function TOMBSTONE(ttl, xn, at, latest, mine)
  xn = xn + 1
  at = now + ttl
  OTHER_END(at, latest, mine)
end

-- What a grant does with m, the member of W popped from the head of the
-- queue, with used of limit held: kind is HEAD_GRANT (it fits, and its
-- process listens: on mychan, the caller's, or as LISTENERS counts),
-- HEAD_WAIT (it fits the limit but not now, and stays the head), HEAD_DROP
-- (not a member that this code makes), HEAD_REJECT (heavier than the
-- limit) or HEAD_SKIP (nobody listens: its process is gone); w, ttl, ch and
-- id are its parts (unset for HEAD_DROP).
local function HEAD(m, limit, used, mychan, kind, w, ttl, ch, id)
  local w_, ttl_, n_, rest_ = MEMBER_PARTS(m)
  w = tonumber(w_)
  if not w then
    kind = HEAD_DROP
  else
    n_ = tonumber(n_)
    ttl, ch, id = tonumber(ttl_), string.sub(rest_, 1, n_), string.sub(rest_, n_ + 1)
    if w > limit then
      kind = HEAD_REJECT
    elseif used + w > limit then
      kind = HEAD_WAIT
    elseif ch == mychan or LISTENERS(ch) > 0 then
      kind = HEAD_GRANT
    else
      kind = HEAD_SKIP
    end
  end
end

-- Adds to notes (channel -> list) the note of a grant (or a rejection) for
-- waiter id of channel ch: token tk, at (µs) the grant's time.
local function ADD_NOTE(notes, ch, id, tk, at)
  notes = notes or {}
  local l_ = notes[ch]
  if not l_ then l_ = {}; notes[ch] = l_ end
  l_[#l_ + 1] = NOTE(id, tk, at)
end

-- Publishes the notes of other processes than mychan's; mine is set to
-- those of mychan, if any. With a seventh key (WithReplicaAck) it publishes
-- nothing: the other processes' notes are added to mine, one string
-- '>'..channel..'\n'..notes per channel, for the caller to publish once
-- the replicas have the grants.
local function PUBLISH_NOTES(notes, mychan, mine)
  local held_ = false
  for ch_, l_ in pairs(notes) do
    if ch_ == mychan then mine = l_
    elseif KEYS[7] then
      held_ = held_ or {}
      held_[#held_ + 1] = '>' .. ch_ .. '\n' .. table.concat(l_, ',')
    else PUBLISH(ch_, table.concat(l_, ',')) end
  end
  if held_ then
    for i_ = 1, #held_ do mine[#mine + 1] = held_[i_] end
  end
end
