-- nn_conv_modules_spec.lua: the modules of convolutional networks
-- (Conv2d, Conv1d, the poolings, BatchNorm2d/1d, Lazy*), buffers as a
-- module concept (to, state_dict, load_state_dict, save/load,
-- DataParallel on 2 simulated GPUs), net:apply, m:isinstance, nn.init's
-- statistics and fans, nn.functional against the methods and modules,
-- and the device error. Printed forms, LeNet's forward/backward and batch
-- norm's running statistics are compared with PyTorch's
-- (spec/support/lenet_golden.lua, from gen_lenet_golden.py).
local torch = require("torch")
local H = require("helpers")
local nn = torch.nn
local F = nn.functional
local G = dofile("spec/support/lenet_golden.lua")

local gpus = H.gpus

-- Cases that need the engine's convolution / pooling / batch-norm ops run
-- once those functional forms exist (branches conv and pool).
local function needs(names, it_fn)
  for _, n in ipairs(names) do
    if F[n] == nil then
      return function(name) pending(name .. " (needs F." .. n .. ")") end
    end
  end
  return it_fn
end

-- The golden generator's formula: float32(scale * sin(0.37 i + phase)),
-- i = 0..n-1, computed in float64 and reshaped row-major.
local function fill(shape, phase, scale)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = (torch.arange(n, { dtype = torch.float64 }) * 0.37 + phase):sin() * scale
  return v:float():reshape(shape)
end

local function flat(t) return H.flat(t:tolist()) end

