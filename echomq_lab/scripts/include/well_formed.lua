-- include well_formed: well_formed(s) is true when s is a JOB id ('JOB' then 11 base62
-- digits) whose digits stay at or under MAX. Included by claim, promote and reap
-- (promote and reap through move_due).
local MAX = 'AzL8n0Y58m7' -- 2^63-1 in base62: the largest snowflake an id may carry
local function well_formed(s)
  if #s ~= 14 or string.sub(s, 1, 3) ~= 'JOB' or not string.find(s, '^[0-9A-Za-z]+$', 4) then
    return false
  end
  for i = 4, 14 do
    local a, b = string.byte(s, i), string.byte(MAX, i - 3)
    if a ~= b then
      return a < b
    end
  end
  return true
end
