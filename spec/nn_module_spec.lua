-- nn_module_spec.lua: nn.Module — user modules with extend, registration
-- in assignment order, traversal, reprs (character for character against
-- what PyTorch 1.13 prints for the same modules, with gshell's 1-based
-- Sequential positions), state_dict / load_state_dict, train/eval,
-- zero_grad and moving between devices in place (on simulated GPUs when
-- the machine has none).
local torch = require("torch")
local H = require("helpers")
local nn = torch.nn

local gpus = H.gpus

local function names(list)
  local r = {}
  for i, kv in ipairs(list) do r[i] = kv[1] end
  return r
end

-- A user module with a child assigned before a parameter and another after.
local Three = nn.Module:extend("Three")
function Three:init()
  self.b = nn.Linear(2, 2)
  self.w = nn.Parameter(torch.ones(2))
  self.a = nn.Linear(2, 1)
  self:register_buffer("running", torch.zeros(2))
  self:register_buffer("tmp", torch.zeros(1), false)
  self.note = "plain attribute"
end
function Three:forward(x) return self.a(self.b(x) * self.w) end

describe("nn.Module:extend and registration", function()
  it("constructs with Class(...) calling init, and calls forward with module(...)", function()
    local Model = nn.Module:extend("Model")
    function Model:init(input_size, output_size)
      self.fc = nn.Linear(input_size, output_size)
    end
    function Model:forward(input, scale) return self.fc(input) * (scale or 1) end
    local model = Model(5, 2)
    assert.is_true(nn.is_module(model))
    assert.are.equal(5, model.fc.in_features)
    local y = model(torch.ones(3, 5), 2)
    assert.are.same({ 3, 2 }, H.shape(y))
    assert.are.equal("Model", model:_get_name())
  end)

  it("registers parameters and children in assignment order, own parameters first (PyTorch's order)", function()
    local m = Three()
    assert.are.same({ "w", "b.weight", "b.bias", "a.weight", "a.bias" }, names(m:named_parameters()))
    assert.are.same({ "w", "running", "b.weight", "b.bias", "a.weight", "a.bias" }, m:state_dict().__keys)
    assert.are.same({ "", "b", "a" }, names(m:named_modules()))
    assert.are.same({ "b", "a" }, names(m:named_children()))
    assert.are.same({ "running", "tmp" }, names(m:named_buffers()))
    assert.are.equal(5, #m:parameters())
    assert.are.equal(2, #m:children())
    assert.are.equal(3, #m:modules())
    assert.is_true(rawequal(m.w, m:parameters()[1]))
    assert.are.equal("plain attribute", m.note)
  end)

  it("named_parameters can be walked with a generic for", function()
    local m = Three()
    local seen = {}
    for name, p in m:named_parameters() do
      assert.is_true(torch.is_tensor(p))
      seen[#seen + 1] = name
    end
    assert.are.same({ "w", "b.weight", "b.bias", "a.weight", "a.bias" }, seen)
    local first = m:named_parameters()[1]
    assert.are.equal("w", first[1])
    assert.is_true(rawequal(m.w, first[2]))
  end)

  it("reassigning a child keeps its place; nil removes it", function()
    local m = Three()
    m.b = nn.Linear(3, 3)
    assert.are.same({ "w", "b.weight", "b.bias", "a.weight", "a.bias" }, names(m:named_parameters()))
    assert.are.equal(3, m.b.in_features)
    m.b = nil
    assert.are.same({ "w", "a.weight", "a.bias" }, names(m:named_parameters()))
    assert.is_nil(m.b)
  end)

  it("a field can change kind: a plain value, then a module", function()
    local m = nn.Module:extend("M")()
    m.x = 5
    m.x = nn.ReLU()
    assert.are.same({ "x" }, names(m:named_children()))
    m.y = nn.Parameter(torch.zeros(1))
    assert.are.same({ "y" }, names(m:named_parameters()))
  end)

  it("refuses a plain tensor in a parameter's place and a non-module in a child's", function()
    local lin = nn.Linear(2, 2)
    H.errors(function() lin.weight = torch.zeros(2, 2) end,
      "cannot assign 'torch.FloatTensor' as parameter 'weight' (torch.nn.Parameter or nil expected)")
    local m = Three()
    H.errors(function() m.a = 3 end, "cannot assign 'int' as child module 'a' (torch.nn.Module or nil expected)")
  end)

  it("a plain tensor attribute is not a parameter", function()
    local m = nn.Module:extend("M")()
    m.t = torch.ones(2)
    assert.are.equal(0, #m:parameters())
    assert.are.same({}, m:state_dict().__keys)
  end)

  it("a missing forward is a clear error", function()
    local M = nn.Module:extend("NoForward")
    H.errors(function() M()(torch.ones(1)) end, 'Module [NoForward] is missing the required "forward" function')
  end)

  it("classes extend classes: a subclass of Linear", function()
    local Scaled = nn.Linear:extend("Scaled")
    function Scaled:init(i, o, s)
      nn.Linear.init(self, i, o)
      self.s = s
    end
    function Scaled:forward(x) return nn.Linear.forward(self, x) * self.s end
    local m = Scaled(2, 3, 10)
    assert.are.same({ "weight", "bias" }, names(m:named_parameters()))
    assert.are.equal("Scaled(in_features=2, out_features=3, bias=True)", tostring(m))
    local x = torch.ones(1, 2)
    assert.is_true(m(x):allclose(nn.Linear.forward(m, x) * 10))
  end)

  it("nn.Parameter marks the tensor itself, requiring grad", function()
    local t = torch.zeros(2)
    local p = nn.Parameter(t)
    assert.is_true(rawequal(t, p))
    assert.is_true(p.requires_grad)
    assert.is_true(nn.is_parameter(p))
    assert.is_false(nn.is_parameter(torch.zeros(2)))
    assert.is_false(nn.Parameter(torch.zeros(1), false).requires_grad)
  end)

  it("apply visits every module, children first", function()
    local net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    local seen = {}
    net:apply(function(m) seen[#seen + 1] = m:_get_name() end)
    assert.are.same({ "Linear", "ReLU", "Sequential", "Sequential" }, seen)
  end)
end)

describe("torch.nn.module after its split into files", function()
  -- module.lua re-exports what moved to pyrepr.lua, collections.lua,
  -- parameter.lua and state_dict.lua, so its users need not change.
  it("keeps its public shape", function()
    local base = require("torch.nn.module")
    for _, name in ipairs({ "Module", "Parameter", "OrderedDict", "OMap", "named_list", "is_module", "is_parameter",
      "py_number", "py_bool", "py_repr", "check_child" }) do
      assert.is_not_nil(base[name], name)
    end
    assert.is_true(rawequal(base.Module, nn.Module))
    assert.is_true(rawequal(base.OrderedDict, require("torch.nn.collections").OrderedDict))
    assert.is_true(rawequal(base.Parameter, require("torch.nn.parameter").Parameter))
    assert.are.equal("1e-05", base.py_number(1e-5))
    assert.are.equal("0.1", base.py_number(0.1))
    assert.is_true(rawequal(nn.Module.state_dict, require("torch.nn.state_dict").state_dict))
    assert.is_true(rawequal(nn.Sequential, require("torch.nn.containers").Sequential))
  end)
end)

describe("module reprs match PyTorch", function()
  it("a Sequential of every layer kind", function()
    local net = nn.Sequential(nn.Linear(3, 1), nn.ReLU(), nn.Dropout(0.5), nn.Flatten(), nn.Sigmoid(), nn.Tanh(),
      nn.MSELoss(), nn.CrossEntropyLoss(), nn.Sequential(), nn.Sequential(nn.Linear(2, 2, { bias = false })),
      nn.Dropout(0.25), nn.Dropout(1))
    -- PyTorch prints positions 0..11 and Flatten's 0-based start_dim=1
    assert.are.equal([[
Sequential(
  (1): Linear(in_features=3, out_features=1, bias=True)
  (2): ReLU()
  (3): Dropout(p=0.5, inplace=False)
  (4): Flatten(start_dim=2, end_dim=-1)
  (5): Sigmoid()
  (6): Tanh()
  (7): MSELoss()
  (8): CrossEntropyLoss()
  (9): Sequential()
  (10): Sequential(
    (1): Linear(in_features=2, out_features=2, bias=False)
  )
  (11): Dropout(p=0.25, inplace=False)
  (12): Dropout(p=1, inplace=False)
)]], tostring(net))
  end)

  it("the book's one-layer net", function()
    assert.are.equal("Sequential(\n  (1): Linear(in_features=3, out_features=1, bias=True)\n)",
      tostring(nn.Sequential(nn.Linear(3, 1))))
  end)

  it("nested Sequentials", function()
    assert.are.equal([[
Sequential(
  (1): Sequential(
    (1): Linear(in_features=1, out_features=1, bias=True)
    (2): ReLU()
  )
  (2): Sequential(
    (1): Tanh()
  )
)]], tostring(nn.Sequential(nn.Sequential(nn.Linear(1, 1), nn.ReLU()), nn.Sequential(nn.Tanh()))))
  end)

  it("user modules, empty ones, and DataParallel around them", function()
    local Model = nn.Module:extend("Model")
    function Model:init(i, o) self.fc = nn.Linear(i, o) end
    local E = nn.Module:extend("E")
    assert.are.equal("Model(\n  (fc): Linear(in_features=5, out_features=2, bias=True)\n)", tostring(Model(5, 2)))
    assert.are.equal("E()", tostring(E()))
    assert.are.equal([[
DataParallel(
  (module): Model(
    (fc): Linear(in_features=5, out_features=2, bias=True)
  )
)]], tostring(nn.DataParallel(Model(5, 2))))
    assert.are.equal("Three(\n  (b): Linear(in_features=2, out_features=2, bias=True)\n"
      .. "  (a): Linear(in_features=2, out_features=1, bias=True)\n)", tostring(Three()))
  end)

  it("a user extra_repr", function()
    local S = nn.Module:extend("Scale")
    function S:init(k) self.k = k end
    function S:extra_repr() return "k=" .. self.k end
    assert.are.equal("Scale(k=3)", tostring(S(3)))
    local T = nn.Module:extend("Two")
    function T:init() self.inner = S(1) end
    function T:extra_repr() return "first\nsecond" end
    assert.are.equal("Two(\n  first\n  second\n  (inner): Scale(k=1)\n)", tostring(T()))
  end)

  it("parameters print as 'Parameter containing:' with requires_grad=True", function()
    local lin = nn.Linear(3, 2)
    lin.weight.data:fill_(0.5)
    assert.are.equal("Parameter containing:\ntensor([[0.5000, 0.5000, 0.5000],\n"
      .. "        [0.5000, 0.5000, 0.5000]], requires_grad=True)", tostring(lin.weight))
    -- .data is a plain tensor sharing the storage
    assert.are.equal("tensor([[0.5000, 0.5000, 0.5000],\n        [0.5000, 0.5000, 0.5000]])", tostring(lin.weight.data))
  end)

  it("the class itself prints as a class", function()
    assert.are.equal("<class 'Linear'>", tostring(nn.Linear))
  end)
end)

describe("state_dict and load_state_dict", function()
  it("uses PyTorch's key names, in order, as an OrderedDict", function()
    local net = nn.Sequential(nn.Linear(3, 1))
    local sd = net:state_dict()
    assert.are.same({ "1.weight", "1.bias" }, sd.__keys)
    assert.are.equal(2, #sd)
    local order = {}
    for k, v in pairs(sd) do
      order[#order + 1] = k
      assert.is_true(torch.is_tensor(v))
      assert.is_false(v.requires_grad)
    end
    assert.are.same({ "1.weight", "1.bias" }, order)
    net[1].weight.data:fill_(0.25)
    net[1].bias.data:fill_(-1.0)
    assert.are.equal("OrderedDict([('1.weight', tensor([[0.2500, 0.2500, 0.2500]])), ('1.bias', tensor([-1.]))])",
      tostring(net:state_dict()))
  end)

  it("shares storage with the parameters", function()
    local lin = nn.Linear(2, 2)
    local sd = lin:state_dict()
    lin.weight.data:fill_(3.0)
    H.check(sd.weight, "float32", { 2, 2 }, { { 3.0, 3.0 }, { 3.0, 3.0 } })
  end)

  it("keeps persistent buffers and skips non-persistent ones", function()
    local sd = Three():state_dict()
    assert.is_not_nil(sd.running)
    assert.is_nil(sd.tmp)
  end)

  it("loads into another model in place", function()
    local a, b = Three(), Three()
    local w_obj = b.a.weight
    b:load_state_dict(a:state_dict())
    assert.is_true(rawequal(w_obj, b.a.weight))
    for name, p in a:named_parameters() do
      local q
      for n2, p2 in b:named_parameters() do if n2 == name then q = p2 end end
      assert.is_true(p:equal(q), name)
    end
  end)

  it("reports missing, unexpected and mis-shaped keys as PyTorch does, copying nothing", function()
    local lin = nn.Linear(3, 1)
    local before = lin.weight:clone()
    local err = H.errors(function()
      lin:load_state_dict({ weight = torch.zeros(2, 3), foo = torch.zeros(1) })
    end)
    assert.truthy(err:find('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". \n'
      .. '\tUnexpected key(s) in state_dict: "foo". \n\tsize mismatch for weight: copying a param with shape '
      .. 'torch.Size([2, 3]) from checkpoint, the shape in current model is torch.Size([1, 3]).', 1, true), err)
    assert.is_true(lin.weight:equal(before))
    -- a shape mismatch alone
    H.errors(function() lin:load_state_dict({ weight = torch.zeros(1, 4), bias = torch.zeros(1) }) end,
      "size mismatch for weight: copying a param with shape torch.Size([1, 4]) from checkpoint, "
      .. "the shape in current model is torch.Size([1, 3]).")
    H.errors(function()
      nn.Sequential(nn.Linear(3, 1)):load_state_dict({ ["1.weight"] = torch.zeros(1, 3), ["1.bias"] = torch.zeros(1),
        x = torch.zeros(1), ["a.b"] = torch.ones(1) })
    end, 'Error(s) in loading state_dict for Sequential:\n\tUnexpected key(s) in state_dict: "a.b", "x". ')
  end)

  it("strict = false loads what matches and returns the rest", function()
    local lin = nn.Linear(2, 2)
    local r = lin:load_state_dict({ weight = torch.zeros(2, 2), extra = torch.ones(1) }, { strict = false })
    assert.are.same({ "bias" }, r.missing_keys)
    assert.are.same({ "extra" }, r.unexpected_keys)
    H.check(lin.weight, "float32", { 2, 2 }, { { 0.0, 0.0 }, { 0.0, 0.0 } })
  end)

  it("converts dtypes on load (float64 checkpoint into float32 parameters)", function()
    local lin = nn.Linear(2, 1)
    lin:load_state_dict({ weight = torch.tensor({ { 0.5, 0.25 } }, { dtype = torch.float64 }),
      bias = torch.tensor({ 1.5 }, { dtype = torch.float64 }) })
    H.check(lin.weight, "float32", { 1, 2 }, { { 0.5, 0.25 } })
    H.check(lin.bias, "float32", { 1 }, { 1.5 })
  end)
end)

describe("modes and gradients", function()
  it("train() and eval() set the flag recursively and return the module", function()
    local net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5)))
    assert.is_true(net.training)
    assert.is_true(rawequal(net, net:eval()))
    assert.is_false(net.training)
    assert.is_false(net[2][1].training)
    net:train()
    assert.is_true(net[2][1].training)
    net:train(false)
    assert.is_false(net[1].training)
  end)

  it("zero_grad sets every gradient to nil", function()
    local net = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    net(torch.ones(4, 3)):sum():backward()
    for _, p in ipairs(net:parameters()) do assert.is_not_nil(p.grad) end
    net:zero_grad()
    for _, p in ipairs(net:parameters()) do assert.is_nil(p.grad) end
  end)

  it("a forward pass records AddmmBackward0 like PyTorch", function()
    local net = nn.Sequential(nn.Linear(3, 1))
    assert.are.equal("<AddmmBackward0>", net(torch.ones(2, 3)).grad_fn)
  end)
end)

describe("moving modules between devices", function()
  teardown(function()
    H.release_gpus()
  end)

  it("to(try_gpu()) moves the parameters in place and returns the module", function()
    if not gpus(2) then return pending("needs 2 CUDA devices") end
    local net = nn.Sequential(nn.Linear(3, 1))
    local w = net[1].weight
    local values = w:tolist()
    local r = net:to(torch.try_gpu())
    assert.is_true(rawequal(net, r))
    assert.is_true(rawequal(w, net[1].weight))         -- same tensor object
    assert.are.equal(torch.device("cuda", 0), net[1].weight.data.device)
    assert.are.equal("cuda:0", tostring(net[1].weight.data.device))
    assert.are.equal(torch.device("cuda", 0), net[1].bias.data.device)
    assert.is_true(w.requires_grad)
    assert.is_true(nn.is_parameter(w))
    H.assert_list_equal(w:tolist(), values)
    assert.truthy(tostring(w):find("^Parameter containing:\ntensor%(.*device='cuda:0', requires_grad=True%)$"))
  end)

  it("the moved net computes on the GPU (the book's net(X))", function()
    if not gpus(2) then return pending("needs 2 CUDA devices") end
    local net = nn.Sequential(nn.Linear(3, 1))
    net = net:to({ device = torch.try_gpu() })
    net[1].weight.data:fill_(0.5)
    net[1].bias.data:fill_(-1.0)
    local X = torch.ones(2, 3, { device = torch.try_gpu() })
    assert.are.equal("tensor([[0.5000],\n        [0.5000]], device='cuda:0', grad_fn=<AddmmBackward0>)",
      tostring(net(X)))
  end)

  it("cuda(i), cpu(), and an optimizer's references stay valid", function()
    if not gpus(2) then return pending("needs 2 CUDA devices") end
    local net = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    local params = net:parameters()
    net:cuda(1)
    for i, p in ipairs(net:parameters()) do
      assert.is_true(rawequal(params[i], p))
      assert.are.equal(torch.device("cuda:1"), p.device)
    end
    net:cuda()
    assert.are.equal(torch.device("cuda:0"), net[3].weight.device)
    net:cpu()
    assert.are.equal(torch.device("cpu"), net[3].weight.device)
  end)

  it("gradients and buffers move with their parameters", function()
    if not gpus(2) then return pending("needs 2 CUDA devices") end
    local m = Three()
    m(torch.ones(1, 2)):sum():backward()
    m:to("cuda:1")
    assert.are.equal(torch.device("cuda:1"), m.w.grad.device)
    assert.are.equal(torch.device("cuda:1"), m.running.device)
    assert.are.equal(torch.device("cuda:1"), m.tmp.device)
  end)

  it("to(dtype) converts floating-point parameters", function()
    local lin = nn.Linear(2, 2)
    lin:to(torch.float64)
    assert.are.equal(torch.float64, lin.weight.dtype)
    lin:float()
    assert.are.equal(torch.float32, lin.weight.dtype)
    lin:double()
    assert.are.equal(torch.float64, lin.bias.dtype)
    H.errors(function() lin:to(torch.int64) end, "nn.Module.to only accepts floating point dtypes")
  end)

  it("moving to a device that does not exist is a clear error", function()
    local lin = nn.Linear(2, 2)
    local ok, err = pcall(function() lin:to("cuda:7") end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuda:7", 1, true))
    assert.are.equal(torch.device("cpu"), lin.weight.device)
  end)
end)
