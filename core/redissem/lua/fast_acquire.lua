-- The fast paths of acquire.lua, run before the prelude (lib.lua), on the
-- clock and state that head.lua and state.lua read for both. A new id is
-- granted at once (nobody queued, a weight that fits and is not 0) or
-- queued behind others (every permit held), when nothing in T has come due
-- and the keys' expiry needs no extension. Each decides and counts as the
-- general code does, with the same blocks (inline.lua: HOLD, QUEUE) on
-- locals instead of the prelude's tables and closures, which were most of
-- a script's own cost, and writes at once what the general code's
-- F.finish would write (fast_paths_match_general_test.go runs both on the
-- same states and clock). Every other case falls through to the general
-- code, and so does an acquire with an owner record to store (ARGV[10],
-- about once per lease TTL: see acquire.lua), one with a level above 0
-- (ARGV[12]) and a queued one with a flow (ARGV[11]); nothing is written
-- before. A grant also needs nobody queued in Q (fw, lib_fair.lua): a call
-- of a flow at level 0 is then granted as any other.
-- A note (ARGV[9], for a NOTED id) is written with the rest.
do
  local S, id, w, ttl, m = KEYS[1], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), state
  local limit, exp, minl, mine = tonumber(m[1]), tonumber(m[4]), tonumber(m[5]), tonumber(m[6])
  local deadline = tonumber(ARGV[7]) or 0
  local note = ARGV[9] and ARGV[9] ~= '' and NOTED(id) and ARGV[9]
  if limit and exp and minl and mine and not m[12] and (not ARGV[10] or ARGV[10] == '') and (not ARGV[11] or ARGV[12] == '0') and NONE_DUE(now, minl, mine)
      and w <= limit and (deadline <= 0 or now_us <= deadline) then
    local used, qn, latest, at = tonumber(m[2]) or 0, tonumber(m[9]) or 0, 0, 0
    if qn == 0 and used + w <= limit and w > 0 and (tonumber(m[11]) or 0) == 0 then
      -- Granted (a weight of 0 writes no 'used': the general code grants it).
      local hn, tok, nminl = tonumber(m[8]) or 0, tonumber(m[3]) or 0, minl
      HOLD(w, ttl, used, hn, tok, at, latest, nminl)
      if not NEAR_EXPIRY(latest, exp) then
        local rec = HOLDER(w, tok, now_us)
        if note then
          redis.call('HSET', S, 'tok', NUM(tok), 'hn', hn, '#' .. id, rec, 'used', used, 'minl', NUM(nminl),
            '@' .. id, INT(now_us) .. ':' .. note)
        elseif nminl ~= minl then
          redis.call('HSET', S, 'tok', NUM(tok), 'hn', hn, '#' .. id, rec, 'used', used, 'minl', nminl)
        else
          redis.call('HSET', S, 'tok', NUM(tok), 'hn', hn, '#' .. id, rec, 'used', used)
        end
        redis.call('ZADD', KEYS[2], at, id)
        return {1, tok, limit, {}, now_us}
      end
    elseif qn > 0 and used >= limit and ARGV[6] ~= '1' and ARGV[8] ~= '1' and not ARGV[11] then
      -- Queued behind others.
      local qseq, nmine = tonumber(m[7]) or 0, mine
      QUEUE(ttl, qseq, qn, at, latest, nmine)
      if not NEAR_EXPIRY(latest, exp) then
        local member = MEMBER(id, w, ttl, ARGV[2])
        redis.call('ZADD', KEYS[3], qseq, member)
        if note then
          redis.call('HSET', S, 'qseq', qseq, 'qn', qn, '#' .. id, 'q' .. member, 'mine', NUM(nmine),
            '@' .. id, INT(now_us) .. ':' .. note)
        elseif nmine ~= mine then
          redis.call('HSET', S, 'qseq', qseq, 'qn', qn, '#' .. id, 'q' .. member, 'mine', nmine)
        else
          redis.call('HSET', S, 'qseq', qseq, 'qn', qn, '#' .. id, 'q' .. member)
        end
        redis.call('ZADD', KEYS[2], OFF + at, id)
        return {2, NEXT_EXPIRY(minl, now), limit, {}, now_us}
      end
    end
  end
end
