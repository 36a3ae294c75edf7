-- d2l_spec.lua: the book's d2l helpers (lua/torch/d2l) and their pictures
-- (torch.display): each helper's numbers and errors, train_ch6's printed
-- lines against the same loop written out here, the Animator's terminal
-- frame against a drawn one, its lines when output is not a terminal, its
-- redraw in place on a pseudo-terminal, its Jupyter messages (display_data
-- then update_display_data with the same id) through jupyter_client, its
-- SVG parsed as XML, show_images' PNG decoded by a Python reader, and the
-- SVG files --notebook --md writes beside the Markdown.
local torch = require("torch")
local d2l = require("d2l")
local display = require("torch.display")
local R = require("gshell_run")
local nn = torch.nn
local H = require("helpers")

-- Two CUDA devices (simulated when the machine has none) for the whole file.
setup(function() H.gpus(2) end)
teardown(function() H.release_gpus() end)
local function two_gpus()
  if H.gpus(2) then return true end
  pending("needs 2 CUDA devices")
  return false
end

local function sh(cmd)
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

-- Captures what print() writes while fn runs.
local function printed(fn)
  local lines, saved = {}, _G.print
  _G.print = function(...)
    local t = table.pack(...)
    for i = 1, t.n do t[i] = tostring(t[i]) end
    lines[#lines + 1] = table.concat(t, "\t", 1, t.n)
  end
  local ok, err = pcall(fn)
  _G.print = saved
  assert(ok, err)
  return lines
end

-- Records what the helpers display (instead of drawing it).
local function recording(fn)
  local shown = {}
  local old = display.set_frontend({
    display = function(obj, id) shown[#shown + 1] = { kind = "display", obj = obj, id = id, line = obj:_repr_line_() } end,
    update = function(obj, id) shown[#shown + 1] = { kind = "update", obj = obj, id = id, line = obj:_repr_line_() } end,
  })
  local ok, err = pcall(fn)
  display.set_frontend(old)
  assert(ok, err)
  return shown
end

local function b64decode(s)
  local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  local out, bits, nbits = {}, 0, 0
  for ch in s:gmatch("[%w%+/]") do
    bits = (bits << 6) | (alphabet:find(ch, 1, true) - 1)
    nbits = nbits + 6
    if nbits >= 8 then
      nbits = nbits - 8
      out[#out + 1] = string.char((bits >> nbits) & 255)
    end
  end
  return table.concat(out)
end

local function decode_png(bytes)
  local path = os.tmpname()
  R.write_file(path, bytes)
  local out, ok = sh("env -u LD_PRELOAD /usr/bin/python3 spec/support/png_read.py " .. R.quote(path) .. " 2>&1")
  os.remove(path)
  assert(ok, out)
  -- the JSON is plain lists and numbers: read it as a Lua table
  local lua = out:gsub("%[", "{"):gsub("%]", "}"):gsub('"([%w_]+)":', "%1 =")
  return assert(load("return " .. lua))()
end

describe("d2l.Accumulator", function()
  it("sums numbers and one-element tensors per slot, read 1-based", function()
    local acc = d2l.Accumulator(3)
    acc:add(1, torch.tensor(2.5), 3)
    acc:add(0.5, torch.tensor({ 1.5 }), 1)
    assert.are.same({ 1.5, 4.0, 4.0 }, { acc[1], acc[2], acc[3] })
    assert.equal(3, #acc)
    acc:reset()
    assert.equal(0, acc[2])
  end)
  it("says what is wrong with bad input", function()
    local acc = d2l.Accumulator(2)
    assert.has_error(function() acc:add(1) end, "Accumulator:add: expected 2 values (one per sum), got 1")
    assert.has_error(function() return acc[3] end, "Accumulator: index 3 is out of range 1..2")
    assert.error_matches(function() acc:add(1, torch.ones(2)) end, "tensor of 2 elements")
    assert.error_matches(function() d2l.Accumulator(0) end, "positive integer")
  end)
end)

describe("d2l.Timer and d2l.Benchmark", function()
  it("records each start/stop interval; sum, avg and cumsum follow from them", function()
    local t = d2l.Timer()
    local function wait(s) local t0 = torch.clock(); while torch.clock() - t0 < s do end end
    wait(0.01)
    local a = t:stop()
    t:start(); wait(0.02)
    local b = t:stop()
    assert.is_true(a >= 0.01 and a < 0.5)
    assert.is_true(b >= 0.02 and b < 0.5)
    assert.are.same({ a, b }, t.times)
    assert.near(a + b, t:sum(), 1e-12)
    assert.near((a + b) / 2, t:avg(), 1e-12)
    local cs = t:cumsum()
    assert.near(a, cs[1], 1e-12)
    assert.near(a + b, cs[2], 1e-12)
  end)
  it("Benchmark prints '<description>: N sec' when its scope closes, or around run(fn)", function()
    local lines = printed(function()
      do local _ <close> = d2l.Benchmark("numpy") end
      local v = d2l.Benchmark("torch"):run(function(x) return x + 1 end, 41)
      assert.equal(42, v)
      do local _ <close> = d2l.Benchmark() end
    end)
    assert.equal(3, #lines)
    assert.matches("^numpy: %d+%.%d%d%d%d sec$", lines[1])
    assert.matches("^torch: %d+%.%d%d%d%d sec$", lines[2])
    assert.matches("^Done: ", lines[3])
  end)
end)

describe("d2l.accuracy", function()
  it("counts rows whose argmax equals the 1-based label", function()
    local y_hat = torch.tensor({ { 0.1, 0.9, 0.0 }, { 0.8, 0.1, 0.1 }, { 0.2, 0.3, 0.5 }, { 0.6, 0.3, 0.1 } })
    assert.equal(3.0, d2l.accuracy(y_hat, torch.tensor({ 2, 1, 3, 2 })))
    assert.equal(0.0, d2l.accuracy(y_hat, torch.tensor({ 1, 2, 1, 3 })))
    assert.equal("float", math.type(d2l.accuracy(y_hat, torch.tensor({ 2, 1, 3, 2 }))))
  end)
  it("compares classes directly when y_hat is already one class per row", function()
    assert.equal(2.0, d2l.accuracy(torch.tensor({ 1, 2, 3 }), torch.tensor({ 1, 3, 3 })))
  end)
  it("rejects mismatched counts", function()
    assert.error_matches(function() d2l.accuracy(torch.ones(3, 2), torch.tensor({ 1, 2 })) end,
      "3 predictions for 2 labels")
  end)
end)

-- A module that records the device, mode and grad mode it was called in,
-- and scores class (row index mod 3) + 1 highest.
local Probe = nn.Module:extend("Probe")
function Probe:init()
  self.lin = nn.Linear(2, 3)
  self.calls = {}
end
function Probe:forward(X)
  self.calls[#self.calls + 1] = { device = tostring(X.device), training = self.training,
    grad = torch.is_grad_enabled() }
  return self.lin(X)
end

-- batches {X, y} where the net's fixed weights make exactly `right` correct
local function probe_data(device)
  local X = torch.tensor({ { 1.0, 0.0 }, { 0.0, 1.0 }, { 1.0, 0.0 }, { 0.0, 1.0 }, { 1.0, 0.0 } })
  local y = torch.tensor({ 1, 2, 2, 2, 3 })   -- predictions are 1, 2, 1, 2, 1: 3 right of 5
  return { { X[{ { 1, 3 } }], y[{ { 1, 3 } }] }, { X[{ { 4, 5 } }], y[{ { 4, 5 } }] } }
end

local function fixed_probe()
  local net = Probe()
  torch.no_grad(function()
    net.lin.weight:copy_(torch.tensor({ { 1, 0 }, { 0, 1 }, { 0, 0 } }))
    net.lin.bias:zero_()
  end)
  return net
end

describe("d2l.evaluate_accuracy_gpu", function()
  it("runs the net in eval mode without gradients and returns the share right", function()
    local net = fixed_probe()
    net:train()
    assert.near(3 / 5, d2l.evaluate_accuracy_gpu(net, probe_data()), 1e-12)
    assert.is_false(net.training)
    assert.equal(2, #net.calls)
    for _, c in ipairs(net.calls) do
      assert.is_false(c.training)
      assert.is_false(c.grad)
    end
    assert.is_true(torch.is_grad_enabled())
  end)
  it("moves each batch to the device of the net's first parameter", function()
    if not two_gpus() then return end
    local net = fixed_probe():to("cuda:1")
    assert.near(3 / 5, d2l.evaluate_accuracy_gpu(net, probe_data()), 1e-12)
    for _, c in ipairs(net.calls) do assert.matches("cuda.*1", c.device) end
  end)
  it("uses the device given instead", function()
    if not two_gpus() then return end
    local net = fixed_probe():to("cuda:0")
    assert.has_error(function() d2l.evaluate_accuracy_gpu(net, probe_data(), "cpu") end)
    net:to("cpu")
    net.calls = {}
    assert.near(3 / 5, d2l.evaluate_accuracy_gpu(net, probe_data(), "cpu"), 1e-12)
    assert.matches("cpu", net.calls[1].device)
  end)
  it("iterates a DataLoader as well as a list of batches", function()
    local X = torch.tensor({ { 1.0, 0.0 }, { 0.0, 1.0 }, { 1.0, 0.0 }, { 0.0, 1.0 }, { 1.0, 0.0 } })
    local y = torch.tensor({ 1, 2, 2, 2, 3 })
    local loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), { batch_size = 2 })
    local net = fixed_probe()
    assert.near(3 / 5, d2l.evaluate_accuracy_gpu(net, loader), 1e-12)
    assert.equal(3, #net.calls)
  end)
end)

describe("d2l's small helpers", function()
  it("get_fashion_mnist_labels names 1-based labels", function()
    assert.are.same({ "ankle boot", "t-shirt", "sneaker" }, d2l.get_fashion_mnist_labels(torch.tensor({ 10, 1, 8 })))
    assert.are.same({ "trouser" }, d2l.get_fashion_mnist_labels({ 2 }))
    assert.error_matches(function() d2l.get_fashion_mnist_labels({ 0 }) end, "1..10")
  end)
  it("try_gpu names devices as the book prints them", function()
    if not two_gpus() then return end
    assert.equal("cuda:0", d2l.device_name(d2l.try_gpu()))
    assert.equal("cuda:1", d2l.device_name(d2l.try_gpu(1)))
    assert.equal("cpu", d2l.device_name(d2l.try_gpu(999)))
    assert.is_true(#d2l.try_all_gpus() >= 2)
  end)
  it("sgd steps each parameter by lr * grad / batch_size and zeroes the gradient", function()
    local w = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local b = torch.tensor({ 0.5 }, { requires_grad = true })
    local l = (w * torch.tensor({ 3.0, 4.0 })):sum() + b:sum() * 2
    l:backward()
    d2l.sgd({ w, b }, 0.1, 2)
    assert.near(1.0 - 0.1 * 3 / 2, w:tolist()[1], 1e-6)
    assert.near(2.0 - 0.1 * 4 / 2, w:tolist()[2], 1e-6)
    assert.near(0.5 - 0.1 * 2 / 2, b:item(), 1e-7)
    assert.are.same({ 0, 0 }, w.grad:tolist())
    assert.error_matches(function() d2l.sgd({ torch.ones(2, { requires_grad = true }) }, 0.1, 1) end,
      "no gradient")
  end)
  it("split_batch cuts X and y into one slice per device", function()
    if not two_gpus() then return end
    local X, y = torch.arange(12):reshape(6, 2), torch.arange(6)
    local devs = { torch.device("cuda:0"), torch.device("cuda:1") }
    local Xs, ys = d2l.split_batch(X, y, devs)
    assert.equal(2, #Xs)
    assert.are.same({ { 0, 1 }, { 2, 3 }, { 4, 5 } }, Xs[1]:tolist())
    assert.are.same({ 3, 4, 5 }, ys[2]:tolist())
    assert.matches("cuda.*1", tostring(Xs[2].device))
    assert.error_matches(function() d2l.split_batch(X, torch.arange(5), devs) end, "6 rows and y 5")
  end)
  -- examples: the multi-GPU examples run on a machine without a GPU, where
  -- try_all_gpus() is {cpu} and try_gpu(1) the cpu as well
  it("split_batch on the cpu (no GPU) cuts the same slices as on GPUs", function()
    local X, y = torch.arange(14):reshape(7, 2), torch.arange(7)
    local Xs, ys = d2l.split_batch(X, y, { torch.device("cpu") })
    assert.equal(1, #Xs)
    assert.is_true(Xs[1]:equal(X) and ys[1]:equal(y))
    Xs, ys = d2l.split_batch(X, y, { "cpu", "cpu" })
    assert.equal(2, #Xs)
    assert.are.same({ { 0, 1 }, { 2, 3 }, { 4, 5 }, { 6, 7 } }, Xs[1]:tolist())
    assert.are.same({ 4, 5, 6 }, ys[2]:tolist())
    assert.equal("cpu", Xs[2].device.type)
  end)
  it("allreduce leaves the sum on every device", function()
    if not two_gpus() then return end
    local data = { torch.tensor({ 1.0, 2.0 }, { device = "cuda:0" }), torch.tensor({ 10.0, 20.0 }, { device = "cuda:1" }) }
    d2l.allreduce(data)
    assert.are.same({ 11, 22 }, data[1]:tolist())
    assert.are.same({ 11, 22 }, data[2]:tolist())
    assert.matches("cuda.*1", tostring(data[2].device))
  end)
end)

-- ---- train_ch6 ------------------------------------------------------------------

-- A tiny classification set: 4 Gaussian clusters in 6 dimensions.
local function tiny_data()
  torch.manual_seed(3)
  local centers = torch.randn(4, 6) * 2
  local y = torch.randint(1, 5, { 96 })
  local X = centers:index_select(1, y) + torch.randn(96, 6)
  local yt = torch.randint(1, 5, { 40 })
  local Xt = centers:index_select(1, yt) + torch.randn(40, 6)
  local DL, TD = torch.utils.data.DataLoader, torch.utils.data.TensorDataset
  return DL(TD(X, y), { batch_size = 16 }), DL(TD(Xt, yt), { batch_size = 16 })
end

local function tiny_net()
  torch.manual_seed(7)
  return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
end

-- The book's loop written out (no Animator, no timing), for the numbers.
local function reference_loop(train, test, epochs, lr)
  local net = tiny_net()
  net:apply(function(m) if getmetatable(m) == nn.Linear then nn.init.xavier_uniform_(m.weight) end end)
  local opt = torch.optim.SGD(net:parameters(), { lr = lr })
  local loss = nn.CrossEntropyLoss()
  local sum_l, right, n
  for _ = 1, epochs do
    sum_l, right, n = 0, 0, 0
    net:train()
    for batch in train do
      local X, y = batch[1], batch[2]
      opt:zero_grad()
      local y_hat = net(X)
      local l = loss(y_hat, y)
      l:backward()
      opt:step()
      sum_l = sum_l + l:item() * X:size(1)
      right = right + y_hat:argmax(2):eq(y):sum():item()
      n = n + X:size(1)
    end
  end
  net:eval()
  local tr, tn = 0, 0
  torch.no_grad(function()
    for batch in test do
      tr = tr + net(batch[1]):argmax(2):eq(batch[2]):sum():item()
      tn = tn + batch[2]:numel()
    end
  end)
  return string.format("loss %.3f, train acc %.3f, test acc %.3f", sum_l / n, right / n, tr / tn)
end

describe("d2l.train_ch6", function()
  local train, test = tiny_data()
  local expected = reference_loop(train, test, 3, 0.3)

  local function run(device)
    local lines
    local shown = recording(function()
      lines = printed(function()
        torch.manual_seed(7)
        local net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
        d2l.train_ch6(net, train, test, 3, 0.3, device)
      end)
    end)
    return lines, shown
  end

  it("prints the book's three lines with the numbers of the book's loop, on the CPU", function()
    local lines, shown = run(torch.device("cpu"))
    assert.equal(3, #lines)
    assert.equal("training on cpu", lines[1])
    assert.equal(expected, lines[2])
    assert.matches("^%d+%.%d examples/sec on cpu$", lines[3])
    -- the Animator: a point every num_batches // 5 batches (6 batches: every
    -- one) and the test accuracy after each epoch, all on one display
    assert.equal("display", shown[1].kind)
    for i = 2, #shown do
      assert.equal("update", shown[i].kind)
      assert.equal(shown[1].id, shown[i].id)
    end
    assert.equal(3 * 6 + 3, #shown)
    assert.matches("^epoch 3: test acc %d%.%d%d%d$", shown[#shown].line)
    assert.equal(expected:match("test acc (%S+)"), shown[#shown].line:match("test acc (%S+)"))
    local chart = shown[#shown].obj
    assert.equal(18, #chart.series[1].x)
    assert.equal(3, #chart.series[3].x)
  end)

  it("prints the same numbers on a simulated cuda:0, named as the book names it", function()
    if not two_gpus() then return end
    local lines = run(d2l.try_gpu())
    assert.equal("training on cuda:0", lines[1])
    assert.equal(expected, lines[2])
    -- a simulated GPU that models a real one says whose time the rate is
    -- (spec/timing_note_spec.lua checks the words on each model and host)
    local m = torch.cuda.gpu_model(0)
    local note = m and (" %(modelled on an? " .. m.name:gsub("%p", "%%%0") .. "%)") or ""
    assert.matches("^%d+%.%d examples/sec on cuda:0" .. note .. "$", lines[3])
  end)

  it("initialises Linear weights with Xavier through net:apply", function()
    -- xavier_uniform_ bounds |w| by sqrt(6 / (fan_in + fan_out)); the
    -- default init of Linear(6, 8) is bounded by 1/sqrt(6) instead
    local net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    torch.no_grad(function() net[1].weight:fill_(5) end)
    recording(function() printed(function() d2l.train_ch6(net, { { torch.zeros(1, 6), torch.tensor({ 1 }) } },
      { { torch.zeros(1, 6), torch.tensor({ 1 }) } }, 1, 0.0, "cpu") end) end)
    assert.is_true(net[1].weight:abs():max():item() <= math.sqrt(6 / 14) + 1e-6)
  end)

  it("rejects what is not a module or an epoch count", function()
    assert.error_matches(function() d2l.train_ch6({}, train, test, 1, 0.1, "cpu") end, "must be an nn.Module")
    assert.error_matches(function() d2l.train_ch6(tiny_net(), train, test, 0, 0.1, "cpu") end, "num_epochs")
  end)
end)

-- ---- pictures ----------------------------------------------------------------------

local function small_chart()
  local c = d2l.Chart.new({ xlabel = "epoch", ylabel = "loss", legend = { "a", "b" }, xlim = { 1, 3 },
    ylim = { 0, 1 }, width = 20, height = 4 })
  c:set_series(1, { 1, 2, 3 }, { 0, 1, 0.5 })
  c:set_series(2, { 1, 3 }, { 1, 0 })
  return c
end

describe("the terminal view of a chart", function()
  it("draws braille curves, ticks, labels and a legend (this frame was checked by eye)", function()
    local expected = table.concat({
      "loss\n",
      "1.0 ┤⠉⠒⠄ ⣀  ⢀⡠⠊⠉⠒⠤⢄⣀\n",
      "    │     ⣉⠔⠡⢄⡀     ⠉⠒⠢⢄⣀\n",
      "0.5 ┤  ⢀⠤⠊      ⠑⠢ ⢀    ⠈\n",
      "0.0 ┤⡠⠒⠁            ⠉⠁ ⠤⣀\n",
      "    └┬─────────┬────────┬\n",
      "     1         2        3\n",
      "            epoch\n",
      "     ── a   ╌╌ b\n",
    })
    assert.equal(expected, small_chart():_repr_term_({ color = false }))
  end)
  it("colours each series (matplotlib's letters: default blue, 'm--' magenta) when asked", function()
    local s = small_chart():_repr_term_({ color = true })
    assert.truthy(s:find("\27[34m⢀⡠⠊⠉⠒⠤⢄⣀\27[0m", 1, true))
    assert.truthy(s:find("\27[35m╌╌\27[0m b", 1, true))
    -- without colours the same text remains
    assert.equal(small_chart():_repr_term_({ color = false }), (s:gsub("\27%[%d+m", "")))
  end)
  it("skips NaN and infinite points and clips points far outside the limits (a diverging loss)", function()
    local c = d2l.Chart.new({ legend = { "loss" }, ylim = { 0, 1 }, width = 20, height = 4 })
    c:set_series(1, { 1, 2, 3, 4, 5 }, { 0.5, 1e300, 0 / 0, math.huge, 0.25 })
    local t0 = os.clock()
    local text = c:_repr_term_({ color = false })
    assert.is_true(os.clock() - t0 < 1)
    assert.truthy(text:find("┤", 1, true))
    local svg = c:_repr_svg_()
    assert.falsy(svg:find("inf", 1, true))
    assert.falsy(svg:find("nan", 1, true))
    assert.truthy(svg:find('points="[%d%.%-, ]+"'))
    local out = {}
    for x in svg:match('points="([^"]*)"'):gmatch("[^ ]+") do out[#out + 1] = x end
    assert.equal(3, #out)   -- 0.5, 1e300 and 0.25: the NaN and the infinity are left out
  end)
  it("takes each axis' range from its own limits or data (ylim alone leaves x to the data)", function()
    local c = d2l.Chart.new({ ylim = { 0, 1 } })
    c:set_series(1, { 1, 2, 3 }, { 0.5, 0.6, 0.7 })
    local x0, x1 = c:axis("x")
    assert.are.same({ 1, 3 }, { x0, x1 })
    local y0, y1 = c:axis("y")
    assert.are.same({ 0, 1 }, { y0, y1 })
  end)
  it("rejects unreadable formats and limits", function()
    assert.error_matches(function() d2l.Animator({ fmts = { "q-" } }) end, "cannot read the format 'q%-'")
    assert.error_matches(function() d2l.Animator({ xlim = { 3, 1 } }) end, "low <= high")
    assert.error_matches(function() d2l.Animator({ xlable = "x" }) end, "xlabel")
  end)
end)

describe("the Animator outside a terminal", function()
  it("prints one line per add() naming the values just added", function()
    local script = os.tmpname()
    R.write_file(script, [[
local a = d2l.Animator({xlabel = 'epoch', legend = {'train loss', 'train acc', 'test acc'}})
a:add(0.5, {1.25, 0.5, nil})
a:add(1, {0.75, 0.625, nil})
a:add(1, {nil, nil, 0.6})
d2l.plot({1, 2, 3}, {{1, 4, 9}, {2, 3, 4}}, {legend = {'sq', 'lin'}})
d2l.plot(torch.tensor({1, 2}), {torch.tensor({5, 6})}, 'n', 'f(n)', {legend = {'f'}})
d2l.show_images(torch.zeros(2, 4, 4), 1, 2, {titles = {'x', 'y'}})
]])
    local out, err, code = R.run({ script })
    os.remove(script)
    assert.equal(0, code, err)
    assert.equal(table.concat({
      "epoch 0.50: train loss 1.250, train acc 0.500",
      "epoch 1: train loss 0.750, train acc 0.625",
      "epoch 1: test acc 0.600",
      "plot of sq, lin: 3 points each, x 1..3, y 1..9",
      "plot of f: 2 points, n 1..2, f(n) 5..6",
      "show_images: 2 images of 4x4 in 1 x 2: x, y",
    }, "\n") .. "\n", out)
  end)
end)

describe("the Animator at a terminal", function()
  it("redraws its chart in place (cursor up over the last frame, erase below) with colours", function()
    local script = os.tmpname()
    R.write_file(script, [[
local a = d2l.Animator({xlabel = 'epoch', legend = {'loss'}, xlim = {1, 3}})
for i = 1, 3 do a:add(i, 1 / i) end
print('done')
]])
    -- (the pty helper sets TERM=dumb: CLICOLOR_FORCE asks for colours anyway)
    local out, ok = R.pty({ { expect = "done" } }, { script }, { CLICOLOR_FORCE = "1" })
    os.remove(script)
    assert.is_true(ok, out)
    -- three frames: the first drawn, the next two each after moving up over
    -- the previous one's lines
    local frame_lines = select(2, small_chart():_repr_term_({ color = false }):gsub("\n", "")) -- sanity
    assert.is_true(frame_lines > 0)
    local ups = {}
    for n in out:gmatch("\27%[(%d+)F\27%[J") do ups[#ups + 1] = tonumber(n) end
    assert.equal(2, #ups)
    assert.equal(ups[1], ups[2])
    local first = out:match("^(.-)\27%[%d+F")
    local _, nl = first:gsub("\n", "")
    assert.equal(ups[1], nl)
    assert.truthy(out:find("\27[34m", 1, true))  -- coloured on xterm
    assert.truthy(out:find("└", 1, true))
  end)
  it("draws no colours with NO_COLOR (even forced) nor on a dumb terminal", function()
    local script = os.tmpname()
    R.write_file(script, "local a = d2l.Animator({legend = {'loss'}})\na:add(1, 1)\na:add(2, 0.5)\nprint('done')\n")
    for _, env in ipairs({ { NO_COLOR = "1", CLICOLOR_FORCE = "1" }, {} }) do
      local out, ok = R.pty({ { expect = "done" } }, { script }, env)
      assert.is_true(ok, out)
      assert.falsy(out:find("\27%[3%dm"))
      assert.truthy(out:find("\27%[%d+F"))
    end
    os.remove(script)
  end)
end)

describe("the SVG view", function()
  it("is XML with one polyline per series, the axis label and the legend", function()
    local c = small_chart()
    local path = os.tmpname()
    R.write_file(path, c:_repr_svg_())
    local out, ok = sh("env -u LD_PRELOAD /usr/bin/python3 -c " .. R.quote([[
import sys, xml.etree.ElementTree as ET
S = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == S + "svg"
for p in root.iter(S + "polyline"):
    print("series", p.get("data-name"), len(p.get("points").split()), p.get("stroke"), p.get("stroke-dasharray"))
print("texts", ",".join(t.text for t in root.iter(S + "text")))
]]) .. " " .. path .. " 2>&1")
    os.remove(path)
    assert.is_true(ok, out)
    assert.truthy(out:find("series a 3 #1f77b4 None\n", 1, true), out)
    assert.truthy(out:find("series b 2 #bf00bf 6,3\n", 1, true), out)
    assert.truthy(out:find("texts 1.0,1.5,2.0,2.5,3.0,0.0,0.2,0.4,0.6,0.8,1.0,epoch,loss,a,b", 1, true), out)
  end)
end)

describe("d2l.show_images", function()
  it("makes a PNG of the grid (libpng) that decodes back to the pixels", function()
    local imgs = torch.tensor({ { { 0, 255 }, { 128, 7 } }, { { 10, 20 }, { 30, 40 } } }, { dtype = torch.uint8 })
    local shown = recording(function() d2l.show_images(imgs, 1, 2, { scale = 0.5 }) end)
    local grid = shown[1].obj
    local png = decode_png(grid:_repr_png_())
    -- scale 0.5: one pixel per pixel; 4 white pixels between the images
    assert.equal(2 + 4 + 2, png.width)
    assert.equal(2, png.height)
    assert.equal(0, png.color_type)
    assert.are.same({ { 0, 255, 255, 255, 255, 255, 10, 20 }, { 128, 7, 255, 255, 255, 255, 30, 40 } }, png.pixels)
  end)
  it("scales float images from their min..max as imshow does, and zooms by scale", function()
    local shown = recording(function() d2l.show_images({ torch.tensor({ { -1.0, 1.0 } }) }, 1, 1) end)
    local png = decode_png(shown[1].obj:_repr_png_())
    assert.equal(2 * 3, png.width)   -- scale 1.5: 3 pixels a pixel
    assert.are.same({ 0, 0, 0, 255, 255, 255 }, png.pixels[1])
  end)
  it("draws half-blocks in grey levels at a terminal, titles above", function()
    local imgs = torch.tensor({ { { 0, 255 }, { 255, 0 } } }, { dtype = torch.uint8 })
    local shown = recording(function() d2l.show_images(imgs, 1, 1, { titles = { "ab" } }) end)
    local g = shown[1].obj
    assert.equal("ab\n▒▒\n", g:_repr_term_({ color = false }))
    assert.equal("ab\n\27[38;5;232m\27[48;5;255m▀\27[0m\27[38;5;255m\27[48;5;232m▀\27[0m\n",
      g:_repr_term_({ color = true }))
  end)
  it("flows a grid wider than the terminal onto more lines, and a chart shrinks to fit", function()
    local shown = recording(function()
      d2l.show_images(torch.zeros(5, 2, 3, { dtype = torch.uint8 }), 1, 5, { titles = { "a", "b", "c", "d", "e" } })
    end)
    -- 3-pixel images with a space between: 9 columns hold 2 of them
    assert.equal("a   b\n       \nc   d\n       \ne\n   \n",
      shown[1].obj:_repr_term_({ color = false, columns = 9 }))
    local c = d2l.Chart.new({ legend = { "a" } })
    c:set_series(1, { 1, 2 }, { 1, 2 })
    local widest = 0
    for line in c:_repr_term_({ color = false, columns = 40 }):gmatch("[^\n]+") do
      widest = math.max(widest, utf8.len(line))
    end
    assert.is_true(widest <= 40, "a line of " .. widest .. " columns")
  end)
  it("rejects bad shapes and arguments", function()
    assert.error_matches(function() d2l.show_images(torch.zeros(4, 4), 1, 1) end, "batch of images")
    assert.error_matches(function() d2l.show_images(torch.zeros(1, 4, 4), 0, 1) end, "positive integers")
    assert.error_matches(function() d2l.show_images(torch.zeros(1, 4, 4), 1, 1, { title = {} }) end, "titles")
  end)
  it("the PNG encoder refuses sizes that are not a picture", function()
    assert.error_matches(function() torch._png_encode("abc", 2, 2, 1) end, "needs 4 bytes")
    assert.error_matches(function() torch._png_encode("", 0, 1, 1) end, "not a picture")
  end)
end)

describe("pictures in Jupyter", function()
  it("an Animator is one display_data, then update_display_data with its id, mid-cell; images go as PNG", function()
    local out = os.tmpname()
    local log, ok = sh(string.format("env -u LD_PRELOAD /usr/bin/python3 spec/kernel/d2l_display.py %s %s 2>&1",
      R.quote(R.GSHELL), R.quote(out)))
    local okr, r = pcall(dofile, out)
    os.remove(out)
    assert.is_true(okr and type(r) == "table", log)
    assert.is_nil(r.driver_error, r.driver_error)
    assert.is_true(ok, log)
    local m = r.animator
    -- stream 'before', display, update, update, stream 'after'
    local kinds = {}
    for i, x in ipairs(m) do kinds[i] = x.type end
    assert.are.same({ "stream", "display_data", "update_display_data", "update_display_data", "stream" }, kinds)
    assert.equal("before\n", m[1].text)
    assert.equal("after\n", m[5].text)
    assert.is_string(m[2].id)
    assert.equal(m[2].id, m[3].id)
    assert.equal(m[2].id, m[4].id)
    assert.equal("series train loss 1\nseries test acc 1\nlegend train loss,test acc\nxlabel epoch\nimages 0", m[2].svg)
    assert.equal("series train loss 3\nseries test acc 2\nlegend train loss,test acc\nxlabel epoch\nimages 0", m[4].svg)
    assert.equal("epoch 3: train loss 0.400, test acc 0.800", m[4].text)
    -- through nbclient the updates replace the picture in the saved notebook
    assert.equal(3, #r.nbclient)
    assert.are.same({ type = "stream", text = "before\n" }, r.nbclient[1])
    assert.equal("display_data", r.nbclient[2].type)
    assert.equal("epoch 3: train loss 0.400, test acc 0.800", r.nbclient[2].text)
    assert.equal(m[4].svg, r.nbclient[2].svg)
    assert.are.same({ type = "stream", text = "after\n" }, r.nbclient[3])
    -- show_images: a PNG of 3 images 4x5 (scale 0.5: no zoom) with the pixels of X
    assert.equal(1, #r.images)
    local img = r.images[1]
    assert.equal("images 3", img.svg:match("images %d+"))
    local bytes = b64decode(img.png)
    local png = decode_png(bytes)
    assert.equal(3 * 5 + 2 * 4, png.width)
    assert.equal(4, png.height)
    local px = {}
    for v in r.pixels:gmatch("%d+") do px[#px + 1] = tonumber(v) end
    assert.equal(60, #px)
    for k = 0, 2 do
      for y = 1, 4 do
        for x = 1, 5 do
          assert.equal(px[k * 20 + (y - 1) * 5 + x], png.pixels[y][k * 9 + x])
        end
      end
    end
  end)
end)

describe("d2l.load_data_fashion_mnist", function()
  it("gives the book's loaders: 235 and 40 batches of 256, images 1x28x28 in [0, 1], labels 1..10", function()
    local ok = pcall(require, "torchvision")
    if not ok or not io.open("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz") then
      return pending("needs torchvision and Debian's dataset-fashion-mnist")
    end
    local train_iter, test_iter = d2l.load_data_fashion_mnist(256)
    assert.equal(235, #train_iter)
    assert.equal(40, #test_iter)
    local X, y = d2l._batches(test_iter, "spec")()
    assert.equal("torch.Size([256, 1, 28, 28])", tostring(X.shape))
    assert.equal(torch.float32, X.dtype)
    assert.equal(torch.int64, y.dtype)
    assert.is_true(X:min():item() >= 0 and X:max():item() <= 1)
    assert.is_true(y:min():item() >= 1 and y:max():item() <= 10)
    -- the test set is not shuffled: its first image is an ankle boot (10)
    assert.equal(10, y[1]:item())
    local R64 = d2l.load_data_fashion_mnist(8, 64)
    local X64 = d2l._batches(R64, "spec")()
    assert.equal("torch.Size([8, 1, 64, 64])", tostring(X64.shape))
  end)
end)

describe("help for the d2l helpers", function()
  it("help() and ?name show each helper's line", function()
    local out = R.prompt({ "help(d2l.train_ch6)", "?d2l.evaluate_accuracy_gpu" })
    assert.truthy(out:find("d2l.train_ch6(net, train_iter, test_iter, num_epochs, lr, device): the book's LeNet", 1, true), out)
    assert.truthy(out:find("d2l.evaluate_accuracy_gpu(net, data_iter[, device]) -> share correct", 1, true), out)
  end)
end)

describe("--notebook --md with pictures", function()
  it("writes each picture's final SVG beside the Markdown and links it", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/nb.lua", "-- %%\nlocal a = d2l.Animator({legend = {'loss'}})\nfor i = 1, 3 do a:add(i, 1 / i) end\n"
      .. "-- %%\nprint(1)\n-- %%\nd2l.plot({1, 2}, {3, 4})\n")
    local out, err, code = R.run({ "--notebook", dir .. "/nb.lua", "--md", dir .. "/nb.md" })
    assert.equal(0, code, err)
    assert.truthy(out:find("x 3: loss 0.333", 1, true), out)
    local md = R.read_file(dir .. "/nb.md")
    assert.truthy(md:find("```output\nx 1: loss 1.000\nx 2: loss 0.500\nx 3: loss 0.333\n```\n\n![nb-1-1.svg](nb-1-1.svg)", 1, true), md)
    assert.truthy(md:find("![nb-3-1.svg](nb-3-1.svg)", 1, true), md)
    assert.falsy(md:find("nb-2-", 1, true))
    local svg = R.read_file(dir .. "/nb-1-1.svg")
    assert.truthy(svg:find('data-name="loss"', 1, true))
    local _, points = svg:match('data%-name="loss"[^>]*points="([^"]*)"'):gsub(",", "")
    assert.equal(3, points)
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)

describe("d2l.resnet18", function()
  -- Goldens: spec/support/gen_resnet18_golden.py (PyTorch 1.13, the book's
  -- model, every parameter from one formula, eval mode, float64).
  local golden = dofile("spec/fixtures/d2l/resnet18_golden.lua")
  local function ready()
    return nn.Conv2d and nn.BatchNorm2d and nn.AdaptiveAvgPool2d
  end

  for _, device in ipairs({ "cpu", "cuda:1" }) do
    it("is the multi-GPU chapter's ResNet-18: PyTorch's parameters and logits, on " .. device, function()
      if not ready() then
        pending("needs nn.Conv2d, nn.BatchNorm2d and nn.AdaptiveAvgPool2d (the convolutional layers)")
        return
      end
      if device ~= "cpu" and not two_gpus() then return end
      local net = d2l.resnet18(10, 1):to(torch.float64)
      local ps = net:parameters()
      assert.equal(golden.nparams, #ps)
      local count = 0
      for k, p in ipairs(ps) do
        local shape = {}
        for d = 1, p:dim() do shape[d] = p:size(d) end
        assert.are.same(golden.shapes[k], shape)
        count = count + p:numel()
      end
      assert.equal(golden.count, count)
      torch.no_grad(function()
        for k, p in ipairs(ps) do
          p:copy_(((torch.arange(p:numel(), { dtype = torch.float64 }) * 0.37 + k):sin() * 0.05):reshape(p.shape))
        end
      end)
      net:to(device)
      net:eval()
      local X = (torch.arange(2 * 28 * 28, { dtype = torch.float64 }) * 0.11):cos():reshape(2, 1, 28, 28):to(device)
      local y = net(X):to("cpu"):tolist()
      for i = 1, 2 do
        for j = 1, 10 do assert.near(golden.logits[i][j], y[i][j], 1e-10) end
      end
    end)
  end
end)
