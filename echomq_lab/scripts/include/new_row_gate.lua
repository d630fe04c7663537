-- include new_row_gate: new_row_gate(id) is nil when a new row for id may be written at
-- KEYS[1]; otherwise it is the reply to give at once, before any write: the EMQKIND error
-- when id is not a JOB id, or 0 when the row already exists (a duplicate).
-- Included by enqueue and schedule.
local function new_row_gate(id)
  if string.sub(id, 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND ' .. id .. ' is not a JOB id')
  end
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return 0
  end
  return nil
end
