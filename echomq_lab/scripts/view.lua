-- view: what a panel shows of one queue, read in one atomic run whose cost is bounded.
-- KEYS[1] pending   emq:{Q}:pending
-- KEYS[2] active    emq:{Q}:active
-- KEYS[3] schedule  emq:{Q}:schedule
-- KEYS[4] dead      emq:{Q}:dead
-- KEYS[5..] row     emq:{Q}:job:<ID> of each job the host follows (declared, built by the host)
-- ARGV[1] prefix    the row-key prefix emq:{Q}:job: (a window member's row key is prefix .. id)
-- ARGV[2] window    how many members of each set to return (lowest scores first), or 'all'
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
--   others  flat {key, type, ...}: a set key or a row key that holds another type than the
--           protocol keeps there (another client's string, say): it is read by TYPE only, its
--           set shown empty, its row as absent, so the view never fails with WRONGTYPE
-- Read-only. No KEYS, no SCAN: a row in no set shows only when the host follows it.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local whole = ARGV[2] == 'all'
local stop = -1
if not whole then
  stop = tonumber(ARGV[2]) - 1
end
local sizes, windows, seen, done, others = {}, {}, {}, {}, {}
local zset = {}
for i = 1, 4 do
  local kind = redis.call('TYPE', KEYS[i]).ok
  zset[i] = kind == 'zset' or kind == 'none'
  if not zset[i] then
    others[#others + 1] = KEYS[i]
    others[#others + 1] = kind
    sizes[i] = 0
    windows[i] = {}
  else
    sizes[i] = redis.call('ZCARD', KEYS[i])
  end
  if not zset[i] then
    -- nothing to read
  elseif whole or stop >= 0 then
    windows[i] = redis.call('ZRANGE', KEYS[i], 0, stop, 'WITHSCORES')
  else
    windows[i] = {}
  end
end
local function scores(id)
  local out = {}
  for i = 1, 4 do
    out[i] = false
    if zset[i] then
      out[i] = redis.call('ZSCORE', KEYS[i], id)
    end
  end
  return out
end
local function hash_at(key) -- true for a hash; a key of another type is noted in others
  local kind = redis.call('TYPE', key).ok
  if kind == 'hash' or kind == 'none' then
    return kind == 'hash'
  end
  others[#others + 1] = key
  others[#others + 1] = kind
  return false
end
for j = 5, #KEYS do
  local id = ARGV[j - 2]
  local row, state, exists = {}, false, 0
  if hash_at(KEYS[j]) then
    row = redis.call('HGETALL', KEYS[j])
    state = redis.call('HGET', KEYS[j], 'state')
    exists = 1
  end
  local s = scores(id)
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
      local row, state, exists = false, false, 0
      if hash_at(key) then
        if whole then
          row = redis.call('HGETALL', key)
        end
        state = redis.call('HGET', key, 'state')
        exists = 1
      end
      seen[#seen + 1] = {id, s[1], s[2], s[3], s[4], exists, state, row}
    end
  end
end
return {now, sizes, windows, seen, others}
