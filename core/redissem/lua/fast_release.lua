-- The fast path of release.lua, run before the prelude (see
-- fast_acquire.lua): a holder's release, and the grants it makes to the
-- head of the queue, when nothing in T has come due and the keys' expiry
-- needs no extension. It decides with the general code's blocks
-- (inline.lua: TOMBSTONE, HEAD, HOLD, ADD_NOTE, PUBLISH_NOTES). The heads
-- it pops are put back, and the general code runs instead, if any of them
-- is not a plain grant (HEAD_GRANT). A holder at a level above 0, or waiters
-- in Q (fw, lib_fair.lua), are the general code's too.
do
  local S, T, W, id, mychan, m = KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[2], state
  local limit, exp, minl, mine, cur = tonumber(m[1]), tonumber(m[4]), tonumber(m[5]), tonumber(m[6]), m[12]
  if limit and exp and minl and mine and cur and NONE_DUE(now, minl, mine) and (tonumber(m[11]) or 0) == 0
      and string.find(cur, '^h%d+:%d+:%d+$') then
    local used0, tok0, hn0, qn0 = tonumber(m[2]) or 0, tonumber(m[3]) or 0, tonumber(m[8]) or 0, tonumber(m[9]) or 0
    local used, tok, hn, qn = used0 - WEIGHT(cur), tok0, hn0 - 1, qn0
    local xn, at, latest, nminl, nmine = tonumber(m[10]) or 0, 0, 0, minl, mine
    -- The tombstone: code 1 (released), or 4 (released by id).
    TOMBSTONE(tonumber(ARGV[4]) or 10000, xn, at, latest, nmine)
    local set = {'xn', xn, '#' .. id, ARGV[5] == '1' and 'x4' or 'x1'}
    local tz = {OFF + at, id}
    local popped, notes, ok = nil, nil, true
    -- F.grant, for plain grants only.
    while qn > 0 and used < limit do
      local h = redis.call('ZPOPMIN', W)
      local mem = h[1]
      if mem == nil or mem == '' then
        if mem then redis.call('ZADD', W, h[2], mem) end
        ok = false
        break
      end
      popped = popped or {}
      popped[#popped + 1] = h[2]
      popped[#popped + 1] = mem
      local kind, pw, pttl, ch, wid
      HEAD(mem, limit, used, mychan, kind, pw, pttl, ch, wid)
      if kind ~= HEAD_GRANT then ok = false; break end
      qn = qn - 1
      HOLD(pw, pttl, used, hn, tok, at, latest, nminl)
      tz[#tz + 1] = at
      tz[#tz + 1] = wid
      set[#set + 1] = '#' .. wid
      set[#set + 1] = HOLDER(pw, tok, now_us)
      ADD_NOTE(notes, ch, wid, tok, now_us)
    end
    if ok and not NEAR_EXPIRY(latest, exp) then
      if used ~= used0 then set[#set + 1] = 'used'; set[#set + 1] = used end
      if tok ~= tok0 then set[#set + 1] = 'tok'; set[#set + 1] = NUM(tok) end
      if hn ~= hn0 then set[#set + 1] = 'hn'; set[#set + 1] = hn end
      if qn ~= qn0 then set[#set + 1] = 'qn'; set[#set + 1] = qn end
      if nminl ~= minl then set[#set + 1] = 'minl'; set[#set + 1] = NUM(nminl) end
      if nmine ~= mine then set[#set + 1] = 'mine'; set[#set + 1] = NUM(nmine) end
      redis.call('HSET', S, unpack(set))
      redis.call('ZADD', T, unpack(tz))
      local mine_notes = {}
      if notes then PUBLISH_NOTES(notes, mychan, mine_notes) end
      return {1, 0, limit, mine_notes, now_us}
    end
    if popped then redis.call('ZADD', W, unpack(popped)) end
  end
end
