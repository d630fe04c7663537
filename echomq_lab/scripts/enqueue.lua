-- enqueue: write a new job row and make it claimable.
-- The JOB-kind and duplicate gate is repeated whole in schedule.lua on purpose: each script reads alone.
-- KEYS[1] row      emq:{Q}:job:<ID>
-- KEYS[2] pending  emq:{Q}:pending
-- ARGV[1] id       the branded id (must be in the JOB namespace)
-- ARGV[2] payload  opaque bytes, stored verbatim
-- Reply: 1 enqueued | 0 duplicate (the row exists; nothing is written)
-- Error: EMQKIND when the id is not a JOB id (before any write)
local id = ARGV[1]
if string.sub(id, 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND ' .. id .. ' is not a JOB id')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
-- The one HSET that fixes the field set of a row.
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', '0', 'payload', ARGV[2])
redis.call('ZADD', KEYS[2], 0, id)
return 1