describe("nn modules of convolutional networks", function()
  teardown(function() H.release_gpus() end)

  -- ------------------------------------------------------------- reprs

  it("print as PyTorch's (every constructor of the golden table)", function()
    assert.is_true(#G.reprs >= 25)
    for _, case in ipairs(G.reprs) do
      local m = assert(load("local nn = ...; return " .. case[1]))(nn)
      assert.are.equal(case[2], tostring(m), case[1])
    end
  end)

  it("a LeNet prints as the book's, with 1-based positions", function()
    local net = nn.Sequential(nn.Conv2d(1, 6, 5, { padding = 2 }), nn.Sigmoid(), nn.AvgPool2d(2, { stride = 2 }),
      nn.Flatten(), nn.LazyLinear(10))
    assert.are.equal([[
Sequential(
  (1): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))
  (2): Sigmoid()
  (3): AvgPool2d(kernel_size=2, stride=2, padding=0)
  (4): Flatten(start_dim=2, end_dim=-1)
  (5): LazyLinear(in_features=0, out_features=10, bias=True)
)]], tostring(net))
  end)

  -- ------------------------------------------------------- constructors

  it("Conv2d holds weight [out, in/groups, kH, kW] and bias [out], initialised as PyTorch's", function()
    torch.manual_seed(0)
    local c = nn.Conv2d(8, 32, { 3, 5 }, { groups = 2 })
    assert.are.same({ 32, 4, 3, 5 }, H.shape(c.weight))
    assert.are.same({ 32 }, H.shape(c.bias))
    assert.is_true(nn.is_parameter(c.weight) and c.weight.requires_grad)
    -- kaiming_uniform_(a = sqrt(5)) and the bias: both U(-b, b), b = 1/sqrt(fan_in), fan_in = 4 * 3 * 5
    local b = 1 / math.sqrt(4 * 3 * 5)
    for _, t in ipairs({ c.weight, c.bias }) do
      assert.is_true(t:abs():max():item() <= b + 1e-7)
    end
    assert.is_true(c.weight:abs():max():item() > 0.95 * b) -- 1920 draws reach near the bound
    local c1 = nn.Conv1d(2, 4, 3, { bias = false })
    assert.are.same({ 4, 2, 3 }, H.shape(c1.weight))
    assert.is_nil(c1.bias)
    assert.are.equal(1, #c1:parameters())
  end)

  it("constructors refuse what PyTorch refuses, with its messages", function()
    H.errors(function() nn.Conv2d(3, 6, 3, { stride = 2, padding = "same" }) end,
      "padding='same' is not supported for strided convolutions")
    H.errors(function() nn.Conv2d(3, 6, 3, { padding = "full" }) end,
      "Invalid padding string 'full', should be one of {'same', 'valid'}")
    H.errors(function() nn.Conv2d(3, 6, 3, { groups = 2 }) end, "in_channels must be divisible by groups")
    H.errors(function() nn.Conv2d(4, 6, 3, { groups = 4 }) end, "out_channels must be divisible by groups")
    H.errors(function() nn.Conv2d(4, 8, 3, { groups = 0 }) end, "groups must be a positive integer")
    H.errors(function() nn.Conv2d(4, 8, { 3, 3, 3 }) end, { "kernel_size", "list of 2 integers" })
    H.errors(function() nn.Conv2d(4, 8, 3, { strides = 2 }) end, "strides")
    H.errors(function() nn.MaxPool2d(0) end, { "kernel_size", "positive" })
    H.errors(function() nn.BatchNorm2d(2.5) end, { "num_features", "integer" })
    H.errors(function() nn.BatchNorm2d(2, { momentum = "x" }) end, "momentum")
  end)

  -- ----------------------------------------------------------- buffers

  it("BatchNorm's buffers: zeros, ones and an int64 count, not parameters, in the state dict", function()
    local bn = nn.BatchNorm2d(3)
    H.check(bn.running_mean, "float32", { 3 }, { 0.0, 0.0, 0.0 })
    H.check(bn.running_var, "float32", { 3 }, { 1.0, 1.0, 1.0 })
    H.check(bn.num_batches_tracked, "int64", {}, 0)
    H.check(bn.weight, "float32", { 3 }, { 1.0, 1.0, 1.0 })
    H.check(bn.bias, "float32", { 3 }, { 0.0, 0.0, 0.0 })
    local pn, bnames = {}, {}
    for name in bn:named_parameters() do pn[#pn + 1] = name end
    for name in bn:named_buffers() do bnames[#bnames + 1] = name end
    assert.are.same({ "weight", "bias" }, pn)
    assert.are.same({ "running_mean", "running_var", "num_batches_tracked" }, bnames)
    assert.are.same({ "weight", "bias", "running_mean", "running_var", "num_batches_tracked" }, bn:state_dict().__keys)
    local plain = nn.BatchNorm1d(4, { affine = false, track_running_stats = false })
    assert.are.equal(0, #plain:parameters())
    assert.are.equal(0, #plain:buffers())
    -- nested: buffers of children with their prefixes
    local net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    local names = {}
    for name in net:named_buffers() do names[#names + 1] = name end
    assert.are.same({ "2.running_mean", "2.running_var", "2.num_batches_tracked" }, names)
  end)

  it("a user module's buffer moves with to()/cuda()/cpu(), keeping its tensor object and dtype", function()
    if not gpus(2) then return pending("needs 2 CUDA devices") end
    local bn = nn.BatchNorm2d(2)
    local rm, count = bn.running_mean, bn.num_batches_tracked
    bn:cuda(1)
    assert.are.equal(torch.device("cuda:1"), bn.running_mean.device)
    assert.are.equal(torch.device("cuda:1"), bn.num_batches_tracked.device)
    assert.is_true(rawequal(rm, bn.running_mean))
    assert.is_true(rawequal(count, bn.num_batches_tracked))
    bn:to(torch.float64)
    assert.are.equal("float64", H.dtype(bn.running_var))
    assert.are.equal("int64", H.dtype(bn.num_batches_tracked)) -- dtype moves convert floating tensors only
    bn:cpu()
    assert.are.equal(torch.device("cpu"), bn.running_var.device)
  end)

  it("load_state_dict copies buffers and names missing and unexpected buffer keys", function()
    local a, b = nn.BatchNorm2d(2), nn.BatchNorm2d(2)
    torch.no_grad(function()
      a.running_mean:copy_(torch.tensor({ 0.5, -1.5 }))
      a.num_batches_tracked:fill_(7)
    end)
    b:load_state_dict(a:state_dict())
    H.check(b.running_mean, "float32", { 2 }, { 0.5, -1.5 })
    H.check(b.num_batches_tracked, "int64", {}, 7)
    local sd = a:state_dict()
    sd.running_var = nil
    sd.extra_stat = torch.zeros(2)
    H.errors(function() b:load_state_dict(sd) end,
      { 'Missing key(s) in state_dict: "running_var"', 'Unexpected key(s) in state_dict: "extra_stat"' })
    local r = b:load_state_dict(sd, { strict = false })
    assert.are.same({ "running_var" }, r.missing_keys)
    assert.are.same({ "extra_stat" }, r.unexpected_keys)
  end)

  it("buffers round-trip through torch.save and torch.load", function()
    local net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    torch.no_grad(function()
      net[2].running_mean:copy_(torch.tensor({ 0.25, 2.0 }))
      net[2].running_var:copy_(torch.tensor({ 3.0, 0.5 }))
      net[2].num_batches_tracked:fill_(12)
    end)
    local path = os.tmpname()
    torch.save(net:state_dict(), path)
    local fresh = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    fresh:load_state_dict(torch.load(path))
    os.remove(path)
    H.check(fresh[2].running_mean, "float32", { 2 }, { 0.25, 2.0 })
    H.check(fresh[2].running_var, "float32", { 2 }, { 3.0, 0.5 })
    H.check(fresh[2].num_batches_tracked, "int64", {}, 12)
    assert.are.same(flat(net[1].weight), flat(fresh[1].weight))
  end)

  -- A module that updates its buffers in place in forward, as batch norm
  -- does, to see which DataParallel replica's updates reach the original.
  local Counter = nn.Module:extend("Counter")
  function Counter:init()
    self.fc = nn.Linear(2, 2)
    self:register_buffer("calls", torch.zeros({}, { dtype = torch.int64 }))
    self:register_buffer("seen", torch.zeros(2))
  end
  function Counter:forward(x)
    self.calls:add_(1)
    self.seen:add_(x:detach():sum(1))
    return self.fc(x)
  end

  it("DataParallel replicas get the buffers; the replica on the first device updates the original's", function()
    if not gpus(2) then return pending("needs 2 CUDA devices") end
    local m = Counter():to("cuda:0")
    local dp = nn.DataParallel(m, { device_ids = { 0, 1 } })
    local x = torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 }, { 10.0, 20.0 }, { 30.0, 40.0 } }, { device = "cuda:0" })
    local out = dp(x)
    assert.are.same({ 4, 2 }, H.shape(out))
    -- only device 0's slice (rows 1, 2) is counted, as PyTorch's replicas
    H.check(m.calls, "int64", {}, 1)
    H.check(m.seen, "float32", { 2 }, { 4.0, 6.0 })
    assert.are.equal(torch.device("cuda:0"), m.seen.device)
    -- the state dict carries them under module.
    local keys = dp:state_dict().__keys
    assert.are.same({ "module.calls", "module.seen", "module.fc.weight", "module.fc.bias" }, keys)
  end)

  it("DataParallel refuses a buffer left on another device, naming it", function()
    if not gpus(2) then return pending("needs 2 CUDA devices") end
    local m = Counter():to("cuda:0")
    m.seen = m.seen:to("cpu")
    local dp = nn.DataParallel(m, { device_ids = { 0, 1 } })
    H.errors(function() dp(torch.ones(4, 2, { device = "cuda:0" })) end, { "buffers", "cuda:0", "cpu" })
  end)

  -- ----------------------------------------------------- apply, isinstance

  it("apply visits children before their parent, every module once, and returns the net", function()
    local inner = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    local net = nn.Sequential(nn.Conv2d(1, 2, 3), inner, nn.Linear(2, 1))
    local order = {}
    local r = net:apply(function(m) order[#order + 1] = m end)
    assert.is_true(rawequal(r, net))
    local expect = { net[1], inner[1], inner[2], inner, net[3], net }
    assert.are.equal(#expect, #order)
    for i = 1, #expect do assert.is_true(rawequal(expect[i], order[i]), "position " .. i) end
  end)

  it("the book's init_weights through apply and isinstance", function()
    torch.manual_seed(1)
    local net = nn.Sequential(nn.Conv2d(1, 6, 5), nn.Sigmoid(), nn.Linear(24, 10))
    net:apply(function(m)
      if m:isinstance(nn.Linear) or m:isinstance(nn.Conv2d) then nn.init.zeros_(m.weight) end
    end)
    assert.are.equal(0, net[1].weight:abs():sum():item())
    assert.are.equal(0, net[3].weight:abs():sum():item())
  end)

  it("isinstance is true for the class and its ancestors, false otherwise", function()
    local Mine = nn.Conv2d:extend("MyConv")
    local c = Mine(1, 2, 3)
    assert.is_true(c:isinstance(Mine))
    assert.is_true(c:isinstance(nn.Conv2d))
    assert.is_true(c:isinstance(nn.Module))
    assert.is_false(c:isinstance(nn.Linear))
    assert.is_false(nn.Conv2d(1, 2, 3):isinstance(Mine))
    assert.is_true(nn.LazyLinear(3):isinstance(nn.Linear))
    H.errors(function() c:isinstance("Conv2d") end, "expected a module class")
  end)

  -- ----------------------------------------------------------- nn.init

  it("nn.init fills in place with PyTorch's statistics, conv fans = in/groups * kernel area", function()
    torch.manual_seed(3)
    local w = torch.empty(64, 8, 3, 3) -- fan_in 72, fan_out 576
    local fi, fo = nn.init._calculate_fan_in_and_fan_out(w)
    assert.are.same({ 72, 576 }, { fi, fo })
    local grouped = nn.Conv2d(16, 32, 3, { groups = 4 }).weight -- [32, 4, 3, 3]
    assert.are.equal(36, (nn.init._calculate_fan_in_and_fan_out(grouped)))
    local function std(t) return t:double():std():item() end
    local function maxabs(t) return t:abs():max():item() end
    assert.is_true(rawequal(w, nn.init.xavier_uniform_(w)))
    local xb = math.sqrt(6 / (72 + 576))
    assert.is_true(maxabs(w) <= xb * (1 + 1e-6) and maxabs(w) > 0.99 * xb)
    nn.init.xavier_normal_(w, 2.0)
    assert.is_near(2 * math.sqrt(2 / (72 + 576)), std(w), 0.05 * 2 * math.sqrt(2 / (72 + 576)))
    -- a layer with no channels builds, as PyTorch's (its init leaves empty tensors alone; issue 33)
    local empty = nn.Conv2d(0, 0, 3)
    assert.are.equal("torch.Size([0, 0, 3, 3])", tostring(empty.weight.shape))
    assert.are.equal(0, nn.init.kaiming_normal_(torch.empty(0, 4)):numel())
    nn.init.kaiming_uniform_(w, { nonlinearity = "relu" })
    local kb = math.sqrt(2) * math.sqrt(3 / 72)
    assert.is_true(maxabs(w) <= kb * (1 + 1e-6) and maxabs(w) > 0.99 * kb)
    nn.init.kaiming_normal_(w, { mode = "fan_out", nonlinearity = "relu" })
    assert.is_near(math.sqrt(2 / 576), std(w), 0.05 * math.sqrt(2 / 576))
    nn.init.normal_(w, 3, 0.5)
    assert.is_near(3, w:mean():item(), 0.03)
    assert.is_near(0.5, std(w), 0.025)
    nn.init.uniform_(w, -2, -1)
    assert.is_true(w:max():item() <= -1 and w:min():item() >= -2)
    nn.init.constant_(w, 0.25)
    assert.are.equal(0.25 * w:numel(), w:sum():item())
    nn.init.ones_(w); assert.are.equal(w:numel(), w:sum():item())
    nn.init.zeros_(w); assert.are.equal(0, w:abs():sum():item())
  end)

  -- ------------------------------------------------------ nn.functional

  it("F's activations, softmax and linear give the methods' and modules' numbers", function()
    local x = torch.tensor({ { -1.5, 0, 2 }, { 3, -0.25, 1 } })
    assert.are.same(flat(x:relu()), flat(F.relu(x)))
    assert.are.same(flat(x:sigmoid()), flat(F.sigmoid(x)))
    assert.are.same(flat(x:tanh()), flat(F.tanh(x)))
    assert.are.same(flat(x:softmax(2)), flat(F.softmax(x, 2)))
    assert.are.same(flat(x:log_softmax(1)), flat(F.log_softmax(x, { dim = 1 })))
    local y = x:clone()
    F.relu(y, { inplace = true })
    assert.are.same(flat(x:relu()), flat(y))
    local lin = nn.Linear(3, 4)
    assert.are.same(flat(lin(x)), flat(F.linear(x, lin.weight, lin.bias)))
    H.assert_close(flat(F.linear(x, lin.weight)), flat(x:matmul(lin.weight:t())))
    H.errors(function() F.softmax(x) end, { "softmax", "dimension", "required" })
  end)

  it("F.cross_entropy and F.mse_loss equal the loss modules, reductions included", function()
    local logits = torch.tensor({ { 1, 2, 0.5 }, { -1, 0, 3 } })
    local target = torch.tensor({ 2, 3 })
    for _, red in ipairs({ "mean", "sum", "none" }) do
      assert.are.same(flat(nn.CrossEntropyLoss({ reduction = red })(logits, target)),
        flat(F.cross_entropy(logits, target, { reduction = red })))
      assert.are.same(flat(nn.MSELoss({ reduction = red })(logits, logits * 2)),
        flat(F.mse_loss(logits, logits * 2, { reduction = red })))
    end
    H.assert_close(F.cross_entropy(logits, target):item(),
      -(logits:log_softmax(2)[1][2]:item() + logits:log_softmax(2)[2][3]:item()) / 2)
    H.errors(function() F.cross_entropy(logits, torch.tensor({ 2, 9 })) end, { "cross_entropy", "out of bounds" })
    H.errors(function() F.mse_loss(logits, target, { reduction = "avg" }) end, { "mse_loss", "reduction" })
  end)

  it("F.dropout drops only in training: the option, the boolean, PyTorch's default", function()
    torch.manual_seed(5)
    local x = torch.ones(10000)
    assert.is_true(rawequal(x, F.dropout(x, 0.5, { training = false })))
    assert.is_true(rawequal(x, F.dropout(x, 0.5, false)))
    assert.is_true(rawequal(x, F.dropout(x, { p = 0.3, training = false })))
    local y = F.dropout(x, 0.25) -- training by default, as PyTorch's F.dropout
    local zeros = y:eq(0):sum():item()
    assert.is_true(zeros > 2200 and zeros < 2800, "dropped " .. zeros)
    H.assert_close(y:max():item(), 1 / 0.75)
    local z = F.dropout(x, 0.5, { training = true })
    assert.is_true(z:eq(0):sum():item() > 4500)
    H.errors(function() F.dropout(x, 1.5) end, "between 0 and 1")
    H.errors(function() F.dropout(x, 0.5, "yes") end, "options")
  end)

  it("torch.nn.functional and nn.functional are the same table with the contract's functions", function()
    assert.is_true(rawequal(torch.nn.functional, nn.functional))
    for _, name in ipairs({ "relu", "sigmoid", "tanh", "softmax", "log_softmax", "dropout", "linear", "cross_entropy",
      "mse_loss" }) do
      assert.are.equal("function", type(F[name]), name)
    end
  end)

  -- ------------------------------------------------------ device errors

  it("a layer given an input on another device names the parameter or buffer and both devices", function()
    if not gpus(1) then return pending("needs a CUDA device") end
    local x = torch.ones(2, 3, { device = "cuda:0" })
    local msg = H.errors(function() nn.Linear(3, 2)(x) end, "Linear: weight is on cpu but the input is on cuda:0")
    assert.is_nil(msg:find("luaL_", 1, true))
    H.errors(function() nn.BatchNorm1d(3, { affine = false })(x) end,
      "BatchNorm1d: running_mean is on cpu but the input is on cuda:0")
    local bn = nn.BatchNorm2d(3):to("cuda:0")
    bn.running_var = bn.running_var:to("cpu")
    H.errors(function() bn(torch.ones(2, 3, 4, 4, { device = "cuda:0" })) end,
      "BatchNorm2d: running_var is on cpu but the input is on cuda:0")
    H.errors(function() nn.Conv2d(3, 2, 3)(torch.ones(1, 3, 5, 5, { device = "cuda:0" })) end,
      "Conv2d: weight is on cpu but the input is on cuda:0")
    local c = nn.Conv2d(3, 2, 3):to("cuda:0")
    H.errors(function() c(torch.ones(1, 3, 5, 5)) end, "Conv2d: weight is on cuda:0 but the input is on cpu")
  end)

  it("BatchNorm refuses inputs of the wrong rank, as PyTorch", function()
    H.errors(function() nn.BatchNorm2d(3)(torch.zeros(2, 3, 4)) end, "expected 4D input (got 3D input)")
    H.errors(function() nn.BatchNorm1d(3)(torch.zeros(2, 3, 4, 5)) end, "expected 2D or 3D input (got 4D input)")
  end)

  -- ------------------------------------------------------- Lazy modules

  it("LazyLinear takes in_features from the first call, keeps its parameter objects, prints as Linear", function()
    local l = nn.LazyLinear(10)
    local w = l.weight
    local opt = torch.optim.SGD(l:parameters(), { lr = 0.1 })
    local y = l(torch.ones(2, 5))
    assert.are.same({ 2, 10 }, H.shape(y))
    assert.are.equal(G.lazy_after.linear, tostring(l))
    assert.are.same({ 10, 5 }, H.shape(l.weight))
    assert.is_true(rawequal(w, l.weight)) -- the optimizer's tensor
    local b = 1 / math.sqrt(5)
    assert.is_true(l.weight:abs():max():item() <= b and l.bias:abs():max():item() <= b)
    y:sum():backward()
    local before = l.weight:clone()
    opt:step()
    assert.is_false(torch.equal(before, l.weight))
    assert.is_false(l:isinstance(nn.LazyLinear))
    H.check(l(torch.ones(1, 5)), "float32", { 1, 10 })
  end)

  it("Lazy modules materialise on the input's device", function()
    if not gpus(1) then return pending("needs a CUDA device") end
    local l = nn.LazyLinear(4)
    l(torch.ones(3, 6, { device = "cuda:0" }))
    assert.are.equal(torch.device("cuda:0"), l.weight.device)
    assert.are.equal(torch.device("cuda:0"), l.bias.device)
    assert.are.same({ 4, 6 }, H.shape(l.weight))
  end)

  needs({ "conv2d" }, it)("LazyConv2d takes in_channels from the first call and prints as Conv2d", function()
    local c = nn.LazyConv2d(6, 5, { padding = 2 })
    local y = c(torch.zeros(1, 3, 8, 8))
    assert.are.same({ 1, 6, 8, 8 }, H.shape(y))
    assert.are.equal(G.lazy_after.conv, tostring(c))
    assert.are.same({ 6, 3, 5, 5 }, H.shape(c.weight))
    assert.is_true(c:isinstance(nn.Conv2d))
  end)

  -- ------------------------------------------------- LeNet against PyTorch

  local function lenet(act, pool)
    return nn.Sequential(
      nn.Conv2d(1, 6, 5, { padding = 2 }), act(), pool(2, { stride = 2 }),
      nn.Conv2d(6, 16, 5), act(), pool(2, { stride = 2 }),
      nn.Flatten(),
      nn.Linear(16 * 5 * 5, 120), act(),
      nn.Linear(120, 84), act(),
      nn.Linear(84, 10))
  end

  -- Parameters from the generator's formula, in named_parameters order.
  local function load_weights(net)
    torch.no_grad(function()
      for i, kv in ipairs(net:named_parameters()) do
        local p = kv[2]
        local s = p.shape
        local fan_in = 16
        if #s > 1 then
          fan_in = s[2]
          for d = 3, #s do fan_in = fan_in * s[d] end
        end
        local shape = {}
        for d = 1, #s do shape[d] = s[d] end
        p:copy_(fill(shape, 0.5 * (i - 1), 2.0 / math.sqrt(fan_in)))
      end
    end)
  end

  local function check_summary(t, g, name)
    local v = flat(t:double():reshape(-1))
    local sum, sumsq = 0, 0
    for _, x in ipairs(v) do sum = sum + x; sumsq = sumsq + x * x end
    local scale = math.sqrt(g.sumsq)
    H.assert_close(sum, g.sum, 1e-3, 1e-4 * scale + 1e-9, name .. " sum")
    H.assert_close(sumsq, g.sumsq, 1e-3, 1e-12, name .. " sumsq")
    H.assert_close({ table.unpack(v, 1, #g.first) }, g.first, 1e-3, 1e-4 * scale + 1e-9, name .. " first")
  end

  local function lenet_case(key, act, pool, device)
    local golden = G.lenet[key]
    local net = lenet(act, pool)
    load_weights(net)
    net:to(device)
    local X = fill({ 3, 1, 28, 28 }, 1.25, 1.0):to(device)
    local y = torch.tensor({ 4, 8, 1 }, { device = device })
    local logits = net(X)
    local loss = F.cross_entropy(logits, y)
    loss:backward()
    H.assert_close(flat(logits), golden.logits, 1e-4, 1e-5, key .. " logits")
    H.assert_close(loss:item(), golden.loss, 1e-5, 1e-6, key .. " loss")
    local n = 0
    for name, p in net:named_parameters() do
      check_summary(p.grad:cpu(), golden.grads[name], key .. " " .. name)
      n = n + 1
    end
    assert.are.equal(10, n)
  end

  local it_lenet = needs({ "conv2d", "avg_pool2d", "max_pool2d" }, it)

  it_lenet("D2L's LeNet (sigmoid, average pooling): logits, loss and every gradient as PyTorch's", function()
    lenet_case("sigmoid_avg", nn.Sigmoid, nn.AvgPool2d, "cpu")
  end)

  it_lenet("LeNet with ReLU and max pooling: logits, loss and every gradient as PyTorch's", function()
    lenet_case("relu_max", nn.ReLU, nn.MaxPool2d, "cpu")
  end)

  it_lenet("LeNet on a simulated GPU gives the same numbers", function()
    if not gpus(1) then return pending("needs a CUDA device") end
    lenet_case("relu_max", nn.ReLU, nn.MaxPool2d, "cuda:0")
  end)

  it_lenet("LeNet through DataParallel on 2 simulated GPUs: the gradients of one device's step", function()
    if not gpus(2) then return pending("needs 2 CUDA devices") end
    local single = lenet(nn.ReLU, nn.MaxPool2d)
    load_weights(single)
    single:to("cuda:0")
    local twin = lenet(nn.ReLU, nn.MaxPool2d)
    load_weights(twin)
    twin:to("cuda:0")
    local dp = nn.DataParallel(twin, { device_ids = { 0, 1 } })
    local X = fill({ 6, 1, 28, 28 }, 0.3, 1.0):to("cuda:0")
    local y = torch.tensor({ 4, 8, 1, 2, 10, 6 }, { device = "cuda:0" })
    F.cross_entropy(single(X), y):backward()
    local grads = {}
    for name, p in single:named_parameters() do grads[name] = p.grad end
    local out = dp(X)
    assert.are.equal(torch.device("cuda:0"), out.device)
    F.cross_entropy(out, y):backward()
    local n = 0
    for name, p in twin:named_parameters() do
      local ref = grads[name]
      H.assert_close(flat(p.grad), flat(ref), 1e-4, 1e-6, name)
      n = n + 1
    end
    assert.are.equal(10, n)
  end)

  -- ------------------------------------------- each module's numbers

  -- Fills the module's parameters as the generator does, calls it on the
  -- generator's input and compares the output with PyTorch's.
  local function module_output_case(case)
    local m = assert(load("local nn = ...; return " .. case.ctor))(nn)
    torch.no_grad(function()
      for i, kv in ipairs(m:named_parameters()) do
        local shape = {}
        for d, n in ipairs(kv[2].shape) do shape[d] = n end
        kv[2]:copy_(fill(shape, 0.5 * (i - 1), 0.3))
      end
    end)
    local y = m(fill(case.input, 0.4, 1.0))
    assert.are.same(case.shape, H.shape(y), case.ctor)
    check_summary(y, case.out, case.ctor)
  end

  needs({ "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm" }, it)(
    "pooling and batch-norm modules pass their options on: outputs as PyTorch's", function()
    local n = 0
    for _, case in ipairs(G.outputs) do
      if not case.ctor:find("^nn%.Conv") then module_output_case(case); n = n + 1 end
    end
    assert.are.equal(9, n)
  end)

  needs({ "conv2d", "conv1d" }, it)("convolution modules pass their options on: outputs as PyTorch's", function()
    local n = 0
    for _, case in ipairs(G.outputs) do
      if case.ctor:find("^nn%.Conv") then module_output_case(case); n = n + 1 end
    end
    assert.are.equal(5, n)
  end)

  -- ------------------------------------------------------ batch norm

  local it_bn = needs({ "batch_norm" }, it)

  local function bn_steps(momentum, device)
    local bn = nn.BatchNorm2d(3, { momentum = momentum })
    torch.no_grad(function()
      bn.weight:copy_(fill({ 3 }, 0.3, 1.0) + 1.0)
      bn.bias:copy_(fill({ 3 }, 0.9, 0.5))
    end)
    bn:to(device)
    for step = 0, 2 do bn((fill({ 4, 3, 5, 5 }, 0.1 * step, 2.0) + step):to(device)) end
    bn:eval()
    return bn, bn(fill({ 2, 3, 5, 5 }, 2.0, 1.5):to(device))
  end

  it_bn("BatchNorm2d's running statistics after 3 steps and its eval output are PyTorch's", function()
    for key, momentum in pairs({ momentum = 0.1, cumulative = false }) do
      local g = G.batchnorm[key]
      local bn, y = bn_steps(momentum, "cpu")
      H.assert_close(flat(bn.running_mean), g.running_mean, 1e-5, 1e-6, key .. " running_mean")
      H.assert_close(flat(bn.running_var), g.running_var, 1e-5, 1e-6, key .. " running_var")
      H.check(bn.num_batches_tracked, "int64", {}, g.num_batches_tracked)
      check_summary(y, g.eval_out, key .. " eval output")
    end
  end)

  it_bn("BatchNorm in DataParallel: running statistics are those of device 0's slice", function()
    if not gpus(2) then return pending("needs 2 CUDA devices") end
    local x = fill({ 8, 3, 4, 4 }, 0.7, 2.0)
    local ref = nn.BatchNorm2d(3)
    ref(x:narrow(1, 1, 4))
    local bn = nn.BatchNorm2d(3):to("cuda:0")
    local dp = nn.DataParallel(bn, { device_ids = { 0, 1 } })
    dp(x:to("cuda:0"))
    H.assert_close(flat(bn.running_mean), flat(ref.running_mean), 1e-5, 1e-7)
    H.assert_close(flat(bn.running_var), flat(ref.running_var), 1e-5, 1e-7)
    H.check(bn.num_batches_tracked, "int64", {}, 1)
  end)
end)
