-- The fast paths of acquire.lua, run before the prelude (scripts.go puts
-- this file first). A new id is granted at once (nobody queued, a weight
-- that fits and is not 0) or queued behind others (every permit held),
-- when nothing in T has come due and the keys' expiry needs no extension.
-- Each makes exactly the writes and the reply of the general code after it
-- (the differential test in core/fastpath_test.go runs both on the same
-- states and clock), but with locals instead of the prelude's tables and
-- closures, which were most of a script's own cost. Every other case falls
-- through to the general code, which reads the state again; nothing is
-- written before that.
do
  local S, id, w, ttl = KEYS[1], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
  local t = redis.call('TIME')
  local m = redis.call('HMGET', S, 'limit', 'used', 'tok', 'exp', 'minl', 'mine', 'qseq', 'hn', 'qn', '#' .. id)
  local limit, exp, minl, mine = tonumber(m[1]), tonumber(m[4]), tonumber(m[5]), tonumber(m[6])
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local deadline = tonumber(ARGV[7]) or 0
  if limit and exp and minl and mine and not m[10] and now < minl and now < mine
      and w <= limit and (deadline <= 0 or now_us <= deadline) then
    local used, qn = tonumber(m[2]) or 0, tonumber(m[9]) or 0
    if qn == 0 and used + w <= limit and w > 0 then
      -- Granted: F.hold's writes, as F.finish sends them (a weight of 0
      -- writes no 'used': the general code grants it).
      local at = now + ttl
      if at + GRACE / 2 <= exp then -- no refresh
        local tok0, hn = tonumber(m[3]) or 0, tonumber(m[8]) or 0
        local tok = math.max(tok0 + 1, now_us)
        local tokv, rec = tok >= 1e14 and string.format('%d', tok) or tok, string.format('h%d:%d:%d', w, tok, now_us)
        if at < minl then
          redis.call('HSET', S, 'tok', tokv, 'hn', hn + 1, '#' .. id, rec, 'used', used + w, 'minl', at)
        else
          redis.call('HSET', S, 'tok', tokv, 'hn', hn + 1, '#' .. id, rec, 'used', used + w)
        end
        redis.call('ZADD', KEYS[2], at, id)
        return {1, tok, limit, {}, now_us}
      end
    elseif qn > 0 and used >= limit and ARGV[6] ~= '1' and ARGV[9] ~= '1' then
      -- Queued behind others: F.queue's writes.
      local alive = now + math.floor(ttl * 2 / 3)
      if alive + GRACE / 2 <= exp then
        local ch, qseq = ARGV[2], (tonumber(m[7]) or 0) + 1
        local member = string.format('%d:%d:%s:%d:', w, ttl, ARGV[8] or '0', #ch) .. ch .. id
        redis.call('ZADD', KEYS[3], qseq, member)
        if alive < mine then
          redis.call('HSET', S, 'qseq', qseq, 'qn', qn + 1, '#' .. id, 'q' .. member, 'mine', alive)
        else
          redis.call('HSET', S, 'qseq', qseq, 'qn', qn + 1, '#' .. id, 'q' .. member)
        end
        redis.call('ZADD', KEYS[2], OFF + alive, id)
        local next = -1
        if minl < SENTINEL then next = math.max(minl - now, 0) end
        return {2, next, limit, {}, now_us}
      end
    end
  end
end
