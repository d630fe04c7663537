-- snapshot: read one queue whole, atomically, for the lab's views and its drift check.
-- KEYS[1] pending   emq:{Q}:pending
-- KEYS[2] active    emq:{Q}:active
-- KEYS[3] schedule  emq:{Q}:schedule
-- KEYS[4] dead      emq:{Q}:dead
-- ARGV[1] pattern   emq:{Q}:job:* (the queue's rows, found by name: a row in no set shows too)
-- Reply: {now_ms, pending, active, schedule, dead, rows, others}
--        each set is a flat {member, score, ...}; rows is a flat {row key, {field, value, ...}, ...}
--        others is a flat {key, type, ...}: a set key that is not a sorted set, and the keys
--        under the row prefix that are not hashes (another client's string at
--        emq:{Q}:job:lock, say); each is read by TYPE only, and its set is shown empty
-- Read-only. It lists row keys by pattern because a drifted row may be in no set at all.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local reply = {now}
local rows, others = {}, {}
for i = 1, 4 do
  local kind = redis.call('TYPE', KEYS[i]).ok
  if kind == 'zset' or kind == 'none' then
    reply[i + 1] = redis.call('ZRANGE', KEYS[i], 0, -1, 'WITHSCORES')
  else
    reply[i + 1] = {}
    others[#others + 1] = KEYS[i]
    others[#others + 1] = kind
  end
end
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  local kind = redis.call('TYPE', key).ok
  if kind == 'hash' then
    rows[#rows + 1] = key
    rows[#rows + 1] = redis.call('HGETALL', key)
  else
    others[#others + 1] = key
    others[#others + 1] = kind
  end
end
reply[6] = rows
reply[7] = others
return reply
