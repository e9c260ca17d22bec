-- Constants of every distsem script: scripts.go puts this file first,
-- before the fast paths (fast_*.lua) and the prelude (lib.lua), and
-- leased_script.go before share.lua.
local GRACE = 60000   -- keys outlive the last lease or waiter by this much
local SLACK = 100     -- dead waiters and tombstones go at most SLACK ms late
local SENTINEL = 9007199254740992 -- 2^53, above every end and sequence
local SENTINEL_S = '9007199254740992'
-- In T a lease scores its end, and every other end (a waiter's liveness, a
-- tombstone's) scores OFF + its end: leases first, each kind in end order,
-- so both are reaped, and both earliest ends found, with range commands.
-- (Ends in ms stay below OFF, 10^13, until the year 2286.)
local OFF = 10000000000000
-- What a grant does with the head of the queue (HEAD, in inline.lua).
local HEAD_GRANT, HEAD_WAIT, HEAD_DROP, HEAD_REJECT, HEAD_SKIP = 1, 2, 3, 4, 5
