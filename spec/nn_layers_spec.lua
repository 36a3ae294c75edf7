-- nn_layers_spec.lua: the layers and losses. Linear's PyTorch default
-- initialisation (bounds and distribution under manual_seed), shapes and
-- values of every layer, Sequential/ModuleList indexing, and the losses
-- against references computed here in float64 Lua doubles.
local torch = require("torch")
local H = require("helpers")
local nn = torch.nn

local f64 = { dtype = torch.float64 }

local function stats(list)
  local n, s, lo, hi = #list, 0, math.huge, -math.huge
  for _, v in ipairs(list) do s = s + v; lo = math.min(lo, v); hi = math.max(hi, v) end
  local mean = s / n
  local var = 0
  for _, v in ipairs(list) do var = var + (v - mean) ^ 2 end
  return mean, var / n, lo, hi
end

describe("nn.Linear", function()
  it("initialises weight and bias as PyTorch does: U(-1/sqrt(in), 1/sqrt(in))", function()
    torch.manual_seed(0)
    local lin = nn.Linear(100, 200)
    local bound = 1 / math.sqrt(100)
    local w = H.flat(lin.weight:tolist())
    assert.are.equal(20000, #w)
    local mean, var, lo, hi = stats(w)
    assert.is_true(lo >= -bound and hi <= bound, "weights outside the bound")
    assert.is_true(lo < -0.99 * bound and hi > 0.99 * bound, "weights do not reach the bound")
    assert.is_true(math.abs(mean) < 0.02 * bound, "mean " .. mean)
    H.assert_close(var, bound * bound / 3, 0.05, 0, "variance of U(-b, b) is b^2/3")
    local b = H.flat(lin.bias:tolist())
    local _, _, blo, bhi = stats(b)
    assert.is_true(blo >= -bound and bhi <= bound)
    assert.is_true(blo < -0.8 * bound and bhi > 0.8 * bound)
  end)

  it("is reproducible under torch.manual_seed", function()
    torch.manual_seed(42)
    local a = nn.Linear(4, 3)
    torch.manual_seed(42)
    local b = nn.Linear(4, 3)
    assert.is_true(a.weight:equal(b.weight))
    assert.is_true(a.bias:equal(b.bias))
    local c = nn.Linear(4, 3)
    assert.is_false(a.weight:equal(c.weight))
  end)

  it("bound follows fan_in for small layers too", function()
    torch.manual_seed(3)
    local lin = nn.Linear(3, 1000)
    local _, _, lo, hi = stats(H.flat(lin.weight:tolist()))
    local bound = 1 / math.sqrt(3)
    assert.is_true(lo >= -bound and hi <= bound and lo < -0.99 * bound and hi > 0.99 * bound)
  end)

  it("computes x W^T + b for 1-d, 2-d and 3-d inputs", function()
    local lin = nn.Linear(3, 2)
    local W = { { 1.0, -2.0, 0.5 }, { 0.25, 0.0, -1.0 } }
    local B = { 0.5, -0.25 }
    lin.weight.data:copy_(torch.tensor(W))
    lin.bias.data:copy_(torch.tensor(B))
    local X = { { 1.0, 2.0, 3.0 }, { -1.0, 0.5, 2.0 } }
    local ref = H.ref_mm(X, H.ref_t(W))
    for i = 1, 2 do for j = 1, 2 do ref[i][j] = ref[i][j] + B[j] end end
    H.check(lin(torch.tensor(X)), "float32", { 2, 2 }, ref, 1e-6, 1e-6)
    H.check(lin(torch.tensor(X[1])), "float32", { 2 }, ref[1], 1e-6, 1e-6)
    H.check(lin(torch.tensor({ X, X })), "float32", { 2, 2, 2 }, { ref, ref }, 1e-6, 1e-6)
  end)

  it("bias = false has no bias parameter", function()
    local lin = nn.Linear(3, 2, { bias = false })
    assert.is_nil(lin.bias)
    assert.are.equal(1, #lin:parameters())
    lin.weight.data:fill_(1.0)
    H.check(lin(torch.ones(1, 3)), "float32", { 1, 2 }, { { 3.0, 3.0 } })
  end)

  it("takes device and dtype options", function()
    local lin = nn.Linear(2, 2, { dtype = torch.float64 })
    assert.are.equal(torch.float64, lin.weight.dtype)
    assert.are.equal(torch.float64, lin.bias.dtype)
  end)

  it("a wrong input width is a clear error", function()
    H.errors(function() nn.Linear(3, 2)(torch.ones(2, 4)) end, "mat1 and mat2 shapes cannot be multiplied (2x4 and 3x2)")
    H.errors(function() nn.Linear(3.5, 2) end, "nn.Linear(in_features, out_features)")
  end)
end)

describe("parameter-free layers", function()
  local xs = { { -2.0, -0.5, 0.0 }, { 0.5, 1.0, 3.0 } }

  it("ReLU, Sigmoid, Tanh, Identity", function()
    local x = torch.tensor(xs, f64)
    H.check(nn.ReLU()(x), "float64", { 2, 3 }, H.map(xs, function(v) return math.max(v, 0.0) end))
    H.check(nn.Sigmoid()(x), "float64", { 2, 3 }, H.map(xs, function(v) return 1 / (1 + math.exp(-v)) end), 1e-12, 1e-12)
    H.check(nn.Tanh()(x), "float64", { 2, 3 }, H.map(xs, function(v)
      return (math.exp(v) - math.exp(-v)) / (math.exp(v) + math.exp(-v))
    end), 1e-12, 1e-12)
    assert.is_true(rawequal(x, nn.Identity()(x)))
  end)

  it("Softmax and LogSoftmax along a 1-based dim", function()
    local x = torch.tensor(xs, f64)
    local function ref_softmax(row)
      local m, s, r = math.max(table.unpack(row)), 0, {}
      for _, v in ipairs(row) do s = s + math.exp(v - m) end
      for i, v in ipairs(row) do r[i] = math.exp(v - m) / s end
      return r
    end
    local ref = { ref_softmax(xs[1]), ref_softmax(xs[2]) }
    H.check(nn.Softmax(2)(x), "float64", { 2, 3 }, ref, 1e-12, 1e-12)
    H.check(nn.LogSoftmax(2)(x), "float64", { 2, 3 }, H.map(ref, math.log), 1e-12, 1e-12)
    assert.are.equal("Softmax(dim=2)", tostring(nn.Softmax(2)))
  end)

  it("Flatten keeps dim 1 by default; start/end dims are 1-based", function()
    local x = torch.zeros(2, 3, 4, 5)
    assert.are.same({ 2, 60 }, H.shape(nn.Flatten()(x)))
    assert.are.same({ 2, 12, 5 }, H.shape(nn.Flatten(2, 3)(x)))
    assert.are.same({ 120 }, H.shape(nn.Flatten({ start_dim = 1 })(x)))
    assert.are.equal("Flatten(start_dim=2, end_dim=3)", tostring(nn.Flatten(2, 3)))
  end)

  it("Dropout is the identity in eval mode and with p = 0", function()
    local x = torch.ones(10, 10)
    local d = nn.Dropout(0.5)
    d:eval()
    assert.is_true(rawequal(x, d(x)))
    assert.is_true(rawequal(x, nn.Dropout(0)(x)))
  end)

  it("Dropout in training zeroes about p of the elements and scales the rest by 1/(1-p)", function()
    torch.manual_seed(7)
    local p = 0.3
    local y = nn.Dropout(p)(torch.ones(100, 100))
    local zeros, scale = 0, 1 / (1 - p)
    for _, v in ipairs(H.flat(y:tolist())) do
      if v == 0 then zeros = zeros + 1
      else H.assert_close(v, scale, 1e-6, 0) end
    end
    assert.is_true(math.abs(zeros / 10000 - p) < 0.02, "dropped fraction " .. zeros / 10000)
    -- the same seed drops the same elements
    torch.manual_seed(7)
    assert.is_true(y:equal(nn.Dropout(p)(torch.ones(100, 100))))
  end)

  it("Dropout with p = 1 zeroes everything; a bad p is an error", function()
    H.check(nn.Dropout(1)(torch.ones(2, 2)), "float32", { 2, 2 }, { { 0.0, 0.0 }, { 0.0, 0.0 } })
    H.errors(function() nn.Dropout(1.5) end, "dropout probability has to be between 0 and 1, but got 1.5")
    assert.are.equal("Dropout(p=0.1, inplace=False)", tostring(nn.Dropout({ p = 0.1 })))
    assert.are.equal("Dropout(p=0.5, inplace=False)", tostring(nn.Dropout()))
  end)
end)

describe("containers", function()
  it("Sequential: 1-based positions, negative from the end, #net, add, ipairs", function()
    local a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    local net = nn.Sequential(a, b)
    assert.are.equal(2, #net)
    assert.is_true(rawequal(a, net[1]))
    assert.is_true(rawequal(b, net[-1]))
    assert.is_nil(net[3])
    assert.is_true(rawequal(net, net:add(c)))
    assert.are.equal(3, #net)
    assert.is_true(rawequal(c, net[3]))
    local seen = {}
    for i, m in ipairs(net) do seen[i] = m end
    assert.are.equal(3, #seen)
    assert.are.same({ "1.weight", "1.bias", "3.weight", "3.bias" }, net:state_dict().__keys)
  end)

  it("Sequential forwards through its children in order", function()
    local net = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    net[1].weight.data:copy_(torch.tensor({ { 1.0, -1.0 }, { -1.0, 1.0 } }))
    net[1].bias.data:zero_()
    net[3].weight.data:copy_(torch.tensor({ { 2.0, 3.0 } }))
    net[3].bias.data:fill_(0.5)
    -- x = (3, 1): hidden (2, -2) -> relu (2, 0) -> 2*2 + 0.5
    H.check(net(torch.tensor({ { 3.0, 1.0 } })), "float32", { 1, 1 }, { { 4.5 } })
  end)

  it("Sequential: replacing a child, named children, errors", function()
    local net = nn.Sequential(nn.ReLU(), nn.Tanh())
    net[2] = nn.Sigmoid()
    assert.are.equal("Sigmoid", net[2]:_get_name())
    net[3] = nn.Identity()
    assert.are.equal(3, #net)
    local named = nn.Sequential({ { "fc", nn.Linear(1, 1) }, { "act", nn.ReLU() } })
    assert.are.same({ "fc.weight", "fc.bias" }, named:state_dict().__keys)
    assert.is_true(rawequal(named.fc, named[1]))
    H.errors(function() nn.Sequential(nn.ReLU(), 5) end, "nn.Sequential: argument 2 is not a module")
    H.errors(function() net[7] = nn.ReLU() end, "index 7 is out of range for Sequential of length 3")
  end)

  it("ModuleList registers its modules", function()
    local ml = nn.ModuleList({ nn.Linear(1, 2), nn.Linear(2, 3) })
    ml:append(nn.ReLU())
    assert.are.equal(3, #ml)
    assert.are.same({ "1.weight", "1.bias", "2.weight", "2.bias" }, ml:state_dict().__keys)
  end)
end)

-- ------------------------------------------------------------------ losses

local function ref_logsoftmax(row)
  local m = -math.huge
  for _, v in ipairs(row) do m = math.max(m, v) end
  local s = 0
  for _, v in ipairs(row) do s = s + math.exp(v - m) end
  local lse = m + math.log(s)
  local r = {}
  for i, v in ipairs(row) do r[i] = v - lse end
  return r
end

describe("losses against float64 references", function()
  local input = { { 0.5, -1.25, 2.0 }, { 1.5, 0.25, -0.75 }, { -0.5, 0.0, 0.125 }, { 3.0, 1.0, -2.0 } }
  local target = { { 1.0, -1.0, 0.5 }, { 0.0, 0.5, -0.5 }, { 2.0, 0.25, 0.125 }, { 1.0, 1.0, 1.0 } }
  local classes = { 3, 1, 2, 1 } -- 1-based

  it("MSELoss: mean, sum and none", function()
    local x, y = torch.tensor(input, f64), torch.tensor(target, f64)
    local sq = H.map2(input, target, function(a, b) return (a - b) ^ 2 end)
    local s = 0
    for _, v in ipairs(H.flat(sq)) do s = s + v end
    H.check(nn.MSELoss()(x, y), "float64", {}, s / 12, 1e-14, 0)
    H.check(nn.MSELoss({ reduction = "sum" })(x, y), "float64", {}, s, 1e-14, 0)
    H.check(nn.MSELoss({ reduction = "none" })(x, y), "float64", { 4, 3 }, sq, 1e-14, 0)
    H.errors(function() nn.MSELoss({ reduction = "avg" }) end, "reduction must be 'mean', 'sum' or 'none'")
  end)

  it("CrossEntropyLoss with 1-based class indices: mean, sum and none", function()
    local x, t = torch.tensor(input, f64), torch.tensor(classes)
    local per = {}
    for i, row in ipairs(input) do per[i] = -ref_logsoftmax(row)[classes[i]] end
    local s = per[1] + per[2] + per[3] + per[4]
    H.check(nn.CrossEntropyLoss()(x, t), "float64", {}, s / 4, 1e-13, 0)
    H.check(nn.CrossEntropyLoss({ reduction = "sum" })(x, t), "float64", {}, s, 1e-13, 0)
    H.check(nn.CrossEntropyLoss({ reduction = "none" })(x, t), "float64", { 4 }, per, 1e-13, 0)
  end)

  it("CrossEntropyLoss in float32 agrees with the float64 reference", function()
    local per = {}
    for i, row in ipairs(input) do per[i] = -ref_logsoftmax(row)[classes[i]] end
    H.check(nn.CrossEntropyLoss()(torch.tensor(input), torch.tensor(classes)), "float32", {},
      (per[1] + per[2] + per[3] + per[4]) / 4, 1e-6, 1e-7)
  end)

  it("CrossEntropyLoss for one unbatched sample and for class probabilities", function()
    local row = input[1]
    H.check(nn.CrossEntropyLoss()(torch.tensor(row, f64), torch.tensor(2)), "float64", {},
      -ref_logsoftmax(row)[2], 1e-13, 0)
    local probs = { { 0.25, 0.25, 0.5 }, { 1.0, 0.0, 0.0 }, { 0.0, 0.5, 0.5 }, { 0.1, 0.2, 0.7 } }
    local s = 0
    for i, r in ipairs(input) do
      local lp = ref_logsoftmax(r)
      for j = 1, 3 do s = s - probs[i][j] * lp[j] end
    end
    H.check(nn.CrossEntropyLoss()(torch.tensor(input, f64), torch.tensor(probs, f64)), "float64", {}, s / 4, 1e-13, 0)
  end)

  it("CrossEntropyLoss rejects out-of-range (0-based) targets and bad shapes", function()
    local x = torch.tensor(input)
    H.errors(function() nn.CrossEntropyLoss()(x, torch.tensor({ 0, 1, 2, 2 })) end,
      "Target 0 is out of bounds: class indices are 1-based, 1 to 3")
    H.errors(function() nn.CrossEntropyLoss()(x, torch.tensor({ 1, 2, 3, 4 })) end, "Target 4 is out of bounds")
    H.errors(function() nn.CrossEntropyLoss()(x, torch.tensor({ 1, 2 })) end, "expected target of shape [4]")
    H.errors(function() nn.CrossEntropyLoss()(x, torch.tensor({ 1.0, 2.0, 1.0, 1.0 })) end,
      "a floating-point target holds class probabilities")
  end)

  it("CrossEntropyLoss's gradient is (softmax - onehot) / N", function()
    local x = torch.tensor(input, f64):requires_grad_()
    nn.CrossEntropyLoss()(x, torch.tensor(classes)):backward()
    local ref = {}
    for i, row in ipairs(input) do
      local lp = ref_logsoftmax(row)
      ref[i] = {}
      for j = 1, 3 do ref[i][j] = (math.exp(lp[j]) - (j == classes[i] and 1 or 0)) / 4 end
    end
    H.check(x.grad, "float64", { 4, 3 }, ref, 1e-12, 1e-14)
  end)

  it("MSELoss's gradient is 2 (x - y) / N", function()
    local x = torch.tensor(input, f64):requires_grad_()
    nn.MSELoss()(x, torch.tensor(target, f64)):backward()
    H.check(x.grad, "float64", { 4, 3 }, H.map2(input, target, function(a, b) return 2 * (a - b) / 12 end), 1e-13, 1e-15)
  end)
end)

describe("nn.init", function()
  it("fills in place within the documented bounds", function()
    torch.manual_seed(1)
    local w = nn.Parameter(torch.empty(50, 40))
    nn.init.xavier_uniform_(w)
    local a = math.sqrt(6 / 90)
    local _, _, lo, hi = stats(H.flat(w:tolist()))
    assert.is_true(lo >= -a and hi <= a and lo < -0.95 * a and hi > 0.95 * a)
    nn.init.constant_(w, 0.5)
    assert.is_true(w:equal(torch.full({ 50, 40 }, 0.5)))
    nn.init.zeros_(w)
    assert.are.equal(0.0, w:abs():max():item())
    nn.init.kaiming_uniform_(w, { nonlinearity = "relu" })
    local bound = math.sqrt(2) * math.sqrt(3 / 40)
    _, _, lo, hi = stats(H.flat(w:tolist()))
    assert.is_true(lo >= -bound and hi <= bound and hi > 0.9 * bound)
    assert.is_true(w.requires_grad)
    H.assert_close(nn.init.calculate_gain("leaky_relu", math.sqrt(5)), math.sqrt(1 / 3), 1e-15, 0)
  end)
end)
