-- optim_spec.lua: optim.SGD and optim.Adam follow PyTorch's update rules
-- exactly. A tiny least-squares problem (w of 2, b of 1, loss =
-- mean((X w + b - y)^2)) is stepped 5 times per configuration and every
-- step's loss and parameters are compared with the numbers real PyTorch
-- (Debian's python3-torch 1.13, float64) computes for the same setup,
-- pasted below. They were generated with /usr/bin/python3 running:
--[==[
import torch
X = [[1.0, 2.0], [3.0, -1.0], [0.5, 0.25], [-2.0, 1.0]]
Y = [1.0, -1.0, 0.5, 2.0]
W0, B0 = [0.3, -0.2], [0.1]
CASES = [
    ("sgd", "SGD", dict(lr=0.05), "{lr = 0.05}"),
    ("sgd_momentum", "SGD", dict(lr=0.05, momentum=0.9), "{lr = 0.05, momentum = 0.9}"),
    ("sgd_dampening", "SGD", dict(lr=0.05, momentum=0.9, dampening=0.1), "{lr = 0.05, momentum = 0.9, dampening = 0.1}"),
    ("sgd_nesterov", "SGD", dict(lr=0.05, momentum=0.9, nesterov=True), "{lr = 0.05, momentum = 0.9, nesterov = true}"),
    ("sgd_weight_decay", "SGD", dict(lr=0.05, momentum=0.5, weight_decay=0.1), "{lr = 0.05, momentum = 0.5, weight_decay = 0.1}"),
    ("sgd_maximize", "SGD", dict(lr=0.01, maximize=True), "{lr = 0.01, maximize = true}"),
    ("adam", "Adam", dict(lr=0.1), "{lr = 0.1}"),
    ("adam_betas_wd", "Adam", dict(lr=0.1, betas=(0.8, 0.99), weight_decay=0.05, eps=1e-6), "{lr = 0.1, betas = {0.8, 0.99}, weight_decay = 0.05, eps = 1e-6}"),
    ("adam_amsgrad", "Adam", dict(lr=0.1, amsgrad=True), "{lr = 0.1, amsgrad = true}"),
]
STEPS = 5
print("local CASES = {")
for name, cls, kw, lua in CASES:
    w = torch.tensor(W0, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(B0, dtype=torch.float64, requires_grad=True)
    x = torch.tensor(X, dtype=torch.float64); y = torch.tensor(Y, dtype=torch.float64)
    opt = getattr(torch.optim, cls)([w, b], **kw)
    losses, ws, bs = [], [], []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        losses.append(loss.item())
        opt.step()
        ws.append(w.detach().tolist()); bs.append(b.detach().tolist())
    f = lambda l: "{" + ", ".join(repr(v) for v in l) + "}"
    print('  {name = "%s", optim = "%s", opts = %s,' % (name, cls, lua))
    print("    losses = %s," % f(losses))
    print("    w = {%s}," % ", ".join(f(v) for v in ws))
    print("    b = {%s}}," % ", ".join(f(v) for v in bs))
print("}")
]==]
local torch = require("torch")
local H = require("helpers")
local nn, optim = torch.nn, torch.optim

local X = {{1.0, 2.0}, {3.0, -1.0}, {0.5, 0.25}, {-2.0, 1.0}}
local Y = {1.0, -1.0, 0.5, 2.0}
local W0, B0 = {0.3, -0.2}, {0.1}
local STEPS = 5

local CASES = {
  {name = "sgd", optim = "SGD", opts = {lr = 0.05},
    losses = {3.3050000000000006, 1.5566250549316405, 0.8002413326940683, 0.45003733979969024, 0.2743477003198356},
    w = {{0.02874999999999994, -0.025624999999999988}, {-0.13614648437500007, 0.10029394531250001}, {-0.23622595520019535, 0.1925963607788086}, {-0.29689932641506195, 0.2611226762509346}, {-0.3336922181481198, 0.31250830933400614}},
    b = {{0.14500000000000002}, {0.19264453125000003}, {0.2387476989746094}, {0.2813035059833527}, {0.3195412127468437}}},
  {name = "sgd_momentum", optim = "SGD", opts = {lr = 0.05, momentum = 0.9},
    losses = {3.3050000000000006, 1.5566250549316405, 0.2856947291078715, 0.6304083134299575, 1.5166003938811206},
    w = {{0.02874999999999994, -0.025624999999999988}, {-0.3802714843750002, 0.25723144531250003}, {-0.7527521270751955, 0.5604942123413086}, {-0.9458411046743394, 0.8021978601193428}, {-0.9011268991383389, 0.9291580791217945}},
    b = {{0.14500000000000002}, {0.23314453125000004}, {0.36095785522460944}, {0.517913269777298}, {0.6838732553074212}}},
  {name = "sgd_dampening", optim = "SGD", opts = {lr = 0.05, momentum = 0.9, dampening = 0.1},
    losses = {3.3050000000000006, 1.5566250549316405, 0.30551491184570556, 0.556632079064547, 1.4321971048185216},
    w = {{0.02874999999999994, -0.025624999999999988}, {-0.36378183593750013, 0.24463955078125002}, {-0.7268191955871584, 0.534725903793335}, {-0.93483109610868, 0.7735832624841237}, {-0.9293735975559511, 0.9129185462643582}},
    b = {{0.14500000000000002}, {0.22838007812500002}, {0.34719579241943366}, {0.492945394838915}, {0.6494265479738003}}},
  {name = "sgd_nesterov", optim = "SGD", opts = {lr = 0.05, momentum = 0.9, nesterov = true},
    losses = {3.3050000000000006, 0.6188469951782224, 0.23887596032066816, 0.4468468575667329, 0.4045691416581559},
    w = {{-0.2153750000000001, 0.13131250000000003}, {-0.5665263085937501, 0.428942392578125}, {-0.6890254224212646, 0.6314018672927856}, {-0.6378184136410995, 0.7267663653100941}, {-0.51274260332838, 0.7332065722677207}},
    b = {{0.1855}, {0.3169967578125}, {0.4702740883605957}, {0.6140901153799715}, {0.7229469065755342}}},
  {name = "sgd_weight_decay", optim = "SGD", opts = {lr = 0.05, momentum = 0.5, weight_decay = 0.1},
    losses = {3.3050000000000006, 1.5496485393066401, 0.4378226331181795, 0.17786704892178692, 0.15249449555347042},
    w = {{0.027249999999999927, -0.024624999999999987}, {-0.2735202343750001, 0.18887332031250004}, {-0.4686308677001954, 0.3624937607788086}, {-0.5330212591297837, 0.47040421467238236}, {-0.5060976235196494, 0.5193800174408161}},
    b = {{0.14450000000000002}, {0.21375953125000002}, {0.2949154364746094}, {0.3759264234445343}, {0.44631323408811063}}},
  {name = "sgd_maximize", optim = "SGD", opts = {lr = 0.01, maximize = true},
    losses = {3.3050000000000006, 3.7439043771972664, 4.2467505131663685, 4.823311209748614, 5.484889956814559},
    w = {{0.35425, -0.23487500000000003}, {0.41275414062500004, -0.27168824218750004}, {0.4758447138916016, -0.3105584427612305}, {0.5438798127574235, -0.35161231647190483}, {0.6172453280152854, -0.3949851507286967}},
    b = {{0.09100000000000001}, {0.08210578125000001}, {0.07335083090820313}, {0.06477212396894837}, {0.056410425547486195}}},
  {name = "adam", optim = "Adam", opts = {lr = 0.1},
    losses = {3.3050000000000006, 2.3976562524964793, 1.6432852991362343, 1.04234115796023, 0.5917310193159246},
    w = {{0.20000000018433178, -0.10000000028673836}, {0.10063589562733613, -0.0008308120945279135}, {0.0025004807252169137, 0.09668106974451937}, {-0.09364750428431427, 0.19143432758290835}, {-0.1868509493505287, 0.28200807694648367}},
    b = {{0.19999999888888886}, {0.2987285029260612}, {0.3947600094902952}, {0.4860569743137911}, {0.5699239834579736}}},
  {name = "adam_betas_wd", optim = "Adam", opts = {lr = 0.1, betas = {0.8, 0.99}, weight_decay = 0.05, eps = 1e-6},
    losses = {3.3050000000000006, 2.397656499611511, 1.6463725667011018, 1.051632520883111, 0.6085016247962879},
    w = {{0.20000001838234954, -0.10000002859184316}, {0.10103083850352079, -0.0013111871586332646}, {0.0040087385623086, 0.09483302325181699}, {-0.08994628747930063, 0.18687726164656393}, {-0.17949514379621656, 0.27294517622081044}},
    b = {{0.19999988826828127}, {0.29801079561114957}, {0.39192625769760553}, {0.47891730532429355}, {0.5555541513407414}}},
  {name = "adam_amsgrad", optim = "Adam", opts = {lr = 0.1, amsgrad = true},
    losses = {3.3050000000000006, 2.3976562524964793, 1.6432852991362343, 1.04234115796023, 0.5917310193159246},
    w = {{0.20000000018433178, -0.10000000028673836}, {0.10063589562733613, -0.0008308120945279135}, {0.0025004807252169137, 0.09668106974451937}, {-0.09364750428431427, 0.19143432758290835}, {-0.1868509493505287, 0.28200807694648367}},
    b = {{0.19999999888888886}, {0.2987285029260612}, {0.3947600094902952}, {0.4860569743137911}, {0.5699239834579736}}},
}

local function gpu_available() return H.gpus(1) end

local f64 = torch.float64

local function problem(device)
  local o = { dtype = f64, device = device }
  local w = nn.Parameter(torch.tensor(W0, o))
  local b = nn.Parameter(torch.tensor(B0, o))
  local x, y = torch.tensor(X, o), torch.tensor(Y, o)
  local function loss_of() return ((x:matmul(w) + b - y) ^ 2):mean() end
  return w, b, loss_of
end

local function run_case(case, device)
  local w, b, loss_of = problem(device)
  local opt = optim[case.optim]({ w, b }, case.opts)
  for step = 1, STEPS do
    opt:zero_grad()
    local loss = loss_of()
    loss:backward()
    H.assert_close(loss:item(), case.losses[step], 1e-10, 1e-12, case.name .. ": loss at step " .. step)
    opt:step()
    H.assert_close(w:detach():tolist(), case.w[step], 1e-10, 1e-12, case.name .. ": w after step " .. step)
    H.assert_close(b:detach():tolist(), case.b[step], 1e-10, 1e-12, case.name .. ": b after step " .. step)
    assert.are.equal(torch.device(device), w.device)
  end
end

describe("optim matches PyTorch step by step", function()
  teardown(function()
    H.release_gpus()
  end)
  for _, case in ipairs(CASES) do
    it(case.name .. " on the CPU", function() run_case(case, "cpu") end)
  end
  for _, name in ipairs({ "sgd_nesterov", "sgd_weight_decay", "adam", "adam_amsgrad" }) do
    it(name .. " on cuda:0 (updates in place on the device)", function()
      if not gpu_available() then return pending("no CUDA device and no simulator") end
      for _, case in ipairs(CASES) do
        if case.name == name then run_case(case, "cuda:0") end
      end
    end)
  end
end)

describe("optimizer behaviour", function()
  it("zero_grad sets gradients to nil (PyTorch 2's set_to_none), or zeroes them", function()
    local w, b, loss_of = problem("cpu")
    local opt = optim.SGD({ w, b }, { lr = 0.1 })
    loss_of():backward()
    assert.is_not_nil(w.grad)
    opt:zero_grad()
    assert.is_nil(w.grad)
    assert.is_nil(b.grad)
    loss_of():backward()
    opt:zero_grad({ set_to_none = false })
    H.check(w.grad, "float64", { 2 }, { 0.0, 0.0 })
  end)

  it("parameters without a gradient are left alone (and get no state)", function()
    local w, b, loss_of = problem("cpu")
    local c = nn.Parameter(torch.ones(2, { dtype = f64 }))
    local opt = optim.Adam({ w, b, c }, { lr = 0.1 })
    loss_of():backward()
    opt:step()
    H.check(c, "float64", { 2 }, { 1.0, 1.0 })
    assert.is_nil(opt.state[c])
    assert.are.equal(1, opt.state[w].step)
  end)

  it("updates the same tensor objects in place", function()
    local w, b, loss_of = problem("cpu")
    local before = w
    local opt = optim.SGD({ w, b }, { lr = 0.05 })
    loss_of():backward()
    opt:step()
    assert.is_true(rawequal(before, opt.param_groups[1].params[1]))
    H.assert_close(w:detach():tolist(), CASES[1].w[1], 1e-12, 1e-12)
    assert.is_true(w.requires_grad)
    assert.is_nil(w.grad_fn)
  end)

  it("step(closure) evaluates the closure and returns its loss", function()
    local w, b, loss_of = problem("cpu")
    local opt = optim.SGD({ w, b }, { lr = 0.05 })
    local loss = opt:step(function()
      opt:zero_grad()
      local l = loss_of()
      l:backward()
      return l
    end)
    H.assert_close(loss:item(), CASES[1].losses[1], 1e-12, 1e-12)
    H.assert_close(w:detach():tolist(), CASES[1].w[1], 1e-12, 1e-12)
  end)

  it("param groups carry their own options", function()
    local w, b, loss_of = problem("cpu")
    local opt = optim.SGD({ { params = { w } }, { params = { b }, lr = 0.0 } }, { lr = 0.05 })
    assert.are.equal(0.05, opt.param_groups[1].lr)
    assert.are.equal(0.0, opt.param_groups[2].lr)
    loss_of():backward()
    opt:step()
    H.assert_close(w:detach():tolist(), CASES[1].w[1], 1e-12, 1e-12)
    H.check(b, "float64", { 1 }, { 0.1 })
    -- the learning rate can be changed between steps, as schedulers do
    opt.param_groups[1].lr = 0.0
    opt:zero_grad()
    loss_of():backward()
    opt:step()
    H.assert_close(w:detach():tolist(), CASES[1].w[1], 1e-12, 1e-12)
  end)

  it("state_dict and load_state_dict resume training exactly", function()
    local case = CASES[7] -- adam
    local w, b, loss_of = problem("cpu")
    local opt = optim.Adam({ w, b }, case.opts)
    for _ = 1, 2 do opt:zero_grad(); loss_of():backward(); opt:step() end
    local sd = opt:state_dict()
    assert.are.same({ 1, 2 }, sd.param_groups[1].params)
    assert.are.equal(2, sd.state[1].step)
    -- a fresh optimizer over the same tensors, restored
    local opt2 = optim.Adam({ w, b }, { lr = 0.5 })
    opt2:load_state_dict(sd)
    assert.are.equal(case.opts.lr, opt2.param_groups[1].lr)
    for step = 3, STEPS do opt2:zero_grad(); loss_of():backward(); opt2:step() end
    H.assert_close(w:detach():tolist(), case.w[STEPS], 1e-10, 1e-12)
    H.assert_close(b:detach():tolist(), case.b[STEPS], 1e-10, 1e-12)
  end)

  it("SGD's defaults are PyTorch's", function()
    local opt = optim.SGD({ nn.Parameter(torch.ones(2)) }, { lr = 0.1 })
    local g = opt.param_groups[1]
    assert.are.same({ 0.1, 0, 0, 0, false }, { g.lr, g.momentum, g.dampening, g.weight_decay, g.nesterov })
  end)

  it("Adam's defaults are PyTorch's", function()
    local opt = optim.Adam({ nn.Parameter(torch.ones(2)) })
    local g = opt.param_groups[1]
    assert.are.same({ 1e-3, { 0.9, 0.999 }, 1e-8, 0, false }, { g.lr, g.betas, g.eps, g.weight_decay, g.amsgrad })
  end)

  it("rejects bad arguments with clear errors", function()
    local p = nn.Parameter(torch.ones(2))
    H.errors(function() optim.SGD({}, { lr = 0.1 }) end, "optimizer got an empty parameter list")
    H.errors(function() optim.SGD({ p }, { lr = -1 }) end, "Invalid learning rate: -1")
    H.errors(function() optim.SGD({ p }, { lr = 0.1, nesterov = true }) end,
      "Nesterov momentum requires a momentum and zero dampening")
    H.errors(function() optim.SGD({ p, 3 }, { lr = 0.1 }) end, "optimizer can only optimize Tensors")
    H.errors(function() optim.SGD(p, { lr = 0.1 }) end, "got a single tensor")
    H.errors(function() optim.SGD({ p, p }, { lr = 0.1 }) end, "more than one parameter group")
    H.errors(function() optim.Adam({ p }, { betas = { 1.0, 0.999 } }) end, "Invalid beta parameter at index 1")
    H.errors(function() optim.Adam({ p }, { eps = -1 }) end, "Invalid epsilon value")
  end)
end)
