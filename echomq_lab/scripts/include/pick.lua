-- include pick: claim's hardening against rows another client broke or took away.
-- pick() looks at the oldest members of pending, at most 100, and answers a table:
--   id, payload   the oldest member that is a well-formed JOB id with a row (nil: none found)
--   orphans       well-formed ids with no hash at their row key: removed from pending
--   malformed     members that are not a JOB id: removed from pending
--   refused       an EMQROW error reply when the found job's row has no whole-number attempts
--                 or no payload; then nothing at all is removed (no write before a refusal)
-- Without it, claim would HINCRBY a missing row back to 1 and hand out a token already given.
-- It uses the keys and args claim declares:
-- KEYS[1] pending  emq:{Q}:pending
-- ARGV[1] prefix   the row-key prefix emq:{Q}:job: (the row key is prefix .. id)
--@include well_formed
--@include whole
local function pick()
  local out = {orphans = {}, malformed = {}}
  for i = 0, 99 do
    local member = redis.call('ZRANGE', KEYS[1], i, i)[1]
    if not member then
      break
    end
    if not well_formed(member) then
      out.malformed[#out.malformed + 1] = member
    elseif redis.call('TYPE', ARGV[1] .. member).ok ~= 'hash' then
      out.orphans[#out.orphans + 1] = member
    else
      local got = redis.call('HMGET', ARGV[1] .. member, 'attempts', 'payload')
      if not got[1] or not whole(got[1]) then
        out.refused = redis.error_reply('EMQROW job ' .. member .. ' has no whole-number attempts; nothing was claimed')
      elseif not got[2] then
        out.refused = redis.error_reply('EMQROW job ' .. member .. ' has no payload; nothing was claimed')
      end
      out.id, out.payload = member, got[2]
      break
    end
  end
  if out.refused then
    return out
  end
  for _, member in ipairs(out.orphans) do
    redis.call('ZREM', KEYS[1], member)
  end
  for _, member in ipairs(out.malformed) do
    redis.call('ZREM', KEYS[1], member)
  end
  out.dropped = #out.orphans + #out.malformed > 0
  return out
end
