-- unfenced_complete: FOR DEMONSTRATION ONLY. complete.lua with its fence taken out.
-- It shows what the fence prevents: a worker whose lease has run out, or whose token is old,
-- still retires the job, and the worker that holds the live lease loses its work.
-- No handle in jobs runs it; echomq_lab.unfenced does, for the pages that show the failure.
-- KEYS[1] active  emq:{Q}:active
-- KEYS[2] row     emq:{Q}:job:<ID>
-- ARGV[1] id      the branded id
-- ARGV[2] token   the caller's token: read by nothing (that is the point)
-- Reply: 1 completed (row and active member deleted) | 0 the row is gone
if redis.call('EXISTS', KEYS[2]) == 0 then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
return 1
