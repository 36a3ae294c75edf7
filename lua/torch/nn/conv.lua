-- torch.nn.conv: nn.Conv2d and nn.Conv1d, modules holding a weight
-- [out, in/groups, kH(, kW)] and a bias [out] and calling F.conv2d /
-- F.conv1d with them. Options, defaults, initialisation and printed form
-- are PyTorch's.
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local check_tensor = require("torch.utils.errors").check_tensor
local errors = require("torch.utils.errors")
local base = require("torch.nn.module")
local init = require("torch.nn.initializers")
local sizes = require("torch.nn.sizes")
local F = require("torch.nn.functional")

local Module, Parameter = base.Module, base.Parameter

local C = {}

local ntuple, tuple_str = sizes.ntuple, sizes.tuple_str

local function all_equal(t, v)
  for _, x in ipairs(t) do if x ~= v then return false end end
  return true
end

-- The options both convolutions take; PyTorch's checks, in its order.
local CONV_OPTIONS = { "stride", "padding", "dilation", "groups", "bias", "padding_mode", "device", "dtype" }

local function setup(self, n, who, in_channels, out_channels, kernel_size, opts)
  if opts ~= nil and type(opts) ~= "table" then
    fail(string.format("%s(in_channels, out_channels, kernel_size[, options]): options must be a table such as "
      .. "{stride = 2, padding = 1}, got %s", who, errors.describe(opts)))
  end
  opts = opts or {}
  check_options(opts, "nn." .. who, CONV_OPTIONS)
  for _, a in ipairs({ { "in_channels", in_channels }, { "out_channels", out_channels } }) do
    if math.type(a[2]) ~= "integer" or a[2] < 0 then
      fail(string.format("nn.%s: %s must be a non-negative integer, got %s", who, a[1], errors.describe(a[2])))
    end
  end
  local groups = opts.groups == nil and 1 or opts.groups
  if math.type(groups) ~= "integer" or groups <= 0 then
    fail("groups must be a positive integer")
  end
  if in_channels % groups ~= 0 then fail("in_channels must be divisible by groups") end
  if out_channels % groups ~= 0 then fail("out_channels must be divisible by groups") end
  local stride = ntuple(opts.stride == nil and 1 or opts.stride, n, "nn." .. who, "stride", 1)
  local dilation = ntuple(opts.dilation == nil and 1 or opts.dilation, n, "nn." .. who, "dilation", 1)
  local padding = opts.padding == nil and 0 or opts.padding
  if type(padding) == "string" then
    if padding ~= "same" and padding ~= "valid" then
      fail(string.format("Invalid padding string '%s', should be one of {'same', 'valid'}", padding))
    end
    if padding == "same" and not all_equal(stride, 1) then
      fail("padding='same' is not supported for strided convolutions")
    end
  else
    padding = ntuple(padding, n, "nn." .. who, "padding", 0)
  end
  local padding_mode = opts.padding_mode == nil and "zeros" or opts.padding_mode
  if padding_mode ~= "zeros" then
    fail(string.format("nn.%s: padding_mode '%s' is not supported (only 'zeros')", who, tostring(padding_mode)))
  end
  self.in_channels = in_channels
  self.out_channels = out_channels
  self.kernel_size = ntuple(kernel_size, n, "nn." .. who, "kernel_size", 1)
  self.stride = stride
  self.padding = padding
  self.dilation = dilation
  self.groups = groups
  self.padding_mode = padding_mode
  local bias = opts.bias == nil or opts.bias
  local shape = { out_channels, in_channels // groups }
  for i = 1, n do shape[#shape + 1] = self.kernel_size[i] end
  self.weight = Parameter(sizes.make(torch.empty, shape, opts.device, opts.dtype))
  if bias then self.bias = Parameter(sizes.make(torch.empty, { out_channels }, opts.device, opts.dtype)) end
  self:reset_parameters()
end

-- PyTorch's _ConvNd.reset_parameters: kaiming_uniform_(weight, a =
-- sqrt(5)), i.e. U(-b, b) with b = 1/sqrt(fan_in), fan_in = in/groups *
-- kernel area; the bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
local function reset_parameters(self)
  init.kaiming_uniform_(self.weight, { a = math.sqrt(5) })
  if self.bias ~= nil then
    local fan_in = init._calculate_fan_in_and_fan_out(self.weight)
    if fan_in ~= 0 then
      local bound = 1 / math.sqrt(fan_in)
      init.uniform_(self.bias, -bound, bound)
    end
  end
end

-- PyTorch's _ConvNd.extra_repr: stride always, the rest when not default.
local function extra_repr(self)
  local s = string.format("%d, %d, kernel_size=%s, stride=%s", self.in_channels, self.out_channels,
    tuple_str(self.kernel_size), tuple_str(self.stride))
  if type(self.padding) == "string" then
    s = s .. ", padding=" .. self.padding
  elseif not all_equal(self.padding, 0) then
    s = s .. ", padding=" .. tuple_str(self.padding)
  end
  if not all_equal(self.dilation, 1) then s = s .. ", dilation=" .. tuple_str(self.dilation) end
  if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
  if self.bias == nil then s = s .. ", bias=False" end
  return s
end

local function conv_options(self)
  local pad = self.padding
  if type(pad) == "table" then pad = { pad[1], pad[2] } end
  return { stride = self.stride, padding = pad, dilation = self.dilation, groups = self.groups }
end

-- nn.Conv2d(in_channels, out_channels, kernel_size[, {stride = 1,
-- padding = 0, dilation = 1, groups = 1, bias = true, device =, dtype =}]):
-- kernel_size, stride, padding and dilation are a number or {h, w};
-- padding may also be 'same' or 'valid'. Input (N, C, H, W) or (C, H, W).
local Conv2d = Module:extend("Conv2d")
C.Conv2d = Conv2d

function Conv2d:init(in_channels, out_channels, kernel_size, opts)
  setup(self, 2, "Conv2d", in_channels, out_channels, kernel_size, opts)
end

Conv2d.reset_parameters = reset_parameters
Conv2d.extra_repr = extra_repr

function Conv2d:forward(input)
  check_tensor(input, "input", "Conv2d")
  base.check_device(self, input, { "weight", "bias" })
  return F.conv2d(input, self.weight, self.bias, conv_options(self))
end

-- nn.Conv1d(in_channels, out_channels, kernel_size[, options]): the same
-- over (N, C, L) or (C, L), with one-element sizes.
local Conv1d = Module:extend("Conv1d")
C.Conv1d = Conv1d

function Conv1d:init(in_channels, out_channels, kernel_size, opts)
  setup(self, 1, "Conv1d", in_channels, out_channels, kernel_size, opts)
end

Conv1d.reset_parameters = reset_parameters
Conv1d.extra_repr = extra_repr

function Conv1d:forward(input)
  check_tensor(input, "input", "Conv1d")
  base.check_device(self, input, { "weight", "bias" })
  local pad = self.padding
  if type(pad) == "table" then pad = pad[1] end
  return F.conv1d(input, self.weight, self.bias,
    { stride = self.stride[1], padding = pad, dilation = self.dilation[1], groups = self.groups })
end

return C
