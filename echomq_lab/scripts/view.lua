-- view: what a panel shows of one queue, read in one atomic run whose cost is bounded.
-- KEYS[1] pending   emq:{Q}:pending
-- KEYS[2] active    emq:{Q}:active
-- KEYS[3] schedule  emq:{Q}:schedule
-- KEYS[4] dead      emq:{Q}:dead
-- KEYS[5..] row     emq:{Q}:job:<ID> of each job the host follows (declared, built by the host)
-- ARGV[1] prefix    the row-key prefix emq:{Q}:job: (a window member's row key is prefix .. id)
-- ARGV[2] window    how many members of each set to return (lowest scores first, 0 .. 1000),
--                   or 'all'
-- ARGV[3..] ids     the id of each followed row, in the order of KEYS[5..]
-- Reply: {now_ms, sizes, windows, seen, others}
--   sizes   {ZCARD pending, active, schedule, dead}
--   windows {flat {member, score, ...} per set}: pending oldest first, active and schedule
--           soonest first, dead first by id
--   seen    one entry per id looked at: {id, score in each of the four sets (nil: not a member),
--           1 if its row exists else 0, its state field (or nil), its whole row (or nil)}
--           a followed id: its four scores and its whole row (HGETALL of its declared key);
--           a window member: its four scores and its state only (HGET); with window 'all',
--           its whole row instead, and no scores (the windows already hold every member)
--   others  flat {key, type, ...}: each key read that holds another type than the protocol
--           keeps there (another client's string at a set key or at emq:{Q}:job:lock, say)
-- Checks: TYPE of each set key before ZCARD/ZRANGE/ZSCORE, and TYPE of each row key it reads
-- before HGET/HGETALL. A set key that is not a sorted set is read as an empty set, a row key
-- that is not a hash as no row; either is named in others and its content is never read.
-- Scores are returned as the server spells them ('inf' and '-inf' included), members as bytes.
-- Read-only. No KEYS, no SCAN: a row in no set shows only when the host follows it.
-- Error: EMQARG when an argument is malformed (include/argument.lua): the prefix or a row key
-- not this queue's, a window that is neither 'all' nor 0 .. 1000, an id that is no branded id
--@include argument
local function malformed()
  local bad = prefix_of(ARGV[1], KEYS[1])
  if not bad and ARGV[2] ~= 'all' then
    bad = decimal('window', ARGV[2], '0', '1000')
  end
  if not bad and #ARGV ~= #KEYS - 2 then
    bad = redis.error_reply('EMQARG ids must be one for each row key')
  end
  for j = 5, #KEYS do
    bad = bad or branded('id', ARGV[j - 2]) or row_of(KEYS[j], ARGV[j - 2], KEYS[1])
  end
  return bad
end
local bad = malformed()
if bad then
  return bad
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local whole = ARGV[2] == 'all'
local stop = -1
if not whole then
  stop = tonumber(ARGV[2]) - 1
end
local sizes, windows, seen, done, others, zset = {}, {}, {}, {}, {}, {}
local function odd(key, kind)
  others[#others + 1] = key
  others[#others + 1] = kind
end
for i = 1, 4 do
  local kind = redis.call('TYPE', KEYS[i]).ok
  zset[i] = kind == 'zset' or kind == 'none'
  sizes[i], windows[i] = 0, {}
  if zset[i] then
    sizes[i] = redis.call('ZCARD', KEYS[i])
    if whole or stop >= 0 then
      windows[i] = redis.call('ZRANGE', KEYS[i], 0, stop, 'WITHSCORES')
    end
  else
    odd(KEYS[i], kind)
  end
end
local function scores(id)
  local out = {false, false, false, false}
  for i = 1, 4 do
    if zset[i] then
      out[i] = redis.call('ZSCORE', KEYS[i], id)
    end
  end
  return out
end
for j = 5, #KEYS do
  local id = ARGV[j - 2]
  local s = scores(id)
  local kind = redis.call('TYPE', KEYS[j]).ok
  local exists, state, row = 0, false, {}
  if kind == 'hash' then
    exists = 1
    row = redis.call('HGETALL', KEYS[j])
    state = redis.call('HGET', KEYS[j], 'state')
  elseif kind ~= 'none' then
    odd(KEYS[j], kind)
  end
  seen[#seen + 1] = {id, s[1], s[2], s[3], s[4], exists, state, row}
  done[id] = true
end
for i = 1, 4 do
  local flat = windows[i]
  for k = 1, #flat, 2 do
    local id = flat[k]
    if not done[id] then
      done[id] = true
      local s = {false, false, false, false}
      if not whole then
        s = scores(id)
      end
      local key = ARGV[1] .. id
      local kind = redis.call('TYPE', key).ok
      local exists, state, row = 0, false, false
      if kind == 'hash' then
        exists = 1
        state = redis.call('HGET', key, 'state')
        if whole then
          row = redis.call('HGETALL', key)
        end
      elseif kind ~= 'none' then
        odd(key, kind)
      end
      seen[#seen + 1] = {id, s[1], s[2], s[3], s[4], exists, state, row}
    end
  end
end
return {now, sizes, windows, seen, others}
