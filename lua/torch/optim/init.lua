-- torch.optim: Optimizer, SGD and Adam with PyTorch's update rules.
--
-- An optimizer holds the parameter tensors themselves (the objects that
-- net:parameters() returns). Module:to() moves parameters in place, so an
-- optimizer made before or after moving the model works either way.
-- Updates run under torch.no_grad, in place, on whatever device each
-- parameter lives on; per-parameter state lives beside its parameter.
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local options = require("torch.utils.errors").options

local class = require("torch.utils.class")

local optim = {}

local function is_tensor(v) return torch.is_tensor(v) end

-- ------------------------------------------------------------ Optimizer

local Optimizer = class.extend(nil, "Optimizer")
optim.Optimizer = Optimizer

-- A group option as Python shows it: 0.1, False, (0.9, 0.999).
local function py_value(v)
  local base = require("torch.nn.module")
  if type(v) == "number" then return base.py_number(v) end
  if type(v) == "boolean" then return base.py_bool(v) end
  if v == nil then return "None" end
  if type(v) == "table" and getmetatable(v) == nil then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = py_value(x) end
    return "(" .. table.concat(parts, ", ") .. (#parts == 1 and ",)" or ")")
  end
  return tostring(v)
end

-- print(opt) / the prompt: PyTorch's layout, one block per parameter
-- group with its options sorted by name.
function Optimizer.__tostring(self)
  local out = { self.__name .. " (" }
  for i, g in ipairs(self.param_groups or {}) do
    out[#out + 1] = "Parameter Group " .. (i - 1)
    local keys = {}
    for k in pairs(g) do if k ~= "params" then keys[#keys + 1] = k end end
    table.sort(keys)
    for _, k in ipairs(keys) do out[#out + 1] = "    " .. k .. ": " .. py_value(g[k]) end
  end
  out[#out + 1] = ")"
  return table.concat(out, "\n")
end

-- local MyOpt = optim.Optimizer:extend("MyOpt"): define MyOpt:init(params,
-- opts) calling optim.Optimizer.init(self, params, defaults), and
-- MyOpt:update(group) (called under no_grad for every param group).
function Optimizer:extend(name) return class.extend(self, name or "Optimizer") end

-- params: a list of tensors (net:parameters()), or a list of groups
-- {params = {...}, lr = ..., ...} whose missing options take `defaults`.
function Optimizer:init(params, defaults)
  if is_tensor(params) then
    fail(self.__name .. ": params must be a list of tensors (e.g. net:parameters()), got a single tensor")
  end
  if type(params) ~= "table" then
    fail(self.__name .. ": params must be a list of tensors or of parameter groups, got " .. type(params))
  end
  self.defaults = defaults or {}
  self.param_groups = {}
  self.state = {}
  if #params == 0 then fail("optimizer got an empty parameter list") end
  local groups = params
  if is_tensor(params[1]) then groups = { { params = params } } end
  for _, g in ipairs(groups) do self:add_param_group(g) end
end

function Optimizer:add_param_group(group)
  if type(group) ~= "table" or type(group.params) ~= "table" then
    fail("a parameter group must be a table with a `params` list")
  end
  local allowed = { "params" }
  for k in pairs(self.defaults) do allowed[#allowed + 1] = k end
  table.sort(allowed)
  check_options(group, "a parameter group of " .. self.__name, allowed)
  local g = {}
  for k, v in pairs(group) do g[k] = v end
  local ps = {}
  if is_tensor(group.params) then ps[1] = group.params else for i, p in ipairs(group.params) do ps[i] = p end end
  g.params = ps
  local seen = {}
  for _, other in ipairs(self.param_groups) do for _, p in ipairs(other.params) do seen[p] = true end end
  for i, p in ipairs(ps) do
    if not is_tensor(p) then
      fail(string.format("optimizer can only optimize Tensors, but parameter %d is a %s", i, type(p)))
    end
    if not p:is_floating_point() then
      fail(string.format("optimizer can only optimize floating-point tensors, but parameter %d is %s", i,
        tostring(p.dtype)))
    end
    if p.grad_fn ~= nil then fail("can't optimize a non-leaf Tensor") end
    if seen[p] then fail("some parameters appear in more than one parameter group") end
    seen[p] = true
  end
  for k, v in pairs(self.defaults) do
    if g[k] == nil then g[k] = v end
  end
  self.param_groups[#self.param_groups + 1] = g
end

-- Forgets the gradients (.grad = nil, PyTorch 2's default), or zeroes
-- them in place with {set_to_none = false}.
function Optimizer:zero_grad(opts)
  check_options(opts, "zero_grad", { "set_to_none" })
  local set_to_none = not (type(opts) == "table" and opts.set_to_none == false) and opts ~= false
  for _, g in ipairs(self.param_groups) do
    for _, p in ipairs(g.params) do
      local grad = p.grad
      if grad ~= nil then
        if set_to_none then p.grad = nil else grad:zero_() end
      end
    end
  end
end

-- opt:step([closure]): one update. closure, when given, re-evaluates the
-- model (zero_grad, forward, backward) and returns the loss, which step
-- returns.
function Optimizer:step(closure)
  local loss
  if closure ~= nil then
    loss = torch.enable_grad(closure)
  end
  torch.no_grad(function()
    for _, group in ipairs(self.param_groups) do self:update(group) end
  end)
  -- no closure, no value (the prompt then prints nothing, as Python's
  -- does for None)
  if closure ~= nil then return loss end
end

function Optimizer:update()
  fail(self.__name .. " does not implement update(group)")
end

-- The optimizer's state as plain tables: {state = {[i] = {...}},
-- param_groups = {{params = {i, ...}, lr = ...}}}, parameters numbered
-- 1, 2, ... across the groups in order (as PyTorch numbers them from 0).
function Optimizer:state_dict()
  local index, n = {}, 0
  local groups = {}
  for gi, g in ipairs(self.param_groups) do
    local pg = {}
    for k, v in pairs(g) do if k ~= "params" then pg[k] = v end end
    pg.params = {}
    for _, p in ipairs(g.params) do
      if index[p] == nil then n = n + 1; index[p] = n end
      pg.params[#pg.params + 1] = index[p]
    end
    groups[gi] = pg
  end
  local state = {}
  for p, st in pairs(self.state) do
    if index[p] then
      local copy = {}
      for k, v in pairs(st) do copy[k] = is_tensor(v) and v:clone() or v end
      state[index[p]] = copy
    end
  end
  return { state = state, param_groups = groups }
end

function Optimizer:load_state_dict(sd)
  if type(sd) ~= "table" or type(sd.param_groups) ~= "table" then
    fail("load_state_dict: expected a table with `state` and `param_groups`")
  end
  if #sd.param_groups ~= #self.param_groups then
    fail("loaded state dict has a different number of parameter groups")
  end
  if sd.state ~= nil and type(sd.state) ~= "table" then
    fail("load_state_dict: `state` must be a table, got " .. type(sd.state))
  end
  -- everything is checked before anything changes
  for i, st in pairs(sd.state or {}) do
    if type(st) ~= "table" then
      fail(("load_state_dict: state[%s] must be a table, got %s"):format(tostring(i), type(st)))
    end
    for k, v in pairs(st) do
      if not is_tensor(v) and type(v) ~= "number" and type(v) ~= "boolean" then
        fail(("load_state_dict: state[%s].%s must be a tensor or a number, got %s"):format(tostring(i), tostring(k), type(v)))
      end
    end
  end
  local byindex = {}
  for gi, g in ipairs(self.param_groups) do
    local sg = sd.param_groups[gi]
    if type(sg) ~= "table" or type(sg.params) ~= "table" then
      fail(("load_state_dict: param_groups[%d] must be a table with a `params` list, got %s"):format(gi, type(sg)))
    end
    -- a loaded setting replaces one of the same type only (lr a number, ...)
    for k, v in pairs(sg) do
      if k ~= "params" and g[k] ~= nil and type(v) ~= type(g[k]) then
        fail(("load_state_dict: param_groups[%d].%s must be a %s, got %s"):format(gi, tostring(k), type(g[k]), type(v)))
      end
    end
    if #sg.params ~= #g.params then
      fail("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
    end
    for i, p in ipairs(g.params) do byindex[sg.params[i]] = p end
  end
  for gi, g in ipairs(self.param_groups) do
    for k, v in pairs(sd.param_groups[gi]) do if k ~= "params" then g[k] = v end end
  end
  self.state = {}
  for i, st in pairs(sd.state or {}) do
    local p = byindex[i]
    if p then
      local copy = {}
      for k, v in pairs(st) do
        if is_tensor(v) then
          copy[k] = v:to(p.device, v:is_floating_point() and p.dtype or v.dtype):clone()
        else
          copy[k] = v
        end
      end
      self.state[p] = copy
    end
  end
end

local function check_number(v, name, who, lo)
  if type(v) ~= "number" then fail(string.format("%s: %s must be a number, got %s", who, name, type(v))) end
  if lo and v < lo then fail(string.format("Invalid %s: %s", name, tostring(v))) end
end

-- --------------------------------------------------------------- SGD

-- optim.SGD(params, {lr = 1e-3, momentum = 0, dampening = 0,
-- weight_decay = 0, nesterov = false, maximize = false}), PyTorch's rule:
--   g = grad (+ weight_decay * p)
--   buf = g at the first step, then momentum * buf + (1 - dampening) * g
--   g = g + momentum * buf (nesterov) or buf
--   p = p - lr * g
local SGD = Optimizer:extend("SGD")
optim.SGD = SGD

function SGD:init(params, opts)
  opts = options(opts, "SGD")
  check_options(opts, "optim.SGD", { "lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize" })
  local d = {
    lr = opts.lr == nil and 1e-3 or opts.lr,
    momentum = opts.momentum or 0,
    dampening = opts.dampening or 0,
    weight_decay = opts.weight_decay or 0,
    nesterov = opts.nesterov or false,
    maximize = opts.maximize or false,
  }
  check_number(d.lr, "learning rate", "SGD", 0)
  check_number(d.momentum, "momentum value", "SGD", 0)
  check_number(d.weight_decay, "weight_decay value", "SGD", 0)
  check_number(d.dampening, "dampening value", "SGD")
  if d.nesterov and (d.momentum <= 0 or d.dampening ~= 0) then
    fail("Nesterov momentum requires a momentum and zero dampening")
  end
  Optimizer.init(self, params, d)
end

function SGD:update(group)
  local lr, momentum, dampening = group.lr, group.momentum, group.dampening
  local wd, nesterov = group.weight_decay, group.nesterov
  for _, p in ipairs(group.params) do
    local grad = p.grad
    if grad ~= nil then
      local data = p.data
      local d_p = group.maximize and -grad or grad
      if wd ~= 0 then d_p = d_p:add(data, wd) end
      if momentum ~= 0 then
        local st = self.state[p]
        if st == nil then st = {}; self.state[p] = st end
        local buf = st.momentum_buffer
        if buf == nil then
          buf = d_p:detach():clone()
          st.momentum_buffer = buf
        else
          buf:mul_(momentum):add_(d_p, 1 - dampening)
        end
        if nesterov then d_p = d_p:add(buf, momentum) else d_p = buf end
      end
      data:add_(d_p, -lr)
    end
  end
end

-- --------------------------------------------------------------- Adam

-- optim.Adam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8,
-- weight_decay = 0, amsgrad = false, maximize = false}), PyTorch's rule:
--   g = grad (+ weight_decay * p); t = t + 1
--   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
--   p = p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
-- (with amsgrad, v in the denominator is the running maximum of v).
local Adam = Optimizer:extend("Adam")
optim.Adam = Adam

function Adam:init(params, opts)
  opts = options(opts, "Adam")
  check_options(opts, "optim.Adam", { "lr", "betas", "eps", "weight_decay", "amsgrad", "maximize" })
  local betas = opts.betas or { 0.9, 0.999 }
  if type(betas) ~= "table" then fail("Adam: betas must be a pair {beta1, beta2}, got " .. type(betas)) end
  local d = {
    lr = opts.lr == nil and 1e-3 or opts.lr,
    betas = { betas[1], betas[2] },
    eps = opts.eps == nil and 1e-8 or opts.eps,
    weight_decay = opts.weight_decay or 0,
    amsgrad = opts.amsgrad or false,
    maximize = opts.maximize or false,
  }
  check_number(d.lr, "learning rate", "Adam", 0)
  check_number(d.eps, "epsilon value", "Adam", 0)
  check_number(d.weight_decay, "weight_decay value", "Adam", 0)
  for i = 1, 2 do
    local b = d.betas[i]
    if type(b) ~= "number" or b < 0 or b >= 1 then
      fail(string.format("Invalid beta parameter at index %d: %s", i, tostring(b)))
    end
  end
  Optimizer.init(self, params, d)
end

function Adam:update(group)
  local lr, eps, wd = group.lr, group.eps, group.weight_decay
  local beta1, beta2 = group.betas[1], group.betas[2]
  for _, p in ipairs(group.params) do
    local grad = p.grad
    if grad ~= nil then
      local data = p.data
      if group.maximize then grad = -grad end
      local st = self.state[p]
      if st == nil or st.step == nil then
        st = { step = 0, exp_avg = torch.zeros_like(data), exp_avg_sq = torch.zeros_like(data) }
        if group.amsgrad then st.max_exp_avg_sq = torch.zeros_like(data) end
        self.state[p] = st
      end
      st.step = st.step + 1
      if wd ~= 0 then grad = grad:add(data, wd) end
      st.exp_avg:mul_(beta1):add_(grad, 1 - beta1)
      st.exp_avg_sq:mul_(beta2):add_(grad * grad, 1 - beta2)
      local step = st.step
      local bias_correction1 = 1 - beta1 ^ step
      local bias_correction2 = 1 - beta2 ^ step
      local step_size = lr / bias_correction1
      local bc2_sqrt = math.sqrt(bias_correction2)
      local denom
      if group.amsgrad then
        if st.max_exp_avg_sq == nil then st.max_exp_avg_sq = torch.zeros_like(data) end
        st.max_exp_avg_sq:copy_(torch.maximum(st.max_exp_avg_sq, st.exp_avg_sq))
        denom = (st.max_exp_avg_sq:sqrt() / bc2_sqrt):add_(eps)
      else
        denom = (st.exp_avg_sq:sqrt() / bc2_sqrt):add_(eps)
      end
      data:add_(st.exp_avg / denom, -step_size)
    end
  end
end

return optim
