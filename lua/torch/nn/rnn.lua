-- torch.nn.rnn: nn.RNN, nn.GRU, nn.LSTM (issue 31), with PyTorch's
-- constructor options, parameter names (weight_ih_l0, ..., _reverse),
-- gate order (LSTM i, f, g, o; GRU r, z, n), initialisation and
-- (seq, batch, feature) layout, so state dicts line up with PyTorch's.
-- Built from existing ops, so they run (and differentiate) on every
-- device: each step of each layer and direction does one or two products
-- and the pointwise gates. docs/rnn.md documents them.
local torch = require("torch")
local errors = require("torch.utils.errors")
local fail, check_options, describe = errors.fail, errors.check_options, errors.describe
local base = require("torch.nn.module")
local sizes = require("torch.nn.sizes")
local F = require("torch.nn.functional")

local Module, Parameter = base.Module, base.Parameter
local py_number, py_bool = base.py_number, base.py_bool

local R = {}

-- gates per kind: rows of weight_ih/weight_hh are gates * hidden_size
local GATES = { RNN_TANH = 1, RNN_RELU = 1, GRU = 3, LSTM = 4 }

local RNNBase = Module:extend("RNNBase")
R.RNNBase = RNNBase

local OPTIONS = { "num_layers", "bias", "batch_first", "dropout", "bidirectional", "device", "dtype" }

