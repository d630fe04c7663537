-- include fence: fence(attempts) is nil when the caller's token still holds the job's lease:
-- the token equals the row's attempts, and the id is a member of active. Otherwise it is the
-- error reply to give at once, before any write:
--   EMQSTALE when the token is not the row's attempts, or id holds no lease (reaped, settled);
--   EMQROW when the row's attempts is not a whole number.
-- The caller deals first with a missing row (attempts is nil). Included by complete, retry and
-- extend, the one place the fence is written; it uses the keys and args they all declare:
-- KEYS[1] active  emq:{Q}:active
-- ARGV[1] id      the branded id
-- ARGV[2] token   the attempts value claim handed to this worker
--@include whole
local function fence(attempts)
  local id, token = ARGV[1], ARGV[2]
  if attempts ~= token then
    if not whole(attempts) then
      return redis.error_reply('EMQROW job ' .. id .. ' has no whole-number attempts; nothing was changed')
    end
    return redis.error_reply('EMQSTALE token ' .. token .. ' is stale, the row\'s attempts is ' .. attempts)
  end
  if not redis.call('ZSCORE', KEYS[1], id) then
    return redis.error_reply('EMQSTALE token ' .. token .. ' holds no lease: the job is not active (the lab\'s check, beyond the course\'s token)')
  end
  return nil
end
