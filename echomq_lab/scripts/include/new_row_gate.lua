-- include new_row_gate: new_row_gate(id) is nil when a new row for id may be written at
-- KEYS[1]; otherwise it is the reply to give at once, before any write:
--   the EMQKIND error when id is not a JOB id;
--   0 (a duplicate) when the row already exists;
--   the EMQROW error when the row is gone but id still stands in one of the queue's sets
--   (KEYS[2..5]: pending, active, schedule, dead). Its row was lost (evicted, deleted) while
--   the queue still held it; a new row would count attempts from 0 again, and the next claim
--   could hand out a token a live worker already holds.
-- Included by enqueue and schedule.
local SETS = {'pending', 'active', 'schedule', 'dead'}
local function new_row_gate(id)
  if string.sub(id, 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND ' .. id .. ' is not a JOB id')
  end
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return 0
  end
  for i = 1, 4 do
    local set = i + 1
    if redis.call('ZSCORE', KEYS[set], id) then
      return redis.error_reply('EMQROW job ' .. id .. ' has no row but is still in ' .. SETS[i] .. '; nothing was written')
    end
  end
  return nil
end
