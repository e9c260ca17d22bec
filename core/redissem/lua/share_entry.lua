-- Leased shares: one entry of the shares hash, and the kept sum of the
-- shares, for the scripts that read only the entries they change
-- (share_give.lua, share_take.lua; leased_script.go puts this file before
-- them). An entry 'p:' .. pid is
-- "share:demand:inuse:waiting:need:exp:epoch:qat:ver:told" (share.lua).
-- The field 's' is "v:sum": the sum of the live shares when the version
-- counter 'v' was v. Every change of a share takes a new version, so the
-- sum is current only while 'v' is still v; a lease that ended since
-- leaves its share in the sum, which then overstates what is in use and
-- never admits more than the limit.

local ENTRY = '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$'

-- ENTRY_READ returns pid p's entry from its value v, or nil if there is
-- none or its lease ended before now (ms).
local function ENTRY_READ(p, v, now)
  if not v then return nil end
  local a, b, c, d, e, f, g, h, i, j = string.match(v, ENTRY)
  if not j or tonumber(f) <= now then return nil end
  return {pid = p, share = tonumber(a), demand = tonumber(b), inuse = tonumber(c), waiting = tonumber(d),
    need = tonumber(e), exp = tonumber(f), epoch = tonumber(g), qat = tonumber(h), ver = tonumber(i), told = tonumber(j)}
end

-- ENTRIES_READ reads the whole shares hash S: every entry but pid's
-- whose lease has not ended by now (ms), by pid; every process's channel,
-- by pid; and whether some entry's lease had ended.
local function ENTRIES_READ(S, pid, now)
  local all = redis.call('HGETALL', S)
  local by, chans, ended = {}, {}, false
  for i = 1, #all, 2 do
    local kind, p = string.sub(all[i], 1, 2), string.sub(all[i], 3)
    if kind == 'c:' then
      chans[p] = all[i + 1]
    elseif kind == 'p:' and p ~= pid then
      local e = ENTRY_READ(p, all[i + 1], now)
      if e then by[p] = e else ended = true end
    end
  end
  return by, chans, ended
end

local function ENTRY_ENC(e)
  return string.format('%d:%d:%d:%d:%d:%d:%d:%d:%d:%d', e.share, e.demand, e.inuse, e.waiting, e.need, e.exp,
    e.epoch, e.qat, e.ver, e.told)
end

-- SUM_READ returns the kept sum from the field s if it is current at
-- version V, else nil.
local function SUM_READ(s, V)
  if not s then return nil end
  local v, sum = string.match(s, '^(%d+):(%d+)$')
  if not sum or tonumber(v) ~= V then return nil end
  return tonumber(sum)
end

local function SUM_ENC(V, sum)
  return string.format('%d:%d', V, sum)
end

-- EXTEND adds to writes the key's new expiry, a lease ending at exp plus
-- GRACE, when the expiry set (x, or pinned: none) falls less than GRACE/2
-- after that lease, and returns it; else nil. (x only grows here: the key
-- outlives every lease by GRACE/2 at least, as share.lua sets it.)
local function EXTEND(pinned, x, exp, writes)
  if pinned or exp + GRACE / 2 <= tonumber(x) then return nil end
  writes[#writes + 1] = 'x'
  writes[#writes + 1] = string.format('%d', exp + GRACE)
  return exp + GRACE
end
