-- torch.nn.parameter: nn.Parameter, the mark that makes a tensor assigned
-- to a module field a parameter, and is_parameter, its test.
local torch = require("torch")
local fail = require("torch.utils.errors").fail

local M = {}

-- Tensors marked by nn.Parameter. Keys are the tensor objects (the binding
-- keeps one Lua object per engine tensor), weak so parameters can die.
local param_set = setmetatable({}, { __mode = "k" })

local function is_parameter(v)
  if not torch.is_tensor(v) then return false end
  if param_set[v] then return true end
  return torch._is_parameter ~= nil and torch._is_parameter(v) == true
end
M.is_parameter = is_parameter

-- nn.Parameter(t[, requires_grad]): marks t as a parameter (printed as
-- "Parameter containing:") that requires grad, and returns it. The tensor
-- object itself is marked (no copy): assign it to a module field to
-- register it. requires_grad may be a boolean or {requires_grad = b}.
function M.Parameter(t, requires_grad)
  if t == nil then t = torch.empty(0) end
  if not torch.is_tensor(t) then
    fail("nn.Parameter: expected a tensor, got " .. type(t))
  end
  if type(requires_grad) == "table" then requires_grad = requires_grad.requires_grad end
  if t.grad_fn ~= nil then t = t:detach() end -- a leaf, like PyTorch
  torch._make_parameter(t, requires_grad ~= false)
  param_set[t] = true
  t.requires_grad = requires_grad ~= false
  return t
end

return M
