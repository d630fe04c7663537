-- snapshot: read one queue whole, atomically, for the lab's views and its drift check.
-- KEYS[1] pending   emq:{Q}:pending
-- KEYS[2] active    emq:{Q}:active
-- KEYS[3] schedule  emq:{Q}:schedule
-- KEYS[4] dead      emq:{Q}:dead
-- ARGV[1] pattern   emq:{Q}:job:* (the queue's rows, found by name: a row in no set shows too)
-- Reply: {now_ms, pending, active, schedule, dead, rows}
--        each set is a flat {member, score, ...}; rows is a flat {row key, {field, value, ...}, ...}
-- Read-only. It lists row keys by pattern because a drifted row may be in no set at all.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local reply = {now}
for i = 1, 4 do
  reply[i + 1] = redis.call('ZRANGE', KEYS[i], 0, -1, 'WITHSCORES')
end
local rows = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  rows[#rows + 1] = key
  rows[#rows + 1] = redis.call('HGETALL', key)
end
reply[6] = rows
return reply
