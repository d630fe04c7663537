-- token_only_complete: FOR DEMONSTRATION ONLY. complete as the course states it: the token
-- against the row's attempts, and nothing else (no look at active: a reaped lease is not seen).
-- It shows why the lab's complete goes further: a worker that wakes after the reaper, before
-- anyone claims again, still matches attempts, so this retires the job while its id waits in
-- pending with no row behind it. No handle in jobs runs it; echomq_lab.lessons.unfenced does.
-- KEYS[1] active  emq:{Q}:active
-- KEYS[2] row     emq:{Q}:job:<ID>
-- ARGV[1] id      the branded id
-- ARGV[2] token   the attempts value claim handed to this worker
-- Reply: 1 completed (row and active member deleted) | 0 the row is gone
-- Error: EMQSTALE when the token is not the row's attempts
local attempts = redis.call('HGET', KEYS[2], 'attempts')
if not attempts then
  return 0
end
if attempts ~= ARGV[2] then
  return redis.error_reply('EMQSTALE token ' .. ARGV[2] .. ' is stale, the row\'s attempts is ' .. attempts)
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
return 1
