-- include whole: whole(s) is true when s is a whole number 0..10^18-1 written plainly (no
-- sign, no leading zero): what a row's attempts must be. Included by fence and pick.
local function whole(s)
  return #s <= 18 and string.find(s, '^[0-9]+$') ~= nil and (#s == 1 or string.sub(s, 1, 1) ~= '0')
end
