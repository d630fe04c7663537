-- schedule: write a new job row that runs later (the enqueue_at / enqueue_in handles).
-- KEYS[1] row       emq:{Q}:job:<ID>
-- KEYS[2] pending   emq:{Q}:pending   (KEYS[2], [3], [5] are read only, by the new-row gate)
-- KEYS[3] active    emq:{Q}:active
-- KEYS[4] schedule  emq:{Q}:schedule
-- KEYS[5] dead      emq:{Q}:dead
-- ARGV[1] id        the branded id (must be in the JOB namespace)
-- ARGV[2] payload   the caller's bytes, for the payload field
-- ARGV[3] mode      'at' (ARGV[4] is a run-at time) or 'in' (ARGV[4] is a delay from server now)
-- ARGV[4] ms        integer milliseconds: a run-at 0 .. 4503599627370496, a delay 0 .. 31536000000
-- Reply: 1 scheduled | 0 duplicate (the row exists; nothing is written)
-- Error: EMQKIND when the id is not a JOB id (before any write)
-- Error: EMQROW when the id has no row but still stands in one of the four sets (no write)
-- Error: EMQARG when an argument is malformed (include/argument.lua; nothing is written)
--@include argument
--@include new_row_gate
local function when()
  if ARGV[3] == 'at' then
    return decimal('ms', ARGV[4], '0', '4503599627370496')
  elseif ARGV[3] == 'in' then
    return decimal('ms', ARGV[4], '0', '31536000000')
  end
  return redis.error_reply('EMQARG mode must be at or in')
end
local bad = branded('id', ARGV[1]) or row_of(KEYS[1], ARGV[1], KEYS[2]) or when()
if bad then
  return bad
end
local id = ARGV[1]
local refused = new_row_gate(id)
if refused then
  return refused
end
local run_at = tonumber(ARGV[4])
if ARGV[3] == 'in' then
  local t = redis.call('TIME')
  run_at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + run_at
end
redis.call('HSET', KEYS[1], 'state', 'scheduled', 'attempts', '0', 'payload', ARGV[2])
redis.call('ZADD', KEYS[4], string.format('%d', run_at), id)
return 1
