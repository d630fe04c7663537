-- reap: return jobs whose lease has expired (deadline <= server now) to pending.
-- KEYS[1] active   emq:{Q}:active
-- KEYS[2] pending  emq:{Q}:pending
-- ARGV[1] prefix   the row-key prefix emq:{Q}:job:
-- Reply: the number of ids returned (at most 100 expired members are read a call)
-- attempts is left alone: the next claim mints a new token, which makes the old one stale.
-- Checks: an expired member that is not a well-formed JOB id ('JOB' then 11 base62 digits) is
-- malformed, and an id with no hash at its row key is an orphan; both are dropped from active
-- and never written into pending or into a row (no transition writes a row that is not there).
-- When any were dropped the reply is {returned, {orphans}, {malformed}} instead of the bare
-- count.
-- Error: EMQARG when the prefix is not the queue's own (include/argument.lua; nothing written)
--@include argument
--@include move_due
local bad = prefix_of(ARGV[1], KEYS[1])
if bad then
  return bad
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('ZRANGE', KEYS[1], '-inf', string.format('%d', now), 'BYSCORE', 'LIMIT', 0, 100)
return move_due(expired)
