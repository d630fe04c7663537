-- claim: lease the oldest pending job to a worker and mint its fencing token.
-- KEYS[1] pending  emq:{Q}:pending
-- KEYS[2] active   emq:{Q}:active
-- ARGV[1] prefix   the row-key prefix emq:{Q}:job: (the row key is prefix .. id)
-- ARGV[2] lease    lease length in ms (positive integer)
-- Reply: {} when nothing is pending | {id, payload, token}
--        token is the row's new attempts: every later call on this lease must present it
-- Checks, all made before the first write, looking at no more than 100 pending members a call:
--   a member that is not a well-formed JOB id ('JOB' then 11 base62 digits) is malformed and an
--   id with no hash at its row key is an orphan; both are dropped from pending, never given a
--   row or a token, and claim moves on to the next member. When any were dropped the reply
--   gains two lists, {orphans} and {malformed}: {id, payload, token, {orphans}, {malformed}},
--   or {{orphans}, {malformed}} alone when no claimable job was found.
-- Error: EMQROW when the oldest job's row has no whole-number attempts or no payload; nothing
--        is written, not even the drops.
--@include well_formed
local function whole(s) -- 0..10^18-1 written plainly: no sign, no leading zero (the same in
  -- claim.lua, complete.lua, retry.lua and extend.lua)
  return #s <= 18 and string.find(s, '^[0-9]+$') ~= nil and (#s == 1 or string.sub(s, 1, 1) ~= '0')
end
local orphans, malformed = {}, {}
local id, got
for i = 0, 99 do
  local member = redis.call('ZRANGE', KEYS[1], i, i)[1]
  if not member then
    break
  end
  if not well_formed(member) then
    malformed[#malformed + 1] = member
  elseif redis.call('TYPE', ARGV[1] .. member).ok ~= 'hash' then
    orphans[#orphans + 1] = member
  else
    id = member
    got = redis.call('HMGET', ARGV[1] .. id, 'attempts', 'payload')
    break
  end
end
if id then
  local attempts = got[1]
  if not attempts or not whole(attempts) then
    return redis.error_reply('EMQROW job ' .. id .. ' has no whole-number attempts; nothing was claimed')
  end
  if not got[2] then
    return redis.error_reply('EMQROW job ' .. id .. ' has no payload; nothing was claimed')
  end
end
for _, member in ipairs(orphans) do
  redis.call('ZREM', KEYS[1], member)
end
for _, member in ipairs(malformed) do
  redis.call('ZREM', KEYS[1], member)
end
local dropped = #orphans + #malformed > 0
if not id then
  if dropped then
    return {orphans, malformed}
  end
  return {}
end
redis.call('ZREM', KEYS[1], id)
local row = ARGV[1] .. id
local token = redis.call('HINCRBY', row, 'attempts', 1)
redis.call('HSET', row, 'state', 'active')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], string.format('%d', now + tonumber(ARGV[2])), id)
if dropped then
  return {id, got[2], token, orphans, malformed}
end
return {id, got[2], token}
