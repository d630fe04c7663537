-- unguarded_enqueue: FOR DEMONSTRATION ONLY. enqueue.lua without its check of the queue's sets.
-- It shows the hole that check closes: an id whose row was lost (evicted) while its lease
-- still stood in active gets a fresh row with attempts 0, and the next claim hands out a
-- token a live worker already holds. No handle in jobs runs it; echomq_lab.unfenced does.
-- KEYS[1] row      emq:{Q}:job:<ID>
-- KEYS[2] pending  emq:{Q}:pending
-- ARGV[1] id       the branded id (must be in the JOB namespace)
-- ARGV[2] payload  the caller's bytes, for the payload field
-- Reply: 1 enqueued | 0 duplicate (the row exists; nothing is written)
-- Error: EMQKIND when the id is not a JOB id (before any write)
if string.sub(ARGV[1], 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND ' .. ARGV[1] .. ' is not a JOB id')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', '0', 'payload', ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
