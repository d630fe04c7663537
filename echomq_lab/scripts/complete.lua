-- complete: retire a job whose lease the caller still holds.
-- KEYS[1] active  emq:{Q}:active
-- KEYS[2] row     emq:{Q}:job:<ID>
-- ARGV[1] id      the branded id
-- ARGV[2] token   the attempts value claim handed to this worker
-- Reply: 1 completed (row and active member deleted) | 0 the row is gone
-- Error: EMQSTALE when the token is not the row's attempts, or the id holds no lease
-- Error: EMQROW when the row's attempts is not a whole number (checked before any write)
-- Error: EMQARG when an argument is malformed (include/argument.lua; nothing is written)
--@include argument
--@include fence
local bad = branded('id', ARGV[1]) or row_of(KEYS[2], ARGV[1], KEYS[1])
  or decimal('token', ARGV[2], '1', '4611686018427387904')
if bad then
  return bad
end
local attempts = redis.call('HGET', KEYS[2], 'attempts')
if not attempts then
  return 0
end
local refused = fence(attempts)
if refused then
  return refused
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
return 1
