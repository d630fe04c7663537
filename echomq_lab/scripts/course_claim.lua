-- course_claim: FOR DEMONSTRATION ONLY. claim as the course states it: pop the oldest pending
-- id and mint its token, with no look at whether a row stands behind the id. After the course's
-- complete retired a reaped job (its id left in pending, its row deleted), this hands the id out
-- again: HINCRBY makes a new row whose attempts starts over at 1, with no payload. The lab's
-- claim drops such an id instead. No handle in jobs runs it; echomq_lab.lessons.unfenced does.
-- KEYS[1] pending  emq:{Q}:pending
-- KEYS[2] active   emq:{Q}:active
-- ARGV[1] prefix   the row-key prefix emq:{Q}:job: (the row key is prefix .. id)
-- ARGV[2] lease    lease length in ms (positive integer)
-- Reply: {} when nothing is pending | {id, payload (false when the row holds none), token}
local popped = redis.call('ZPOPMIN', KEYS[1])
if #popped == 0 then
  return {}
end
local id = popped[1]
local row = ARGV[1] .. id
local token = redis.call('HINCRBY', row, 'attempts', 1)
redis.call('HSET', row, 'state', 'active')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], string.format('%d', now + tonumber(ARGV[2])), id)
return {id, redis.call('HGET', row, 'payload'), token}
