-- torch.nn.pooling: nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d and
-- nn.AdaptiveMaxPool2d, parameter-free modules calling F.max_pool2d,
-- F.avg_pool2d, F.adaptive_avg_pool2d and F.adaptive_max_pool2d. Sizes
-- are kept as given (a number or {h, w}) because PyTorch prints them so:
-- MaxPool2d(kernel_size=2, stride=2, ...) but kernel_size=(3, 2).
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local check_tensor = require("torch.utils.errors").check_tensor
local errors = require("torch.utils.errors")
local base = require("torch.nn.module")
local F = require("torch.nn.functional")
local ntuple = require("torch.nn.sizes").ntuple
local tuple_str = require("torch.nn.sizes").tuple_str

local Module, py_bool = base.Module, base.py_bool

local P = {}

-- A size as given: an integer, or a list of two integers (copied).
local function size_arg(v, who, what, min)
  ntuple(v, 2, who, what, min) -- validates
  if type(v) == "table" then return { v[1], v[2] } end
  return v
end

-- Python's repr of such a size: 2 or (3, 2).
local function size_str(v) return type(v) == "table" and tuple_str(v) or tostring(v) end

local function opts_table(opts, who, allowed)
  if opts ~= nil and type(opts) ~= "table" then
    fail(string.format("%s(kernel_size[, options]): options must be a table such as {stride = 2}, got %s", who,
      errors.describe(opts)))
  end
  opts = opts or {}
  check_options(opts, "nn." .. who, allowed)
  return opts
end

-- The options of the 2-d poolings; stride defaults to kernel_size.
local function pool_setup(self, who, kernel_size, opts, allowed)
  opts = opts_table(opts, who, allowed)
  self.kernel_size = size_arg(kernel_size, "nn." .. who, "kernel_size", 1)
  self.stride = opts.stride == nil and self.kernel_size or size_arg(opts.stride, "nn." .. who, "stride", 1)
  self.padding = size_arg(opts.padding == nil and 0 or opts.padding, "nn." .. who, "padding", 0)
  self.ceil_mode = opts.ceil_mode and true or false
  return opts
end

-- nn.MaxPool2d(kernel_size[, {stride = kernel_size, padding = 0,
-- dilation = 1, ceil_mode = false}]).
local MaxPool2d = Module:extend("MaxPool2d")
P.MaxPool2d = MaxPool2d

function MaxPool2d:init(kernel_size, opts)
  opts = pool_setup(self, "MaxPool2d", kernel_size, opts, { "stride", "padding", "dilation", "ceil_mode" })
  self.dilation = size_arg(opts.dilation == nil and 1 or opts.dilation, "nn.MaxPool2d", "dilation", 1)
end

function MaxPool2d:forward(x)
  check_tensor(x, "input", "MaxPool2d")
  local o = { stride = self.stride, padding = self.padding, ceil_mode = self.ceil_mode }
  -- only passed when set, so a functional form without dilation still serves the common case
  if self.dilation ~= 1 then o.dilation = self.dilation end
  return F.max_pool2d(x, self.kernel_size, o)
end

function MaxPool2d:extra_repr()
  return string.format("kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s", size_str(self.kernel_size),
    size_str(self.stride), size_str(self.padding), size_str(self.dilation), py_bool(self.ceil_mode))
end

-- nn.AvgPool2d(kernel_size[, {stride = kernel_size, padding = 0,
-- ceil_mode = false, count_include_pad = true}]).
local AvgPool2d = Module:extend("AvgPool2d")
P.AvgPool2d = AvgPool2d

function AvgPool2d:init(kernel_size, opts)
  opts = pool_setup(self, "AvgPool2d", kernel_size, opts, { "stride", "padding", "ceil_mode", "count_include_pad" })
  self.count_include_pad = opts.count_include_pad == nil or opts.count_include_pad and true or false
end

function AvgPool2d:forward(x)
  check_tensor(x, "input", "AvgPool2d")
  return F.avg_pool2d(x, self.kernel_size, { stride = self.stride, padding = self.padding, ceil_mode = self.ceil_mode,
    count_include_pad = self.count_include_pad })
end

-- PyTorch prints only these three.
function AvgPool2d:extra_repr()
  return string.format("kernel_size=%s, stride=%s, padding=%s", size_str(self.kernel_size), size_str(self.stride),
    size_str(self.padding))
end

-- nn.AdaptiveAvgPool2d(output_size) / nn.AdaptiveMaxPool2d(output_size):
-- output_size a number or {h, w}.
for _, kind in ipairs({ "Avg", "Max" }) do
  local name = "Adaptive" .. kind .. "Pool2d"
  local fname = "adaptive_" .. kind:lower() .. "_pool2d"
  local cls = Module:extend(name)
  P[name] = cls
  function cls:init(output_size)
    if type(output_size) == "table" and getmetatable(output_size) == nil and output_size.output_size ~= nil then
      check_options(output_size, "nn." .. name, { "output_size" })
      output_size = output_size.output_size
    end
    self.output_size = size_arg(output_size, "nn." .. name, "output_size", 1)
  end
  function cls:forward(x)
    check_tensor(x, "input", name)
    return F[fname](x, self.output_size)
  end
  function cls:extra_repr() return "output_size=" .. size_str(self.output_size) end
end

return P
