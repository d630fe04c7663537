-- promote: move scheduled jobs that are due (run-at <= server now) to pending.
-- KEYS[1] schedule  emq:{Q}:schedule
-- KEYS[2] pending   emq:{Q}:pending
-- ARGV[1] prefix    the row-key prefix emq:{Q}:job:
-- ARGV[2] batch     the most due members to read in one call (1 .. 100000)
-- Reply: the number of ids moved
-- Checks: a due member that is not a well-formed JOB id ('JOB' then 11 base62 digits) is
-- malformed, and an id with no hash at its row key is an orphan; both are dropped from schedule
-- and never written into pending or into a row (no transition writes a row that is not there).
-- When any were dropped the reply is {moved, {orphans}, {malformed}} instead of the bare
-- count.
-- Error: EMQARG when an argument is malformed (include/argument.lua; nothing is written)
--@include argument
--@include move_due
local bad = prefix_of(ARGV[1], KEYS[1]) or decimal('batch', ARGV[2], '1', '100000')
if bad then
  return bad
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGE', KEYS[1], '-inf', string.format('%d', now), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))
return move_due(due)
