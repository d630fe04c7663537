-- extend: push the lease deadline of a job the caller still holds.
-- KEYS[1] active  emq:{Q}:active
-- KEYS[2] row     emq:{Q}:job:<ID>
-- ARGV[1] id      the branded id
-- ARGV[2] token   the attempts value claim handed to this worker
-- ARGV[3] lease   new lease length in ms from server now (1 .. 31536000000)
-- Reply: the new deadline in ms | -1 the row is gone
-- Error: EMQSTALE when the token is stale or the id holds no lease (a reaped id is never re-added)
-- Error: EMQROW when the row's attempts is not a whole number (checked before any write)
-- Error: EMQARG when an argument is malformed (include/argument.lua; nothing is written)
--@include argument
--@include fence
local bad = branded('id', ARGV[1]) or row_of(KEYS[2], ARGV[1], KEYS[1])
  or decimal('token', ARGV[2], '1', '4611686018427387904') or decimal('lease', ARGV[3], '1', '31536000000')
if bad then
  return bad
end
local attempts = redis.call('HGET', KEYS[2], 'attempts')
if not attempts then
  return -1
end
local refused = fence(attempts)
if refused then
  return refused
end
local t = redis.call('TIME')
local deadline = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], 'XX', string.format('%d', deadline), ARGV[1])
return deadline
