-- browser_prelude: run once in each fengari state before any script (echomq_lab.browser_lua).
-- fengari is Lua 5.3; Valkey runs Lua 5.1. This makes 5.3 answer as 5.1 where the protocol's
-- scripts could notice: numbers as doubles (tonumber), '%d' for any whole double, tostring of
-- a float as 5.1 prints it, a global unpack, and a collectgarbage that does nothing.
collectgarbage = function() return 0 end
unpack = table.unpack
local format, find, sub, mtype = string.format, string.find, string.sub, math.type
local whole_d = '%%[-+ #0]*%d*[di]$'
string.format = function(fmt, ...)
  local args = table.pack(...)
  if type(fmt) ~= 'string' or not find(fmt, '%', 1, true) then
    return format(fmt, ...)
  end
  local out, i, n = {}, 1, 0
  while true do
    local s, e = find(fmt, '%%[-+ #0]*%d*%.?%d*[%a%%]', i)
    if not s then break end
    local spec = sub(fmt, s, e)
    if spec ~= '%%' then
      n = n + 1
      local v = args[n]
      if find(spec, whole_d) and mtype(v) == 'float' and v == math.floor(v) then
        spec = sub(spec, 1, -2) .. '.0f'
      end
    end
    out[#out + 1] = sub(fmt, i, s - 1) .. spec
    i = e + 1
  end
  out[#out + 1] = sub(fmt, i)
  return format(table.concat(out), ...)
end
local raw_tostring = tostring
tostring = function(v)
  if mtype(v) == 'float' then return format('%.14g', v) end
  return raw_tostring(v)
end
local raw_tonumber = tonumber
tonumber = function(...)
  local v = raw_tonumber(...)
  if mtype(v) == 'integer' then return v + 0.0 end
  return v
end
