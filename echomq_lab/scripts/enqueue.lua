-- enqueue: write a new job row and make it claimable.
-- KEYS[1] row       emq:{Q}:job:<ID>
-- KEYS[2] pending   emq:{Q}:pending
-- KEYS[3] active    emq:{Q}:active    (KEYS[3..5] are read only, by the new-row gate)
-- KEYS[4] schedule  emq:{Q}:schedule
-- KEYS[5] dead      emq:{Q}:dead
-- ARGV[1] id        the branded id (must be in the JOB namespace)
-- ARGV[2] payload   the caller's bytes, for the payload field
-- Reply: 1 enqueued | 0 duplicate (the row exists; nothing is written)
-- Error: EMQKIND when the id is not a JOB id (before any write)
-- Error: EMQROW when the id has no row but still stands in one of the four sets (no write)
-- Error: EMQARG when the id is no branded id or the row key not its own (nothing is written)
--@include argument
--@include new_row_gate
local bad = branded('id', ARGV[1]) or row_of(KEYS[1], ARGV[1], KEYS[2])
if bad then
  return bad
end
local id = ARGV[1]
local refused = new_row_gate(id)
if refused then
  return refused
end
-- The one HSET that fixes the field set of a row.
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', '0', 'payload', ARGV[2])
redis.call('ZADD', KEYS[2], 0, id)
return 1
