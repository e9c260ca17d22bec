-- The clock of every script on the prelude (lib.lua): Redis TIME, read once.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
-- The state as read by the scripts with fast paths (state.lua), which the
-- prelude's start() then uses instead of reading it again.
local state = false
