-- promote: move scheduled jobs that are due (run-at <= server now) to pending.
-- KEYS[1] schedule  emq:{Q}:schedule
-- KEYS[2] pending   emq:{Q}:pending
-- ARGV[1] prefix    the row-key prefix emq:{Q}:job:
-- ARGV[2] batch     the most ids to move in one call (integer >= 1)
-- Reply: the number of ids moved
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGE', KEYS[1], '-inf', string.format('%d', now), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], 0, id)
  redis.call('HSET', ARGV[1] .. id, 'state', 'pending')
end
return #due
