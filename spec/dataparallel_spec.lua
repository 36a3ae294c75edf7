-- dataparallel_spec.lua: nn.DataParallel on 3 CUDA devices (simulated
-- when the machine has none): the book's splits (30 -> 10, 10, 10 and
-- 10 -> 4, 4, 2), outputs gathered on output_device equal to the plain
-- module's, gradients reaching the master parameters, state_dict keys
-- with the module. prefix, and the no-GPU fallback.
local torch = require("torch")
local H = require("helpers")
local nn = torch.nn

local gpus = H.gpus

-- The book's Model, recording the batch size each replica saw and where.
local Model = nn.Module:extend("Model")
function Model:init(input_size, output_size, log)
  self.fc = nn.Linear(input_size, output_size)
  self.log = log
end
function Model:forward(input)
  local output = self.fc(input)
  if self.log then
    self.log[#self.log + 1] = { input:size(1), output:size(1), tostring(input.device), tostring(self.fc.weight.device) }
  end
  return output
end

describe("nn.DataParallel", function()
  teardown(function()
    H.release_gpus()
  end)

  it("splits 30 into 10, 10, 10 and 10 into 4, 4, 2 over 3 devices", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    local log = {}
    local model = nn.DataParallel(Model(5, 2, log))
    model:to("cuda:0")
    for _, n in ipairs({ 30, 10 }) do
      local out = model(torch.randn(n, 5, { device = "cuda:0" }))
      assert.are.same({ n, 2 }, H.shape(out))
      assert.are.equal(torch.device("cuda:0"), out.device)
    end
    local sizes, devs = {}, {}
    for i, e in ipairs(log) do
      sizes[i] = e[1]
      devs[i] = e[3]
      assert.are.equal(e[3], e[4]) -- each replica's weights live with its input
    end
    assert.are.same({ 10, 10, 10, 4, 4, 2 }, sizes)
    local d0, d1, d2 = "cuda:0", "cuda:1", "cuda:2"
    assert.are.same({ d0, d1, d2, d0, d1, d2 }, devs)
  end)

  it("a batch smaller than the device count uses fewer replicas", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    local log = {}
    local model = nn.DataParallel(Model(5, 2, log)):to("cuda:0")
    local out = model(torch.randn(2, 5))   -- a CPU input is scattered too
    assert.are.same({ 2, 2 }, H.shape(out))
    assert.are.equal(2, #log)
  end)

  it("gathers on output_device the same values the plain module computes", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    local inner = Model(5, 2)
    local model = nn.DataParallel(inner, { device_ids = { 0, 1, 2 }, output_device = 1 }):cuda()
    local x = torch.randn(30, 5, { device = "cuda:0" })
    local out = model(x)
    assert.are.equal(torch.device("cuda:1"), out.device)
    local plain = inner(x)
    assert.is_true(out:cpu():allclose(plain:cpu(), 1e-6, 1e-6))
    -- the same with 10 rows (uneven chunks)
    local x10 = torch.randn(10, 5, { device = "cuda:0" })
    assert.is_true(model(x10):cpu():allclose(inner(x10):cpu(), 1e-6, 1e-6))
  end)

  it("splits along another dim when asked", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    local log = {}
    local model = nn.DataParallel(Model(5, 2, log), { dim = 2 }):to("cuda:0")
    local out = model(torch.randn(4, 6, 5, { device = "cuda:0" }))
    assert.are.same({ 4, 6, 2 }, H.shape(out))
    assert.are.same({ 4, 4, 4 }, { log[1][1], log[2][1], log[3][1] })
  end)

  it("uses a subset of devices given as device_ids", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    local log = {}
    local model = nn.DataParallel(Model(5, 2, log), { device_ids = { 1, 2 } }):to("cuda:1")
    local out = model(torch.randn(30, 5))
    assert.are.equal(torch.device("cuda:1"), out.device)
    assert.are.same({ 15, 15 }, { log[1][1], log[2][1] })
    assert.are.equal("cuda:2", log[2][3])
  end)

  it("takes the devices as a plain list too, PyTorch's positional device_ids", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    local log = {}
    local model = nn.DataParallel(Model(5, 2, log), { 2, 1, output_device = 1 }):to("cuda:2")
    assert.are.same({ 2, 1 }, model.device_ids)
    local out = model(torch.randn(30, 5))
    assert.are.equal(torch.device("cuda:1"), out.device)
    assert.are.same({ "cuda:2", "cuda:1" }, { log[1][3], log[2][3] })
    H.errors(function() nn.DataParallel(Model(5, 2), { 0, device_ids = { 1 } }) end,
      "nn.DataParallel: devices given twice, as a list and as device_ids")
  end)

  -- (issue 14) no internal messages: each says what was expected and what it got
  it("a second argument that is not a table, or devices that are not devices, say what was expected", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    H.errors(function() nn.DataParallel(Model(5, 2), 1) end,
      "nn.DataParallel(module[, options]): expected an options table such as {device_ids = {0, 1}} " ..
      "(or a list of devices, {0, 1}) as the second argument, got the number 1")
    H.errors(function() nn.DataParallel(Model(5, 2), "cuda:0") end, 'got the string "cuda:0"')
    H.errors(function() nn.DataParallel(Model(5, 2), { device_ids = 1 }) end,
      "nn.DataParallel: device_ids must be a list of devices such as {0, 1}, got the number 1")
    H.errors(function() nn.DataParallel(Model(5, 2), { torch.ones(1) }) end,
      "nn.DataParallel: device_ids[1] must be a CUDA ordinal or device, got a tensor (torch.FloatTensor of size 1)")
  end)

  it("refuses a module that is not on device_ids[1], as PyTorch does", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    local model = nn.DataParallel(Model(5, 2))
    H.errors(function() model(torch.randn(6, 5)) end,
      "module must have its parameters and buffers on device cuda:0 (device_ids[1]) but found one of them on device: cpu")
    H.errors(function() nn.DataParallel(Model(5, 2), { device_ids = { 0, 5 } }) end, "device_ids has cuda:5")
  end)

  it("gradients from every replica reach the master parameters", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    local inner = Model(5, 2)
    local model = nn.DataParallel(inner):to("cuda:0")
    local x = torch.randn(10, 5, { device = "cuda:0" })
    model(x):pow(2):sum():backward()
    local g_dp = inner.fc.weight.grad:cpu()
    local gb_dp = inner.fc.bias.grad:cpu()
    assert.are.equal(torch.device("cuda:0"), inner.fc.weight.grad.device)
    model:zero_grad()
    inner(x):pow(2):sum():backward()
    assert.is_true(g_dp:allclose(inner.fc.weight.grad:cpu(), 1e-5, 1e-6))
    assert.is_true(gb_dp:allclose(inner.fc.bias.grad:cpu(), 1e-5, 1e-6))
  end)

  it("trains: a step through DataParallel equals a step on the plain module", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    torch.manual_seed(5)
    local a = Model(5, 2)
    local b = Model(5, 2)
    b:load_state_dict(a:state_dict())
    local dp = nn.DataParallel(a):to("cuda:0")
    b:to("cuda:0")
    local oa = torch.optim.SGD(dp:parameters(), { lr = 0.1, momentum = 0.9 })
    local ob = torch.optim.SGD(b:parameters(), { lr = 0.1, momentum = 0.9 })
    local x = torch.randn(30, 5, { device = "cuda:0" })
    local y = torch.randn(30, 2, { device = "cuda:0" })
    local loss = nn.MSELoss()
    for _ = 1, 3 do
      oa:zero_grad(); loss(dp(x), y):backward(); oa:step()
      ob:zero_grad(); loss(b(x), y):backward(); ob:step()
    end
    assert.is_true(a.fc.weight:detach():cpu():allclose(b.fc.weight:detach():cpu(), 1e-5, 1e-6))
  end)

  -- The host's backward loop feeds every device; a gradient bound for
  -- another device is sent before this device's own backward is queued,
  -- so that device works at the same time instead of waiting behind it.
  -- Checked on the copy, not on cuda:1's product: the copy is ordered
  -- after the work cuda:0 had queued when it was sent, so it starts before
  -- cuda:0's big product ends only if it was sent first. That holds under
  -- any load; cuda:1's product itself waits for the host, whose queuing
  -- (slow under TSAN) can outlast the 0.2 ms modelled product.
  it("backward sends a gradient to another device before queuing this device's own work", function()
    if not gpus(2) then return pending("needs 2 CUDA devices") end
    local cuda = torch.cuda
    local x0 = torch.randn(1024, 1024, { device = "cuda:0" })
    local w0 = torch.randn(1024, 1024, { device = "cuda:0", requires_grad = true })
    local x1 = torch.randn(1024, 64, { device = "cuda:1" })
    local w1 = torch.randn(64, 64, { device = "cuda:1", requires_grad = true })
    cuda.synchronize()
    local loss
    local p = torch.profiler.profile(function()
      -- as DataParallel's gather: cat's backward makes two gradients,
      -- cuda:0's slice (the product's backward, a big mm there) and
      -- cuda:1's (copied back to cuda:1 for its product's backward)
      loss = torch.cat({ x0:mm(w0), x1:mm(w1):to("cuda:0") }, 2):sum()
      cuda.synchronize()
      loss:backward()
      cuda.synchronize()
    end)
    local last0, sent, mms1 = nil, nil, 0 -- the end of cuda:0's last mm, the gradient copy's start
    for _, e in ipairs(p.events) do
      if e.name == "mm" and e.lane == "cuda:0/0" then last0 = math.max(last0 or 0, e.t1) end
      if e.name == "mm" and e.lane == "cuda:1/0" then mms1 = mms1 + 1 end
      if e.name == "copy_d2d" and e.lane == "cuda:1/in" then sent = e.t0 end
    end
    assert.equal(2, mms1, "cuda:1 runs its forward and its backward product")
    assert.is_truthy(sent, "no gradient copy into cuda:1")
    assert.is_true(sent < last0, ("the gradient copy to cuda:1 started %.3f ms after cuda:0's product finished"):format((sent - last0) / 1e6))
    -- and the gradients are right: d(sum(x @ w))/dw = x^T @ ones
    local want0 = x0:t():mm(torch.ones(1024, 1024, { device = "cuda:0" }))
    assert.is_true(w0.grad:allclose(want0, 1e-4, 1e-3))
    local want1 = x1:t():mm(torch.ones(1024, 64, { device = "cuda:1" }))
    assert.is_true(w1.grad:allclose(want1, 1e-4, 1e-3))
  end)

  -- The replicas run at the same time only if the host queues every
  -- device's work without waiting for any device in between: one host
  -- wait (an item(), a copy to the host) would run them one after another.
  -- 'error' mode turns every such wait into an error.
  it("queues every replica's forward and backward without a host wait (sync debug mode 'error')", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    torch.manual_seed(11)
    local inner = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)):to("cuda:0")
    local model = nn.DataParallel(inner, { device_ids = { 0, 1, 2 } })
    local x = torch.randn(30, 8, { device = "cuda:0" })
    torch.cuda.synchronize()
    local before = {}
    for d = 0, 2 do before[d] = torch.cuda.memory_stats(d).num_kernels end
    torch.cuda.set_sync_debug_mode("error")
    local ok, err = pcall(function() model(x):pow(2):sum():backward() end)
    torch.cuda.set_sync_debug_mode("default")
    assert.is_true(ok, tostring(err))
    torch.cuda.synchronize()
    for d = 0, 2 do
      assert.is_true(torch.cuda.memory_stats(d).num_kernels > before[d], "no kernel ran on cuda:" .. d)
    end
    -- and the gradients are the plain module's
    local g = {}
    for i, p in ipairs(inner:parameters()) do g[i] = p.grad:cpu() end
    inner:zero_grad()
    inner(x):pow(2):sum():backward()
    for i, p in ipairs(inner:parameters()) do
      assert.is_true(g[i]:allclose(p.grad:cpu(), 1e-4, 1e-5), "gradient " .. i .. " differs")
    end
  end)

  -- A copy between devices is ordered after the work already queued on its
  -- source: parameters copied to the other devices after the master's
  -- forward was queued would make every replica wait for that forward.
  -- So every copy (the scattered inputs, the replicated parameters) is
  -- queued before the first replica runs.
  it("queues every copy to the other devices before the first replica's forward", function()
    if not gpus(3) then return pending("needs 3 CUDA devices") end
    local seen = {}
    local Probe = nn.Module:extend("Probe")
    function Probe:init() self.fc = nn.Linear(5, 2) end
    function Probe:forward(input)
      seen[#seen + 1] = torch.cuda.transfers().d2d.count
      return self.fc(input)
    end
    local model = nn.DataParallel(Probe()):to("cuda:0")
    local x = torch.randn(30, 5, { device = "cuda:0" })
    torch.cuda.reset_transfers()
    model(x)
    -- 2 input chunks and 2 x (weight, bias) to cuda:1 and cuda:2, before
    -- any replica ran; then the 2 outputs gathered on cuda:0
    assert.are.same({ 6, 6, 6 }, seen)
    assert.are.equal(8, torch.cuda.transfers().d2d.count)
  end)

  it("state_dict keys start with module.; module is the wrapped model", function()
    local inner = Model(5, 2)
    local model = nn.DataParallel(inner)
    assert.is_true(rawequal(inner, model.module))
    assert.are.same({ "module.fc.weight", "module.fc.bias" }, model:state_dict().__keys)
    assert.are.same({ "fc.weight", "fc.bias" }, model.module:state_dict().__keys)
    -- the wrapped model's state dict loads into a plain model
    local plain = Model(5, 2)
    plain:load_state_dict(model.module:state_dict())
    assert.is_true(plain.fc.weight:equal(inner.fc.weight))
  end)

  it("without CUDA devices it just calls the module", function()
    if torch.cuda.device_count() > 0 and not H.gpus_simulated() then return pending("CUDA devices are present") end
    H.release_gpus()
    local log = {}
    local model = nn.DataParallel(Model(5, 2, log))
    assert.are.same({}, model.device_ids)
    local out = model(torch.randn(30, 5))
    assert.are.same({ 30, 2 }, H.shape(out))
    assert.are.same({ 30 }, { log[1][1] })
  end)
end)