-- RNNBase.init(self, mode, who, input_size, hidden_size[, num_layers][, opts])
function RNNBase:setup(mode, who, input_size, hidden_size, num_layers, opts, extra)
  if type(num_layers) == "table" and opts == nil then opts, num_layers = num_layers, nil end
  if math.type(input_size) ~= "integer" or math.type(hidden_size) ~= "integer" or input_size < 0 then
    fail(("%s(input_size, hidden_size[, num_layers][, options]): expected integer sizes, got %s and %s")
      :format(who, describe(input_size), describe(hidden_size)))
  end
  if hidden_size <= 0 then fail("hidden_size must be greater than zero") end
  opts = errors.options(opts, who)
  local names = { table.unpack(OPTIONS) }
  for _, k in ipairs(extra or {}) do names[#names + 1] = k end
  check_options(opts, who, names)
  if num_layers ~= nil and opts.num_layers ~= nil then
    fail(who .. ": num_layers given twice (positionally and in the options table)")
  end
  num_layers = num_layers or opts.num_layers or 1
  if math.type(num_layers) ~= "integer" or num_layers <= 0 then
    fail("num_layers must be greater than zero, got " .. describe(num_layers))
  end
  local dropout = opts.dropout or 0
  if type(dropout) ~= "number" or dropout < 0 or dropout > 1 then
    fail("dropout should be a number in range [0, 1] representing the probability of an element being zeroed, got "
      .. describe(dropout))
  end
  self.mode = mode
  self.input_size = input_size
  self.hidden_size = hidden_size
  self.num_layers = num_layers
  self.bias = opts.bias == nil or opts.bias and true or false
  self.batch_first = opts.batch_first and true or false
  self.dropout = dropout + 0.0
  self.bidirectional = opts.bidirectional and true or false
  local gate = GATES[mode] * hidden_size
  local dirs = self.bidirectional and 2 or 1
  local names_list = {}
  for layer = 0, num_layers - 1 do
    local layer_in = layer == 0 and input_size or hidden_size * dirs
    for d = 1, dirs do
      local sfx = ("_l%d%s"):format(layer, d == 2 and "_reverse" or "")
      local function param(name, shape)
        self[name .. sfx] = Parameter(sizes.make(torch.empty, shape, opts.device, opts.dtype))
        names_list[#names_list + 1] = name .. sfx
      end
      param("weight_ih", { gate, layer_in })
      param("weight_hh", { gate, hidden_size })
      if self.bias then
        param("bias_ih", { gate })
        param("bias_hh", { gate })
      end
    end
  end
  self._flat_weights_names = names_list
  self:reset_parameters()
end

-- PyTorch's init: every weight and bias ~ U(-1/sqrt(hidden), 1/sqrt(hidden)).
function RNNBase:reset_parameters()
  local k = 1 / math.sqrt(self.hidden_size)
  torch.no_grad(function()
    for _, name in ipairs(self._flat_weights_names) do self[name]:uniform_(-k, k) end
  end)
end

-- The LSTM's step from its gates' pre-activations (batch, 4 * hidden).
local function lstm_cell(gates, c, H)
  -- i, f and o are sigmoids, g a tanh: one sigmoid call for all four
  -- (g's quarter unused) costs less than three calls
  local sg = gates:sigmoid()
  local i, f, o = sg:narrow(2, 1, H), sg:narrow(2, H + 1, H), sg:narrow(2, 3 * H + 1, H)
  local g = gates:narrow(2, 2 * H + 1, H):tanh()
  c = f * c + i * g
  return o * c:tanh(), c
end

-- GRU: n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) n + z h,
-- so the input and hidden products stay apart.
local function gru_step(xp, h, w_hh_t, b_hh, H)
  local gh = b_hh ~= nil and torch.addmm(b_hh, h, w_hh_t) or h:matmul(w_hh_t)
  local rz = (xp:narrow(2, 1, 2 * H) + gh:narrow(2, 1, 2 * H)):sigmoid()
  local r, z = rz:narrow(2, 1, H), rz:narrow(2, H + 1, H)
  local n = (xp:narrow(2, 2 * H + 1, H) + r * gh:narrow(2, 2 * H + 1, H)):tanh()
  return n + z * (h - n)
end

-- Runs one layer in one direction over xs, the steps' inputs (a list of
-- [batch, in]): returns the steps' outputs (a list of [batch, hidden]) and
-- the final h (and c). Each step does its own products: one product of
-- all steps' inputs would be fewer kernels, but every step's slice of it
-- would send back a gradient the size of all steps (a select's backward
-- is zeros with the slice filled in), T times the memory traffic. The RNN
-- and the LSTM do one product a step, [x_t, h] times [W_ih, W_hh]^T (the
-- weights joined once a call); the GRU needs W_hn h apart, so two.
function RNNBase:_run_direction(xs, sfx, h, c, reverse)
  local T, H = #xs, self.hidden_size
  local w_ih, w_hh = self["weight_ih" .. sfx], self["weight_hh" .. sfx]
  local b_ih, b_hh = self["bias_ih" .. sfx], self["bias_hh" .. sfx]
  local mode = self.mode
  local outs = {}
  if mode == "GRU" then
    local w_ih_t, w_hh_t = w_ih:t(), w_hh:t()
    for s = 1, T do
      local t = reverse and T + 1 - s or s
      local xp = b_ih ~= nil and torch.addmm(b_ih, xs[t], w_ih_t) or xs[t]:matmul(w_ih_t)
      h = gru_step(xp, h, w_hh_t, b_hh, H)
      outs[t] = h
    end
    return outs, h, c
  end
  local w_t = torch.cat({ w_ih, w_hh }, 2):t()
  local b = b_ih ~= nil and b_ih + b_hh or nil
  for s = 1, T do
    local t = reverse and T + 1 - s or s
    local xh = torch.cat({ xs[t], h }, 2)
    local pre = b ~= nil and torch.addmm(b, xh, w_t) or xh:matmul(w_t)
    if mode == "LSTM" then h, c = lstm_cell(pre, c, H)
    elseif mode == "RNN_TANH" then h = pre:tanh()
    else h = pre:relu() end
    outs[t] = h
  end
  return outs, h, c
end

local function shape_str(t)
  local s = {}
  for i = 1, #t do s[i] = tostring(t[i]) end
  return "(" .. table.concat(s, ", ") .. ")"
end

local function check_hidden(t, want, what)
  if not torch.is_tensor(t) then fail(("%s must be a tensor, got %s"):format(what, describe(t))) end
  local got = t.shape
  local same = #got == #want
  for i = 1, #want do same = same and got[i] == want[i] end
  if not same then
    fail(("Expected %s size %s, got [%s]"):format(what, shape_str(want), table.concat(got, ", ")))
  end
end

-- forward(input[, hx]): input (seq, batch, input_size), or (batch, seq,
-- input_size) with batch_first, or (seq, input_size) unbatched. hx: h0
-- (num_layers * directions, batch, hidden), zeros when nil; the LSTM's is
-- {h0, c0}. Returns output, h_n (the LSTM: output, {h_n, c_n}).
function RNNBase:forward(input, hx)
  local who = self:_get_name()
  if not torch.is_tensor(input) then fail(who .. ": input must be a tensor, got " .. describe(input)) end
  local dim = input:dim()
  if dim ~= 2 and dim ~= 3 then
    fail(("%s: Expected input to be 2D or 3D, got %dD tensor instead"):format(who, dim))
  end
  if input:size(dim) ~= self.input_size then
    fail(("input.size(-1) must be equal to input_size. Expected %d, got %d"):format(self.input_size, input:size(dim)))
  end
  base.check_device(self, input, self._flat_weights_names)
  local unbatched = dim == 2
  local x = input
  if unbatched then x = x:unsqueeze(2)
  elseif self.batch_first then x = x:transpose(1, 2) end
  local B, H = x:size(2), self.hidden_size
  local dirs = self.bidirectional and 2 or 1
  local want = { self.num_layers * dirs, B, H }
  if unbatched then want = { self.num_layers * dirs, H } end
  local h0, c0
  if hx ~= nil then
    if self.mode == "LSTM" then
      if type(hx) ~= "table" or torch.is_tensor(hx) or #hx ~= 2 then
        fail(who .. ": the initial state must be a table {h0, c0} of two tensors, got " .. describe(hx))
      end
      check_hidden(hx[1], want, "hidden")
      check_hidden(hx[2], want, "cell")
      h0, c0 = hx[1], hx[2]
    else
      check_hidden(hx, want, "hidden")
      h0 = hx
    end
    if unbatched then
      h0 = h0:unsqueeze(2)
      if c0 ~= nil then c0 = c0:unsqueeze(2) end
    end
  else
    local opts = { dtype = input.dtype, device = input.device }
    h0 = torch.zeros(self.num_layers * dirs, B, H, opts)
    if self.mode == "LSTM" then c0 = h0 end
  end
  local hs, cs = {}, {}
  local T = x:size(1)
  if T == 0 then fail(who .. ": the input has no time steps (its sequence dimension is 0)") end
  local xs = {}
  for t = 1, T do xs[t] = x:select(1, t) end
  local outs
  for layer = 0, self.num_layers - 1 do
    if layer > 0 then
      for t = 1, T do
        xs[t] = dirs == 2 and torch.cat({ outs[1][t], outs[2][t] }, 2) or outs[1][t]
        if self.dropout > 0 and self.training then xs[t] = F.dropout(xs[t], self.dropout, true) end
      end
    end
    outs = {}
    for d = 1, dirs do
      local k = layer * dirs + d
      local sfx = ("_l%d%s"):format(layer, d == 2 and "_reverse" or "")
      local c_in = c0 ~= nil and c0:select(1, k) or nil
      outs[d], hs[k], cs[k] = self:_run_direction(xs, sfx, h0:select(1, k), c_in, d == 2)
    end
  end
  x = torch.stack(outs[1], 1)
  if dirs == 2 then x = torch.cat({ x, torch.stack(outs[2], 1) }, 3) end
  local h_n = torch.stack(hs, 1)
  local c_n = self.mode == "LSTM" and torch.stack(cs, 1) or nil
  if unbatched then
    x, h_n = x:squeeze(2), h_n:squeeze(2)
    if c_n ~= nil then c_n = c_n:squeeze(2) end
  elseif self.batch_first then
    x = x:transpose(1, 2)
  end
  if c_n ~= nil then return x, { h_n, c_n } end
  return x, h_n
end

function RNNBase:extra_repr()
  local s = ("%d, %d"):format(self.input_size, self.hidden_size)
  if self.num_layers ~= 1 then s = s .. ", num_layers=" .. self.num_layers end
  if self.mode == "RNN_RELU" then s = s .. ", nonlinearity='relu'" end
  if not self.bias then s = s .. ", bias=False" end
  if self.batch_first then s = s .. ", batch_first=True" end
  if self.dropout ~= 0 then s = s .. ", dropout=" .. py_number(self.dropout) end
  if self.bidirectional then s = s .. ", bidirectional=" .. py_bool(true) end
  return s
end

-- nn.RNN(input_size, hidden_size[, num_layers][, {nonlinearity = 'tanh'
-- | 'relu', bias, batch_first, dropout, bidirectional, device, dtype}])
local RNN = RNNBase:extend("RNN")
R.RNN = RNN
function RNN:init(input_size, hidden_size, num_layers, opts)
  local o = type(num_layers) == "table" and num_layers or opts
  local nl = type(o) == "table" and o.nonlinearity or nil
  if nl == nil then nl = "tanh" end
  if nl ~= "tanh" and nl ~= "relu" then fail("Unknown nonlinearity '" .. tostring(nl) .. "'. Select from 'tanh' or 'relu'.") end
  self.nonlinearity = nl
  self:setup(nl == "tanh" and "RNN_TANH" or "RNN_RELU", "nn.RNN", input_size, hidden_size, num_layers, opts,
    { "nonlinearity" })
end

-- nn.GRU(input_size, hidden_size[, num_layers][, options]): options as nn.RNN's, less nonlinearity
local GRU = RNNBase:extend("GRU")
R.GRU = GRU
function GRU:init(input_size, hidden_size, num_layers, opts)
  self:setup("GRU", "nn.GRU", input_size, hidden_size, num_layers, opts)
end

-- nn.LSTM(input_size, hidden_size[, num_layers][, options]): options as nn.GRU's
local LSTM = RNNBase:extend("LSTM")
R.LSTM = LSTM
function LSTM:init(input_size, hidden_size, num_layers, opts)
  self:setup("LSTM", "nn.LSTM", input_size, hidden_size, num_layers, opts)
end

return R
