-- reap: return jobs whose lease has expired (deadline <= server now) to pending.
-- The orphan/malformed check is repeated whole in claim.lua and promote.lua on purpose: each script reads alone.
-- KEYS[1] active   emq:{Q}:active
-- KEYS[2] pending  emq:{Q}:pending
-- ARGV[1] prefix   the row-key prefix emq:{Q}:job:
-- Reply: the number of ids returned (at most 100 expired members are read a call)
-- attempts is left alone: the next claim mints a new token, which makes the old one stale.
-- Checks: an expired member that is not a well-formed JOB id ('JOB' then 11 base62 digits) is
-- malformed, and an id with no hash at its row key is an orphan; both are dropped from active
-- and never written into pending or into a row (no transition writes a row that is not there).
-- When any were dropped the reply is {returned, {orphans}, {malformed}} instead of the bare
-- count.
local MAX = 'AzL8n0Y58m7' -- 2^63-1 in base62: the largest snowflake an id may carry
local function well_formed(s) -- the same check in claim.lua, reap.lua and promote.lua
  if #s ~= 14 or string.sub(s, 1, 3) ~= 'JOB' or not string.find(s, '^[0-9A-Za-z]+$', 4) then
    return false
  end
  for i = 4, 14 do
    local a, b = string.byte(s, i), string.byte(MAX, i - 3)
    if a ~= b then
      return a < b
    end
  end
  return true
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('ZRANGE', KEYS[1], '-inf', string.format('%d', now), 'BYSCORE', 'LIMIT', 0, 100)
local moved, orphans, malformed = 0, {}, {}
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[1], id)
  if not well_formed(id) then
    malformed[#malformed + 1] = id
  elseif redis.call('TYPE', ARGV[1] .. id).ok ~= 'hash' then
    orphans[#orphans + 1] = id
  else
    redis.call('ZADD', KEYS[2], 0, id)
    redis.call('HSET', ARGV[1] .. id, 'state', 'pending')
    moved = moved + 1
  end
end
if #orphans + #malformed > 0 then
  return {moved, orphans, malformed}
end
return moved
