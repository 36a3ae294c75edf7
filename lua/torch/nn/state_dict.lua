-- torch.nn.state_dict: a module tree's state by name (Module:state_dict)
-- and loading it back (Module:load_state_dict). Both walk the module's
-- registered parameters, persistent buffers and children, so a buffer
-- (running_mean, num_batches_tracked) is saved and loaded like a parameter.
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local options = require("torch.utils.errors").options
local OrderedDict = require("torch.nn.collections").OrderedDict

local M = {}


-- The module's state as an nn.OrderedDict: parameter and persistent
-- buffer names (fc.weight, 1.bias, module.fc.weight) to tensors detached
-- from autograd that share storage with the module's.
local function save_state(self, prefix, out, keep_vars)
  for name, p in self._parameters:items() do out[#out + 1] = { prefix .. name, keep_vars and p or p.data } end
  for name, b in self._buffers:items() do
    if not self._non_persistent[name] then out[#out + 1] = { prefix .. name, keep_vars and b or b.data } end
  end
  for name, m in self._modules:items() do save_state(m, prefix .. name .. ".", out, keep_vars) end
end

function M.state_dict(self, opts)
  opts = options(opts, "state_dict")
  check_options(opts, "state_dict", { "prefix", "keep_vars" })
  if opts.prefix ~= nil and type(opts.prefix) ~= "string" then
    fail("state_dict: prefix must be a string, got " .. type(opts.prefix))
  end
  local out = {}
  save_state(self, opts.prefix or "", out, opts.keep_vars)
  return OrderedDict(out)
end

local function size_str(t)
  return tostring(t.shape)
end

local function same_shape(a, b)
  local sa, sb = a.shape, b.shape
  if #sa ~= #sb then return false end
  for i = 1, #sa do if sa[i] ~= sb[i] then return false end end
  return true
end

-- What load_state_dict returns: {missing_keys =, unexpected_keys =}, shown
-- as PyTorch shows its _IncompatibleKeys.
local IncompatibleKeys = { __name = "_IncompatibleKeys" }
IncompatibleKeys.__tostring = function(r)
  if #r.missing_keys == 0 and #r.unexpected_keys == 0 then return "<All keys matched successfully>" end
  local function list(keys)
    local q = {}
    for i, k in ipairs(keys) do q[i] = "'" .. k .. "'" end
    return "[" .. table.concat(q, ", ") .. "]"
  end
  return "_IncompatibleKeys(missing_keys=" .. list(r.missing_keys) .. ", unexpected_keys=" ..
    list(r.unexpected_keys) .. ")"
end

-- Copies sd's tensors into the module's parameters and buffers, in place.
-- Strict (the default): missing keys, unexpected keys and shape mismatches
-- are an error naming them all, and nothing is copied. {strict = false}
-- copies what matches and returns {missing_keys =, unexpected_keys =}
-- (shape mismatches are still an error, as in PyTorch).
function M.load_state_dict(self, sd, opts)
  if type(sd) ~= "table" then
    fail("Expected state_dict to be a table of names to tensors, got " .. type(sd))
  end
  check_options(opts, "load_state_dict", { "strict" })
  local strict = not (opts == false or (type(opts) == "table" and opts.strict == false))
  local own = {}
  save_state(self, "", own, true)
  local expected = {}
  local missing, mismatch, copies = {}, {}, {}
  for _, kv in ipairs(own) do
    local key, target = kv[1], kv[2]
    expected[key] = true
    local v = sd[key]
    if v == nil then
      missing[#missing + 1] = key
    elseif not torch.is_tensor(v) then
      mismatch[#mismatch + 1] = string.format(
        'While copying the parameter named "%s", expected torch.Tensor from checkpoint but received %s', key, type(v))
    elseif not same_shape(v, target) then
      mismatch[#mismatch + 1] = string.format(
        "size mismatch for %s: copying a param with shape %s from checkpoint, the shape in current model is %s.",
        key, size_str(v), size_str(target))
    else
      copies[#copies + 1] = { target, v }
    end
  end
  local unexpected = {}
  local mt = getmetatable(sd)
  local keys = type(mt) == "table" and mt.__order ~= nil and sd.__keys or nil
  if not keys then
    keys = {}
    for k in pairs(sd) do keys[#keys + 1] = k end
    table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
  end
  for _, k in ipairs(keys) do
    if not expected[k] then unexpected[#unexpected + 1] = tostring(k) end
  end
  local errs = {}
  local function quoted(list)
    local q = {}
    for i, k in ipairs(list) do q[i] = '"' .. k .. '"' end
    return table.concat(q, ", ")
  end
  if strict and #missing > 0 then errs[#errs + 1] = "Missing key(s) in state_dict: " .. quoted(missing) .. ". " end
  if strict and #unexpected > 0 then errs[#errs + 1] = "Unexpected key(s) in state_dict: " .. quoted(unexpected) .. ". " end
  for _, m in ipairs(mismatch) do errs[#errs + 1] = m end
  if #errs > 0 then
    fail("Error(s) in loading state_dict for " .. self:_get_name() .. ":\n\t" .. table.concat(errs, "\n\t"))
  end
  torch.no_grad(function()
    for _, c in ipairs(copies) do c[1].data:copy_(c[2]) end
  end)
  return setmetatable({ missing_keys = missing, unexpected_keys = unexpected }, IncompatibleKeys)
end

return M
