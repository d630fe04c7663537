-- retry: give up a lease after a failure; try again later, or dead-letter at the cap.
-- KEYS[1] active    emq:{Q}:active
-- KEYS[2] schedule  emq:{Q}:schedule
-- KEYS[3] dead      emq:{Q}:dead
-- KEYS[4] row       emq:{Q}:job:<ID>
-- ARGV[1] id        the branded id
-- ARGV[2] token     the attempts value claim handed to this worker
-- ARGV[3] delay     ms from server now until the next try (0 .. 31536000000)
-- ARGV[4] max       the attempts ceiling (1 .. 4611686018427387904)
-- ARGV[5] error     text kept in the row's last_error field
-- Reply: 'scheduled' | 'dead'
-- Error: EMQSTALE when the row is gone, the token is stale, or the id holds no lease
-- Error: EMQROW when the row's attempts is not a whole number (checked before any write)
-- Error: EMQARG when an argument is malformed (include/argument.lua; nothing is written)
--@include argument
--@include fence
local bad = branded('id', ARGV[1]) or row_of(KEYS[4], ARGV[1], KEYS[1])
  or decimal('token', ARGV[2], '1', '4611686018427387904') or decimal('delay', ARGV[3], '0', '31536000000')
  or decimal('max', ARGV[4], '1', '4611686018427387904')
if bad then
  return bad
end
local attempts = redis.call('HGET', KEYS[4], 'attempts')
if not attempts then
  return redis.error_reply('EMQSTALE token ' .. ARGV[2] .. ' is stale: the job is gone')
end
local refused = fence(attempts)
if refused then
  return refused
end
redis.call('ZREM', KEYS[1], ARGV[1])
if tonumber(attempts) >= tonumber(ARGV[4]) then
  redis.call('HSET', KEYS[4], 'state', 'dead', 'last_error', ARGV[5])
  redis.call('ZADD', KEYS[3], 0, ARGV[1])
  return 'dead'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[4], 'state', 'scheduled', 'last_error', ARGV[5])
redis.call('ZADD', KEYS[2], string.format('%d', now + tonumber(ARGV[3])), ARGV[1])
return 'scheduled'
