-- ARGV: limit, channel, then pairs (id, token). Run with WithReplicaAck
-- only (KEYS[7] given), in a pipeline before WAIT, for grants that an
-- earlier WAIT did not confirm: returns the ids that are holders here with
-- that token, and writes KEYS[7] (it expires), so that the WAIT after it
-- covers every earlier write of this server. Changes nothing else.
local ok = {}
for i = 3, #ARGV, 2 do
  local v = redis.call('HGET', KEYS[1], '#' .. ARGV[i])
  if v and string.match(v, '^h%d+:(%d+)') == ARGV[i + 1] then ok[#ok + 1] = ARGV[i] end
end
redis.call('SET', KEYS[7], '1', 'PX', 1000)
return ok
