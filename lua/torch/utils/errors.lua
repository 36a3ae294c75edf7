-- torch.utils.errors: errors raised by the Lua library (nn, optim, data)
-- point at the user's code, not at the library's own lines.
local E = {}

-- The error level of the first caller outside lua/torch/.
local function user_level()
  local level = 3 -- 1 is user_level's caller (fail), 2 its caller
  while true do
    local info = debug.getinfo(level, "S")
    if info == nil then return 2 end
    if info.what ~= "C" and not info.source:find("^@lua/torch/") then return level - 1 end
    level = level + 1
  end
end

-- fail(message): raises message at the nearest user frame.
function E.fail(msg)
  error(msg, user_level())
end

return E
