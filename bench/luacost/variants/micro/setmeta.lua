local t = redis.call('TIME')
local F = {}
local function cold() end
setmetatable(F, {__index = function(f, k) cold(); setmetatable(f, nil); return rawget(f, k) end})
return 1
