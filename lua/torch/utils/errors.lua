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

-- check_options(opts, where, allowed): an options table (keyword
-- arguments) may only have the keys in the list `allowed`; anything else is
-- an error at the user's line naming the key, the nearest allowed one and
-- all of them. The check itself is torch._options_error, shared with the
-- C factories, so every options table in the API answers the same way.
function E.check_options(opts, where, allowed)
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then return end
  local msg = require("torch")._options_error(opts, where, allowed)
  if msg then error(msg, user_level()) end
end

-- check_tensor(v, what, who): v must be a tensor ("who: expected the
-- what to be a tensor, got ...").
function E.check_tensor(v, what, who)
  if not require("torch").is_tensor(v) then
    E.fail(string.format("%s: expected the %s to be a tensor, got %s", who, what, type(v)))
  end
end

-- describe(v): a value as an error message names it: "a tensor
-- (torch.FloatTensor of size 2x3)", "the number 1", "the string 'cuda'",
-- "a torch.device (cuda:1)", "a table", "nil".
function E.describe(v)
  local torch = require("torch")
  if torch.is_tensor(v) then
    local dims = {}
    for i = 1, v:dim() do dims[i] = tostring(v:size(i)) end
    return ("a tensor (%s of size %s)"):format(v:type(), #dims > 0 and table.concat(dims, "x") or "[] (a scalar)")
  end
  if type(v) == "number" then return "the number " .. tostring(v) end
  if type(v) == "string" then return ("the string %q"):format(v) end
  if v == nil then return "nil" end
  local mt = getmetatable(v)
  local name = type(mt) == "table" and rawget(mt, "__name")
  if type(name) == "string" then return ("a %s (%s)"):format(name, tostring(v)) end
  return "a " .. type(v)
end

-- options(opts, who): a trailing options table, {} when absent; anything
-- else is an error naming the function (who) at the user's line.
function E.options(opts, who)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    E.fail(("%s: expected an options table {name = value, ...}, got %s"):format(who, type(opts)))
  end
  return opts
end

return E
