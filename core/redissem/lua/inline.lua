-- Expressions that the fast paths (fast_*.lua) and the prelude (lib.lua)
-- share. They are not sent: core/scripts.go replaces every call of these
-- names in a script by the body, with the arguments in place of the
-- parameters (in parentheses unless a name or a literal), since making a
-- Lua function costs more on every run than the fast paths' whole own
-- work. Each definition is one line: local function NAME(params) return
-- body end; names are upper case, bodies refer to no local of the script.

-- The counters of S, in the order in which start() reads them.
local function STATE_FIELDS() return 'limit', 'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn', 'qn', 'xn' end
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
-- A grant note: "id:token:time_us".
local function NOTE(id, tk, at) return id .. ':' .. INT(tk) .. ':' .. INT(at) end
-- A Cluster shard channel carries the semaphore's hash tag, so it lives in
-- the semaphore's slot; LISTENERS is how many clients of this server listen
-- on ch, PUBLISH sends msg on it.
local function IS_SHARD(ch) return string.find(ch, '{', 1, true) end
local function LISTENERS(ch) return redis.call('PUBSUB', IS_SHARD(ch) and 'SHARDNUMSUB' or 'NUMSUB', ch)[2] end
local function PUBLISH(ch, msg) return redis.call(IS_SHARD(ch) and 'SPUBLISH' or 'PUBLISH', ch, msg) end
