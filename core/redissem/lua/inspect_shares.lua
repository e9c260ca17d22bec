-- Inspect of the leased-shares mode (Leased.Inspect): reads the shares
-- hash (share.lua's S) and changes nothing. KEYS: S. Returns {now_us,
-- fields and values of S}: the caller leaves out the entries whose lease
-- ended (exp <= now), which share.lua drops when it next runs.
local t = redis.call('TIME')
return {tonumber(t[1]) * 1000000 + tonumber(t[2]), redis.call('HGETALL', KEYS[1])}
