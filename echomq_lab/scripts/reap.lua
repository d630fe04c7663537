-- reap: return jobs whose lease has expired (deadline <= server now) to pending.
-- KEYS[1] active   emq:{Q}:active
-- KEYS[2] pending  emq:{Q}:pending
-- ARGV[1] prefix   the row-key prefix emq:{Q}:job:
-- Reply: the number of ids returned (at most 100 a call)
-- attempts is left alone: the next claim mints a new token, which makes the old one stale.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('ZRANGE', KEYS[1], '-inf', string.format('%d', now), 'BYSCORE', 'LIMIT', 0, 100)
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], 0, id)
  redis.call('HSET', ARGV[1] .. id, 'state', 'pending')
end
return #expired
