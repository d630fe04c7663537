-- complete: retire a job whose lease the caller still holds.
-- The fence check is repeated whole in retry.lua and extend.lua on purpose: each script reads alone.
-- KEYS[1] active  emq:{Q}:active
-- KEYS[2] row     emq:{Q}:job:<ID>
-- ARGV[1] id      the branded id
-- ARGV[2] token   the attempts value claim handed to this worker
-- Reply: 1 completed (row and active member deleted) | 0 the row is gone
-- Error: EMQSTALE when the token is not the row's attempts, or the id holds no lease
-- Error: EMQROW when the row's attempts is not a whole number (checked before any write)
local function whole(s) -- 0..10^18-1 written plainly: no sign, no leading zero (the same in
  -- claim.lua, complete.lua, retry.lua and extend.lua)
  return #s <= 18 and string.find(s, '^[0-9]+$') ~= nil and (#s == 1 or string.sub(s, 1, 1) ~= '0')
end
local attempts = redis.call('HGET', KEYS[2], 'attempts')
if not attempts then
  return 0
end
if attempts ~= ARGV[2] then
  if not whole(attempts) then
    return redis.error_reply('EMQROW job ' .. ARGV[1] .. ' has no whole-number attempts; nothing was changed')
  end
  return redis.error_reply('EMQSTALE token ' .. ARGV[2] .. ' is stale, the row\'s attempts is ' .. attempts)
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return redis.error_reply('EMQSTALE token ' .. ARGV[2] .. ' holds no lease: the job is not active')
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
return 1
