-- reprocess: send a dead-lettered job back to pending for another round.
-- KEYS[1] row      emq:{Q}:job:<ID>
-- KEYS[2] dead     emq:{Q}:dead
-- KEYS[3] pending  emq:{Q}:pending
-- ARGV[1] id       the branded id
-- Reply: 1 back in pending | -1 the row is gone
-- Error: EMQSTATE when the job is not dead (nothing changes)
-- Error: EMQARG when the id is no branded id or the row key not its own (nothing changes)
--@include argument
local bad = branded('id', ARGV[1]) or row_of(KEYS[1], ARGV[1], KEYS[2])
if bad then
  return bad
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  local state = redis.call('HGET', KEYS[1], 'state') or 'unknown'
  return redis.error_reply('EMQSTATE the job is ' .. state .. ', not dead')
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[1], 'last_error')
redis.call('HSET', KEYS[1], 'state', 'pending')
redis.call('ZADD', KEYS[3], 0, ARGV[1])
return 1
