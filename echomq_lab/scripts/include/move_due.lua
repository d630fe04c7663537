-- include move_due: move_due(ids) takes each id out of KEYS[1]; a well-formed id whose row
-- is a hash goes to pending (KEYS[2], score 0) with state 'pending', while a malformed id or
-- an orphan is only dropped. It answers the count moved, or {moved, {orphans}, {malformed}}
-- when any were dropped. Included by promote and reap; it uses the keys they declare and:
-- ARGV[1] prefix   the row-key prefix emq:{Q}:job: (the row key is prefix .. id)
--@include well_formed
local function move_due(ids)
  local moved, orphans, malformed = 0, {}, {}
  for _, id in ipairs(ids) do
    redis.call('ZREM', KEYS[1], id)
    if not well_formed(id) then
      malformed[#malformed + 1] = id
    elseif redis.call('TYPE', ARGV[1] .. id).ok ~= 'hash' then
      orphans[#orphans + 1] = id
    else
      redis.call('ZADD', KEYS[2], 0, id)
      redis.call('HSET', ARGV[1] .. id, 'state', 'pending')
      moved = moved + 1
    end
  end
  if #orphans + #malformed > 0 then
    return {moved, orphans, malformed}
  end
  return moved
end
