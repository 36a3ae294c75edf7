-- torch.nn.loss: MSELoss and CrossEntropyLoss. Both are modules called as
-- loss(input, target) and take {reduction = "mean" | "sum" | "none"}.
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local base = require("torch.nn.module")

local Module = base.Module
local L = {}

local REDUCTIONS = { mean = true, sum = true, none = true }

local function reduction_of(opts, who)
  local r = "mean"
  if type(opts) == "string" then r = opts
  elseif type(opts) == "table" then
    check_options(opts, who, { "reduction" })
    if opts.reduction ~= nil then r = opts.reduction end
  end
  if not REDUCTIONS[r] then
    fail(string.format("%s: reduction must be 'mean', 'sum' or 'none', got %s", who, tostring(r)))
  end
  return r
end

local function reduce(x, reduction)
  if reduction == "mean" then return x:mean() end
  if reduction == "sum" then return x:sum() end
  return x
end

local check_tensor = require("torch.utils.errors").check_tensor

-- ---------------------------------------------------------------- MSELoss

-- nn.MSELoss([{reduction = "mean"}]): mean (or sum) of (input - target)^2.
local MSELoss = Module:extend("MSELoss")
local warned_mse = false
L.MSELoss = MSELoss

function MSELoss:init(opts) self.reduction = reduction_of(opts, "nn.MSELoss") end

function MSELoss:forward(input, target)
  check_tensor(input, "input", "MSELoss")
  check_tensor(target, "target", "MSELoss")
  local si, st = input.shape, target.shape
  local same = #si == #st
  if same then for i = 1, #si do if si[i] ~= st[i] then same = false end end end
  if not same and not warned_mse then
    -- PyTorch warns (once) and broadcasts; the sizes must still broadcast.
    warned_mse = true
    io.stderr:write(string.format("UserWarning: Using a target size (%s) that is different to the input size (%s). "
      .. "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.\n",
      tostring(st), tostring(si)))
  end
  local d = input - target
  return reduce(d * d, self.reduction)
end

-- -------------------------------------------------------- CrossEntropyLoss

-- nn.CrossEntropyLoss([{reduction = "mean"}]): input holds unnormalised
-- scores (logits), [N, C] or [C]; target holds 1-based class indices
-- (int64, [N] or a scalar) or class probabilities of the input's shape.
-- The loss of row i is -log_softmax(input)[i, target[i]].
local CrossEntropyLoss = Module:extend("CrossEntropyLoss")
L.CrossEntropyLoss = CrossEntropyLoss

function CrossEntropyLoss:init(opts) self.reduction = reduction_of(opts, "nn.CrossEntropyLoss") end

-- -logp[i, target[i]] for each i, without the engine's nll_loss: a one-hot
-- matrix (rows of eye(C) picked by index_select) times logp.
local function nll_rows(logp, target, C)
  local onehot = torch.eye(C, { dtype = logp.dtype, device = logp.device }):index_select(1, target)
  return -(onehot * logp):sum(2)
end

function CrossEntropyLoss:forward(input, target)
  check_tensor(input, "input", "CrossEntropyLoss")
  check_tensor(target, "target", "CrossEntropyLoss")
  local nd = input:dim()
  if nd ~= 1 and nd ~= 2 then
    fail("CrossEntropyLoss: expected input of shape [N, C] or [C], got " .. tostring(input.shape))
  end
  local cdim = nd == 2 and 2 or 1
  local C = input:size(cdim)
  local logp = input:log_softmax(cdim)

  -- class probabilities
  if target:is_floating_point() then
    local st, si = target.shape, input.shape
    local ok = #st == #si
    if ok then for i = 1, #si do if si[i] ~= st[i] then ok = false end end end
    if not ok then
      fail(string.format("CrossEntropyLoss: a floating-point target holds class probabilities and must have "
        .. "the input's shape %s, got %s (class indices must be int64)", tostring(si), tostring(st)))
    end
    local per = -(target * logp):sum(cdim)
    return reduce(per, self.reduction)
  end

  if target.dtype ~= torch.int64 then
    fail("CrossEntropyLoss: expected target of dtype int64 (1-based class indices), got " .. tostring(target.dtype))
  end
  local scalar = nd == 1
  if scalar then
    if target:dim() ~= 0 and not (target:dim() == 1 and target:size(1) == 1) then
      fail("CrossEntropyLoss: for an input of shape [C] the target must be a single class index")
    end
    logp = logp:unsqueeze(1)
    target = target:reshape(1)
  else
    if target:dim() ~= 1 or target:size(1) ~= input:size(1) then
      fail(string.format("CrossEntropyLoss: expected target of shape [%d] (one class index per row), got %s",
        input:size(1), tostring(target.shape)))
    end
  end
  -- (on a GPU the engine checks the targets without waiting for the device,
  -- and a bad one is reported at the next synchronisation)
  if target:numel() > 0 and target.device.type == "cpu" then
    local lo, hi = target:min():item(), target:max():item()
    if lo < 1 or hi > C then
      local bad = lo < 1 and lo or hi
      fail(string.format("CrossEntropyLoss: Target %d is out of bounds: class indices are 1-based, 1 to %d",
        bad, C))
    end
  end
  local out
  if torch.nll_loss and self.reduction ~= "none" then
    out = torch.nll_loss(logp, target)
    if self.reduction == "sum" then out = out * target:numel() end
  else
    out = reduce(nll_rows(logp, target, C), self.reduction)
  end
  if scalar and self.reduction == "none" then out = out:squeeze(1) end
  return out
end

return L
