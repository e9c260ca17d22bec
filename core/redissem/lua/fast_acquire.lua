-- The fast paths of acquire.lua, run before the prelude (lib.lua), on the
-- clock and state that head.lua and state.lua read for both. A new id is
-- granted at once (nobody queued, a weight that fits and is not 0) or
-- queued behind others (every permit held), when nothing in T has come due
-- and the keys' expiry needs no extension. Each makes the writes and the
-- reply of the general code after it (F.hold or F.queue, then F.finish),
-- with the same expressions (inline.lua) on locals instead of the
-- prelude's tables and closures, which were most of a script's own cost
-- (core/fastpath_test.go runs both on the same states and clock). Every
-- other case falls through to the general code; nothing is written before.
do
  local S, id, w, ttl, m = KEYS[1], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), state
  local limit, exp, minl, mine = tonumber(m[1]), tonumber(m[4]), tonumber(m[5]), tonumber(m[6])
  local deadline = tonumber(ARGV[7]) or 0
  if limit and exp and minl and mine and not m[11] and NONE_DUE(now, minl, mine)
      and w <= limit and (deadline <= 0 or now_us <= deadline) then
    local used, qn = tonumber(m[2]) or 0, tonumber(m[9]) or 0
    if qn == 0 and used + w <= limit and w > 0 then
      -- Granted: F.hold's writes, as F.finish sends them (a weight of 0
      -- writes no 'used': the general code grants it).
      local at = now + ttl
      if not NEAR_EXPIRY(at, exp) then
        local tok = NEXT_TOKEN(tonumber(m[3]) or 0, now_us)
        local rec, hn = HOLDER(w, tok, now_us), (tonumber(m[8]) or 0) + 1
        if at < minl then
          redis.call('HSET', S, 'tok', NUM(tok), 'hn', hn, '#' .. id, rec, 'used', used + w, 'minl', at)
        else
          redis.call('HSET', S, 'tok', NUM(tok), 'hn', hn, '#' .. id, rec, 'used', used + w)
        end
        redis.call('ZADD', KEYS[2], at, id)
        return {1, tok, limit, {}, now_us}
      end
    elseif qn > 0 and used >= limit and ARGV[6] ~= '1' and ARGV[8] ~= '1' then
      -- Queued behind others: F.queue's writes.
      local alive = ALIVE(now, ttl)
      if not NEAR_EXPIRY(alive, exp) then
        local qseq = (tonumber(m[7]) or 0) + 1
        local member = MEMBER(id, w, ttl, ARGV[2])
        redis.call('ZADD', KEYS[3], qseq, member)
        if alive < mine then
          redis.call('HSET', S, 'qseq', qseq, 'qn', qn + 1, '#' .. id, 'q' .. member, 'mine', alive)
        else
          redis.call('HSET', S, 'qseq', qseq, 'qn', qn + 1, '#' .. id, 'q' .. member)
        end
        redis.call('ZADD', KEYS[2], OFF + alive, id)
        return {2, NEXT_EXPIRY(minl, now), limit, {}, now_us}
      end
    end
  end
end
