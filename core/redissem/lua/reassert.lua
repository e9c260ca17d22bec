-- ARGV: limit, channel, then per holder of the caller's process: id,
-- weight, token, grant_us, end_ms (its lease's end, Redis TIME, as last
-- granted or renewed), level (its priority level: a holder above level 0
-- counts in its level's lu counter, as F.fhold makes it). Run after a failover (the primary changed, or a
-- heartbeat found holders missing), it makes again each holder that this
-- server lacks entirely (no field: its grant was lost with the old
-- primary), with its id, weight, token and grant time, until end_ms if that
-- is still to come, unless that would take more than the limit: the new
-- primary may have granted those permits meanwhile, and the limit is never
-- exceeded here. An id with a field is left alone: a holder already, or a
-- tombstone (released, adopted away, or released by id). The last token
-- stays at least every token made again, so later grants are fenced above
-- them.
-- Returns {lost, over, limit, notes, now_us}: lost = the ids that are not
-- holders here afterwards (over of them refused for the limit).
-- Idempotent: a second run finds the holders it made.
F.start()
F.purge()
local lost, over = {}, 0
for i = 3, #ARGV, 6 do
  local id, w, tk = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local at, ms, l = tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4]) - V.now, tonumber(ARGV[i + 5])
  local cur = F.get('#' .. id)
  if not cur and ms > 0 and V.used + w <= V.limit then
    V.used, V.hn = V.used + w, V.hn + 1
    if tk > V.tok then V.tok = tk end
    F.tadd(F.lease_end(V.now + ms), id)
    if l > 0 then
      F.put('#' .. id, HOLDER(w, tk, at) .. ':' .. l)
      F.cnt('lu' .. l, w)
    else
      F.put('#' .. id, HOLDER(w, tk, at))
    end
  elseif not cur then
    lost[#lost + 1] = id
    if ms > 0 then over = over + 1 end
  elseif string.sub(cur, 1, 1) ~= 'h' then
    lost[#lost + 1] = id
  end
end
return {lost, over, V.limit, F.finish(), V.now_us}
