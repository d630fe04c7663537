-- include argument: the form of a script's arguments, checked before its first write. Each
-- check is nil when the argument is good, else the one-line EMQARG error reply naming it:
--   decimal(name, s, low, high)  s is ASCII decimal digits, no sign, no leading zero, and
--       low <= s <= high; low and high are decimal strings, compared as text of equal length
--       (exact past 2^53, where Lua's numbers are not)
--   branded(name, s)  s is a branded id: 3 capitals, then 11 base62 digits at or under MAX
--   row_of(key, id, set)  key is the row key of id in the queue whose key ``set`` is
--   prefix_of(s, set)  s is the row-key prefix of the queue whose key ``set`` is: set's base
--       (up to its last ':') and 'job:'
-- A reply never repeats the argument (it may be 60 KiB, or bytes that are no text).
-- echomq_lab/scripts/arguments.py is the same rule on the host's side (docs/protocol.md, Arguments).
--@include well_formed
local function refuse(name, what)
  return redis.error_reply('EMQARG ' .. name .. ' must be ' .. what)
end
local function at_most(a, b)
  return #a < #b or (#a == #b and a <= b)
end
local function decimal(name, s, low, high)
  if not s or #s > #high or not string.find(s, '^[0-9]+$')
      or (#s > 1 and string.sub(s, 1, 1) == '0') or not at_most(s, high) or not at_most(low, s) then
    return refuse(name, 'decimal digits from ' .. low .. ' to ' .. high)
  end
  return nil
end
local function branded(name, s)
  if not s or not string.find(s, '^[A-Z][A-Z][A-Z]') or not well_formed('JOB' .. string.sub(s, 4)) then
    return refuse(name, 'a branded id: 3 capitals, then 11 base62 digits')
  end
  return nil
end
local function base_of(set)
  return string.match(set, '^(.*:)[^:]*$') or ''
end
local function row_of(key, id, set)
  if key ~= base_of(set) .. 'job:' .. id then
    return refuse('row', 'the row key of the id, in the same queue as the other keys')
  end
  return nil
end
local function prefix_of(s, set)
  if s ~= base_of(set) .. 'job:' then
    return refuse('prefix', 'the row-key prefix of the same queue as the keys')
  end
  return nil
end
