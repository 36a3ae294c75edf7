-- d2l: the helpers of the book's d2l package (Dive into Deep Learning,
-- PyTorch edition) that its GPU chapters call, under the same names and
-- with the same behaviour, translated to Lua: a global in gshell,
-- require("d2l") after require("torch") in stock Lua. Class targets are
-- 1-based, as everywhere in gshell. docs/d2l.md documents each one.
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local display = require("torch.display")
local Chart = require("torch.d2l.chart")

local d2l = {}

local function describe(v) return require("torch.utils.errors").describe(v) end

-- ---- devices -----------------------------------------------------------------

d2l.try_gpu = torch.try_gpu
d2l.try_all_gpus = torch.try_all_gpus

-- The device as the book prints it: "cuda:0", "cpu".
local function device_name(dev)
  dev = torch.device(dev)
  local s = tostring(dev)
  return (s:gsub("^device%(type='(%w+)', index=(%d+)%)$", "%1:%2"):gsub("^device%(type='(%w+)'%)$", "%1"))
end
d2l.device_name = device_name

-- timing_note(devices): the words a printed time carries to say whose time
-- it is. A simulated GPU that models a real one reports that GPU's time
-- (docs/time-model.md), so its times say " (modelled on a Tesla
-- V100-SXM2-16GB)", as %timeit's do; the CPU, a real GPU and a simulated
-- GPU on `host` report this machine's own time: "". devices: a device, a
-- list of devices, or nil for the current CUDA device.
local function model_of(dev)
  local ok, m = pcall(function()
    dev = torch.device(dev)
    return dev.type == "cuda" and torch.cuda.gpu_model(dev.index or torch.cuda.current_device()) or nil
  end)
  return ok and m or nil
end

function d2l.timing_note(devices)
  if devices == nil then
    local ok, n = pcall(torch.cuda.device_count)
    if not ok or n == 0 then return "" end
    devices = { torch.device("cuda:" .. torch.cuda.current_device()) }
  elseif type(devices) ~= "table" or getmetatable(devices) ~= nil then
    devices = { devices }
  end
  local names, seen = {}, {}
  for _, d in ipairs(devices) do
    local m = model_of(d)
    if m and not seen[m.name] then
      seen[m.name] = true
      -- the model carries its article: "an NVIDIA A100-SXM4-80GB", "a Tesla V100-SXM2-16GB"
      names[#names + 1] = m.a_name
    end
  end
  if #names == 0 then return "" end
  return " (modelled on " .. table.concat(names, " and ") .. ")"
end

-- ---- Timer, Benchmark, Accumulator -------------------------------------------

-- Timer(): records several running times (seconds); it starts at creation.
local Timer = {}
Timer.__index = Timer
Timer.__name = "d2l.Timer"

function d2l.Timer()
  local self = setmetatable({ times = {} }, Timer)
  self:start()
  return self
end

-- The count of launches and waits on modelled devices (torch._model_events):
-- a time between two counts that differ read the modelled GPU's clock.
local function model_events()
  return torch._model_events and torch._model_events() or 0
end

function Timer:start()
  self.events = model_events()
  self.tik = torch.clock()
end

-- Stops the timer, records the time since start() and returns it. A time
-- that launched or waited for work on a modelled GPU is that GPU's time:
-- self.note then says so (d2l.timing_note).
function Timer:stop()
  if self.tik == nil then fail("Timer:stop: the timer was not started (call timer:start() first)") end
  self.times[#self.times + 1] = torch.clock() - self.tik
  if model_events() ~= self.events then self.note = d2l.timing_note() end
  return self.times[#self.times]
end

function Timer:sum()
  local s = 0
  for _, t in ipairs(self.times) do s = s + t end
  return s
end

function Timer:avg()
  if #self.times == 0 then fail("Timer:avg: no time recorded yet (call timer:stop() first)") end
  return self:sum() / #self.times
end

-- The running sums of the recorded times, as a list.
function Timer:cumsum()
  local r, s = {}, 0
  for i, t in ipairs(self.times) do s = s + t; r[i] = s end
  return r
end

function Timer:__tostring()
  return string.format("d2l.Timer(%d times, %.4f sec in all%s)", #self.times, self:sum(),
    (self.note or ""):gsub("^ %(", ", "):gsub("%)$", ""))
end

-- Benchmark(description): the book's `with d2l.Benchmark('x'):` scope.
-- In Lua it is a to-be-closed variable, or run(fn):
--   do local _ <close> = d2l.Benchmark('numpy') ... end
--   d2l.Benchmark('torch'):run(function() ... end)
-- Either way the scope's end prints "<description>: 0.1234 sec".
local Benchmark = {}
Benchmark.__index = Benchmark
Benchmark.__name = "d2l.Benchmark"

function d2l.Benchmark(description)
  if description == nil then description = "Done" end
  if type(description) ~= "string" then
    fail("d2l.Benchmark(description): expected a string, got " .. describe(description))
  end
  return setmetatable({ description = description, timer = d2l.Timer() }, Benchmark)
end

function Benchmark:__close()
  if self.done then return end
  self.done = true
  local timer = self.timer
  local before = timer.note
  timer.note = nil
  local t = timer:stop()
  -- the note only when this scope's work ran on a modelled GPU
  print(string.format("%s: %.4f sec%s", self.description, t, timer.note or ""))
  timer.note = timer.note or before
end

function Benchmark:run(fn, ...)
  if type(fn) ~= "function" then fail("Benchmark:run(fn): expected a function, got " .. describe(fn)) end
  self.timer:start()
  local r = table.pack(fn(...))
  Benchmark.__close(self)
  return table.unpack(r, 1, r.n)
end

-- Accumulator(n): n running sums. acc:add(a, b, ...) adds to each (tensors
-- count as their value); acc[i] reads sum i (1-based).
local Accumulator = {}
Accumulator.__name = "d2l.Accumulator"
Accumulator.__index = function(self, k)
  if math.type(k) == "integer" then
    local data = rawget(self, "data")
    if k < 1 or k > #data then
      fail(string.format("Accumulator: index %d is out of range 1..%d", k, #data))
    end
    return data[k]
  end
  return Accumulator[k]
end

function d2l.Accumulator(n)
  if math.type(n) ~= "integer" or n < 1 then
    fail("d2l.Accumulator(n): expected a positive integer count of sums, got " .. describe(n))
  end
  local data = {}
  for i = 1, n do data[i] = 0.0 end
  return setmetatable({ data = data }, Accumulator)
end

local function as_number(v, who, i)
  if type(v) == "number" then return v end
  if torch.is_tensor(v) then
    if v:numel() ~= 1 then
      fail(string.format("%s: argument %d is a tensor of %d elements; expected a number or a one-element tensor",
        who, i, v:numel()))
    end
    return v:item()
  end
  fail(string.format("%s: argument %d must be a number or a one-element tensor, got %s", who, i, describe(v)))
end

function Accumulator:add(...)
  local n = select("#", ...)
  if n ~= #self.data then
    fail(string.format("Accumulator:add: expected %d values (one per sum), got %d", #self.data, n))
  end
  for i = 1, n do self.data[i] = self.data[i] + as_number((select(i, ...)), "Accumulator:add", i) end
end

function Accumulator:reset()
  for i = 1, #self.data do self.data[i] = 0.0 end
end

function Accumulator:__len() return #self.data end

function Accumulator:__tostring()
  local parts = {}
  for i, v in ipairs(self.data) do parts[i] = string.format("%g", v) end
  return "d2l.Accumulator(" .. table.concat(parts, ", ") .. ")"
end

-- ---- accuracy ------------------------------------------------------------------

-- The number of correct predictions: y_hat holds scores ([N, C], the
-- predicted class is the row's argmax, 1-based) or classes; y the 1-based
-- labels. A number (a float), as the book's float(...).
function d2l.accuracy(y_hat, y)
  if not torch.is_tensor(y_hat) or not torch.is_tensor(y) then
    fail("d2l.accuracy(y_hat, y): expected two tensors (scores or classes, then labels), got "
      .. describe(y_hat) .. " and " .. describe(y))
  end
  if y_hat:dim() > 1 and y_hat:size(2) > 1 then y_hat = y_hat:argmax(2) end
  if y_hat:numel() ~= y:numel() then
    fail(string.format("d2l.accuracy: %d predictions for %d labels", y_hat:numel(), y:numel()))
  end
  local cmp = y_hat:to(y.dtype):reshape(-1):eq(y:reshape(-1))
  return cmp:to(y.dtype):sum():item() + 0.0
end

-- How a data iterator yields (X, y): a loader with enumerate() (the data
-- sets' DataLoader), a generic-for loader yielding {X, y} batches, or a
-- plain list of {X, y} pairs.
local function batches(data_iter, who)
  if type(data_iter) ~= "table" then
    fail(who .. ": expected a data iterator (a DataLoader or a list of {X, y} batches), got " .. describe(data_iter))
  end
  local mt = getmetatable(data_iter)
  if mt and mt.__call then
    local f, s, c = data_iter, nil, nil
    return function()
      local b = f(s, c)
      c = b
      if b == nil then return nil end
      return b[1], b[2]
    end
  end
  local i = 0
  return function()
    i = i + 1
    local b = data_iter[i]
    if b == nil then return nil end
    return b[1], b[2]
  end
end
d2l._batches = batches

local function len_of(data_iter)
  local mt = getmetatable(data_iter)
  if mt and mt.__len then return mt.__len(data_iter) end
  return #data_iter
end

-- The first parameter of a module (nil when it has none).
local function first_param(net)
  if type(net) == "table" and type(net.parameters) == "function" then
    local ok, ps = pcall(net.parameters, net)
    if ok and type(ps) == "table" then return ps[1] end
  end
  return nil
end

local function is_module(v) return torch.nn.is_module(v) end

-- The accuracy of net on a data set: eval mode, no gradients, batches moved
-- to `device` (default: the device of net's first parameter).
function d2l.evaluate_accuracy_gpu(net, data_iter, device)
  if is_module(net) then
    net:eval()
    if device == nil then
      local p = first_param(net)
      if p == nil then fail("d2l.evaluate_accuracy_gpu: the net has no parameters to take the device from; pass a device") end
      device = p.device
    end
  elseif type(net) ~= "function" and not (type(net) == "table" and getmetatable(net) and getmetatable(net).__call) then
    fail("d2l.evaluate_accuracy_gpu(net, data_iter[, device]): net must be an nn.Module or a function, got "
      .. describe(net))
  end
  device = device and torch.device(device) or nil
  local metric = d2l.Accumulator(2)
  local g <close> = torch.no_grad()
  for X, y in batches(data_iter, "d2l.evaluate_accuracy_gpu") do
    if device then
      if torch.is_tensor(X) then X = X:to(device)
      else for i = 1, #X do X[i] = X[i]:to(device) end end
      y = y:to(device)
    end
    metric:add(d2l.accuracy(net(X), y), y:numel())
  end
  if metric[2] == 0 then fail("d2l.evaluate_accuracy_gpu: the data iterator gave no batches") end
  return metric[1] / metric[2]
end

-- ---- the data --------------------------------------------------------------------

local TEXT_LABELS = { "t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag",
  "ankle boot" }

-- The names of Fashion-MNIST labels (1-based: 1 is t-shirt, 10 ankle boot),
-- for a tensor or a list of labels.
function d2l.get_fashion_mnist_labels(labels)
  if torch.is_tensor(labels) then labels = labels:reshape(-1):tolist() end
  if type(labels) ~= "table" then
    fail("d2l.get_fashion_mnist_labels(labels): expected a tensor or a list of labels 1..10, got " .. describe(labels))
  end
  local r = {}
  for i, l in ipairs(labels) do
    local name = math.type(l) == "integer" and TEXT_LABELS[l] or (type(l) == "number" and TEXT_LABELS[math.tointeger(l)])
    if not name then
      fail(string.format("d2l.get_fashion_mnist_labels: label %d is %s; Fashion-MNIST labels are 1..10 (1-based)",
        i, tostring(l)))
    end
    r[i] = name
  end
  return r
end

-- The Fashion-MNIST train and test loaders (the book's), images scaled to
-- [0, 1] and resized to `resize` when given. Needs torchvision's data set.
function d2l.load_data_fashion_mnist(batch_size, resize)
  if math.type(batch_size) ~= "integer" or batch_size < 1 then
    fail("d2l.load_data_fashion_mnist(batch_size[, resize]): batch_size must be a positive integer, got "
      .. describe(batch_size))
  end
  local ok, tv = pcall(require, "torchvision")
  if not ok or type(tv) ~= "table" or not tv.datasets then
    fail("d2l.load_data_fashion_mnist: torchvision (the data sets) is not available in this build: " .. tostring(tv))
  end
  local trans = { tv.transforms.ToTensor() }
  if resize then table.insert(trans, 1, tv.transforms.Resize(resize)) end
  local transform = tv.transforms.Compose(trans)
  local train = tv.datasets.FashionMNIST({ train = true, transform = transform })
  local test = tv.datasets.FashionMNIST({ train = false, transform = transform })
  local DataLoader = torch.utils.data.DataLoader
  return DataLoader(train, { batch_size = batch_size, shuffle = true }),
         DataLoader(test, { batch_size = batch_size, shuffle = false })
end

-- ---- training from scratch ---------------------------------------------------------

-- Minibatch stochastic gradient descent on a list of parameters.
function d2l.sgd(params, lr, batch_size)
  if type(params) ~= "table" then fail("d2l.sgd(params, lr, batch_size): params must be a list of tensors") end
  local g <close> = torch.no_grad()
  for i, p in ipairs(params) do
    if not torch.is_tensor(p) then fail(string.format("d2l.sgd: params[%d] is not a tensor", i)) end
    local grad = p.grad
    if grad == nil then
      fail(string.format("d2l.sgd: params[%d] has no gradient (call backward() on the loss first)", i))
    end
    p:sub_(grad * (lr / batch_size))
    grad:zero_()
  end
end

-- X and y cut into one slice per device, each on its device.
-- corr2d(X, K): the book's two-dimensional cross-correlation of a matrix X
-- [h, w] with a kernel K [kh, kw], an [h - kh + 1, w - kw + 1] matrix. The
-- book's double loop writes Y[i, j] one element at a time; this is one
-- conv2d (the same numbers), so gradients reach X and K on every device.
function d2l.corr2d(X, K)
  for _, p in ipairs({ { X, "X" }, { K, "K" } }) do
    if not torch.is_tensor(p[1]) or p[1]:dim() ~= 2 then
      fail(("d2l.corr2d(X, K): %s must be a matrix (a 2-d tensor), got %s"):format(p[2], describe(p[1])))
    end
  end
  if K:size(1) > X:size(1) or K:size(2) > X:size(2) then
    fail(("d2l.corr2d(X, K): the kernel (%dx%d) is larger than X (%dx%d)"):format(K:size(1), K:size(2), X:size(1),
      X:size(2)))
  end
  local x = X:reshape(1, 1, X:size(1), X:size(2))
  local k = K:to(X.dtype):reshape(1, 1, K:size(1), K:size(2))
  return torch.conv2d(x, k):reshape(X:size(1) - K:size(1) + 1, X:size(2) - K:size(2) + 1)
end

function d2l.split_batch(X, y, devices)
  if not torch.is_tensor(X) or not torch.is_tensor(y) then
    fail("d2l.split_batch(X, y, devices): X and y must be tensors")
  end
  if X:size(1) ~= y:size(1) then
    fail(string.format("d2l.split_batch: X has %d rows and y %d; they must match", X:size(1), y:size(1)))
  end
  -- examples: without CUDA devices (try_all_gpus() is {cpu} on a machine
  -- without a GPU, and try_gpu(1) the cpu) comm.scatter refuses the cpu,
  -- so the slices are cut the same way (chunk sizes of ceil(n / #devices))
  -- and moved one by one.
  if type(devices) == "table" then
    local any_cpu = false
    for _, d in ipairs(devices) do
      local ok, dev = pcall(torch.device, d)
      if ok and dev.type == "cpu" then any_cpu = true end
    end
    if any_cpu then
      local n, k = X:size(1), #devices
      local size = (n + k - 1) // k
      local Xs, ys = {}, {}
      for i, d in ipairs(devices) do
        local start = (i - 1) * size + 1
        local len = math.min(size, n - start + 1)
        if len <= 0 then break end
        Xs[i] = X:narrow(1, start, len):to(d)
        ys[i] = y:narrow(1, start, len):to(d)
      end
      return Xs, ys
    end
  end
  return torch.cuda.comm.scatter(X, devices), torch.cuda.comm.scatter(y, devices)
end

-- data[1] becomes the sum of all, then every data[i] a copy of it.
function d2l.allreduce(data)
  if type(data) ~= "table" or #data == 0 then fail("d2l.allreduce(data): expected a list of tensors") end
  local g <close> = torch.no_grad()
  for i = 2, #data do data[1]:add_(data[i]:to(data[1].device)) end
  for i = 2, #data do data[i]:copy_(data[1]:to(data[i].device)) end
end

-- ---- the pictures ----------------------------------------------------------------------

-- Animator({xlabel =, ylabel =, legend =, xlim =, ylim =, xscale =, yscale =,
-- fmts =, figsize =}): a chart drawn again after each add(x, ys).
local Animator = {}
Animator.__index = Animator
Animator.__name = "d2l.Animator"

-- The book's positional order: Animator('epoch', 'loss', {'train'}, ...);
-- an options table may follow the positional ones.
local ANIMATOR_ORDER = { "xlabel", "ylabel", "legend", "xlim", "ylim", "xscale", "yscale", "fmts", "nrows", "ncols",
  "figsize" }

local function is_options(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil then return false end
  for k in pairs(v) do if type(k) == "string" then return true end end
  return false
end

function d2l.Animator(...)
  local n = select("#", ...)
  local opts = ...
  if n > 1 or (n == 1 and opts ~= nil and not is_options(opts) and type(opts) ~= "table") then
    local args = table.pack(...)
    opts = {}
    if is_options(args[n]) then
      for k, v in pairs(args[n]) do opts[k] = v end
      n = n - 1
    end
    if n > #ANIMATOR_ORDER then
      fail(("d2l.Animator: at most %d positional arguments (%s), got %d"):format(#ANIMATOR_ORDER,
        table.concat(ANIMATOR_ORDER, ", "), n))
    end
    for i = 1, n do if args[i] ~= nil then opts[ANIMATOR_ORDER[i]] = args[i] end end
  end
  opts = opts or {}
  if type(opts) ~= "table" then fail("d2l.Animator(opts): expected an options table, got " .. describe(opts)) end
  local copt = {}
  for k, v in pairs(opts) do if k ~= "nrows" and k ~= "ncols" then copt[k] = v end end
  check_options(opts, "d2l.Animator", { "xlabel", "ylabel", "legend", "xlim", "ylim", "xscale", "yscale", "fmts",
    "figsize", "nrows", "ncols", "title", "width", "height" })
  local self = setmetatable({ chart = Chart.new(copt, "d2l.Animator"), X = nil, Y = nil }, Animator)
  return self
end

-- The largest integer key of a list that may have holes (nil = no point).
local function list_len(t, at_least)
  local n = at_least or 0
  for k in pairs(t) do if math.type(k) == "integer" and k > n then n = k end end
  return n
end

-- add(x, ys): one point per series; ys a number or a list where nil (or
-- false) means "no point for that series now", as the book's None.
function Animator:add(x, y)
  if type(y) ~= "table" then y = { y } end
  local n = math.max(#self.chart.legend, list_len(y))
  if type(x) ~= "table" then
    local xs = {}
    for i = 1, n do xs[i] = x end
    x = xs
  end
  if not self.X then
    self.X, self.Y = {}, {}
    for i = 1, n do self.X[i], self.Y[i] = {}, {} end
  end
  for i = 1, n do
    local a, b = x[i], y[i]
    if torch.is_tensor(b) then b = b:item() end
    if torch.is_tensor(a) then a = a:item() end
    if a and b then
      if type(a) ~= "number" or type(b) ~= "number" then
        fail(string.format("Animator:add: point %d must be numbers, got %s and %s", i, describe(a), describe(b)))
      end
      self.X[i] = self.X[i] or {}
      self.Y[i] = self.Y[i] or {}
      table.insert(self.X[i], a)
      table.insert(self.Y[i], b)
    end
  end
  for i = 1, #self.X do self.chart:set_series(i, self.X[i], self.Y[i]) end
  -- the line for output that is not a terminal: the values just added
  self.chart.last_added = {}
  for i = 1, n do if x[i] and y[i] then self.chart.last_added[i] = true end end
  if self.id then display.update_display(self.chart, self.id)
  else self.id = display.display(self.chart) end
end

function Animator:_repr_svg_() return self.chart:_repr_svg_() end
function Animator:_repr_term_(o) return self.chart:_repr_term_(o) end
function Animator:_repr_line_() return self.chart:_repr_line_() end
function Animator:__tostring() return "d2l.Animator: " .. self.chart:_repr_line_() end

-- Saves the chart as it is now (.svg).
function Animator:save(path) return display.save(self.chart, path) end

local function values_of(v, who)
  if torch.is_tensor(v) then return v:detach():to("cpu"):reshape(-1):tolist() end
  if type(v) == "table" then return v end
  fail(who .. ": expected a tensor or a list of numbers, got " .. describe(v))
end

local function is_series_list(v)
  return type(v) == "table" and not torch.is_tensor(v) and (torch.is_tensor(v[1]) or type(v[1]) == "table")
end

-- plot(X, Y[, {xlabel =, ylabel =, legend =, xlim =, ylim =, xscale =,
-- yscale =, fmts =, figsize =}]): the book's d2l.plot. X and Y are a list
-- or tensor each, or lists of them (one per curve); with Y nil, X is
-- plotted against 1, 2, ...; one X serves every Y. Returns nothing, as the
-- book's (the chart is shown, not printed again as the cell's value).
-- As the book, the axis labels may also come as plain arguments:
-- plot(x, {f(x), g(x)}, 'x', 'f(x)'[, {legend = ...}]).
function d2l.plot(X, Y, opts, ylabel, more)
  if type(Y) == "table" and not torch.is_tensor(Y) and getmetatable(Y) == nil and Y[1] == nil and next(Y) ~= nil then
    opts, Y = Y, nil   -- plot(X, {opts})
  end
  if type(opts) == "string" or (opts == nil and type(ylabel) == "string") then
    local o = {}
    for k, v in pairs(more or {}) do o[k] = v end
    o.xlabel, o.ylabel = opts, ylabel
    opts = o
  end
  local chart = Chart.new(opts or {}, "d2l.plot")
  local xs, ys
  if Y == nil then
    ys = is_series_list(X) and X or { X }
    xs = {}
    for i, y in ipairs(ys) do
      local n = #values_of(y, "d2l.plot")
      local idx = {}
      for j = 1, n do idx[j] = j end
      xs[i] = idx
    end
  else
    ys = is_series_list(Y) and Y or { Y }
    xs = is_series_list(X) and X or { X }
  end
  for i, y in ipairs(ys) do
    local yv = values_of(y, "d2l.plot")
    local xv = values_of(xs[#xs == 1 and 1 or i] or xs[1], "d2l.plot")
    if #xv ~= #yv then
      fail(string.format("d2l.plot: curve %d has %d x values and %d y values", i, #xv, #yv))
    end
    chart:set_series(i, xv, yv)
  end
  chart.static = true
  display.display(chart)
end

d2l.Chart = Chart

-- show_images and the image grid: images.lua
local images = require("torch.d2l.images")
d2l.show_images = images.show_images

-- ---- the book's training loop -------------------------------------------------------

local function is_a(m, cls)
  if cls == nil then return false end
  local c = getmetatable(m)
  while c do
    if c == cls then return true end
    c = rawget(c, "super")
  end
  return false
end

-- train_ch6(net, train_iter, test_iter, num_epochs, lr, device): the book's
-- LeNet loop (chapter 7.6 of the PyTorch edition), step by step.
function d2l.train_ch6(net, train_iter, test_iter, num_epochs, lr, device)
  local nn = torch.nn
  if not is_module(net) then fail("d2l.train_ch6: net must be an nn.Module, got " .. describe(net)) end
  if math.type(num_epochs) ~= "integer" or num_epochs < 1 then
    fail("d2l.train_ch6: num_epochs must be a positive integer, got " .. describe(num_epochs))
  end
  if type(lr) ~= "number" then fail("d2l.train_ch6: lr must be a number, got " .. describe(lr)) end
  device = torch.device(device)
  local function init_weights(m)
    if is_a(m, nn.Linear) or is_a(m, nn.Conv2d) then nn.init.xavier_uniform_(m.weight) end
  end
  net:apply(init_weights)
  print("training on " .. device_name(device))
  net:to(device)
  local optimizer = torch.optim.SGD(net:parameters(), { lr = lr })
  local loss = nn.CrossEntropyLoss()
  -- the book's xlim is {1, num_epochs}; one epoch's points lie in (0, 1],
  -- so a single epoch starts its axis at 0 rather than cutting them off
  local animator = d2l.Animator({ xlabel = "epoch", xlim = { num_epochs == 1 and 0 or 1, num_epochs },
    legend = { "train loss", "train acc", "test acc" } })
  local timer, num_batches = d2l.Timer(), len_of(train_iter)
  local metric, train_l, train_acc, test_acc
  for epoch = 0, num_epochs - 1 do
    metric = d2l.Accumulator(3)
    net:train()
    local i = 0
    for X, y in batches(train_iter, "d2l.train_ch6") do
      timer:start()
      optimizer:zero_grad()
      X, y = X:to(device), y:to(device)
      local y_hat = net(X)
      local l = loss(y_hat, y)
      l:backward()
      optimizer:step()
      do
        local g <close> = torch.no_grad()
        metric:add(l * X:size(1), d2l.accuracy(y_hat, y), X:size(1))
      end
      timer:stop()
      train_l = metric[1] / metric[3]
      train_acc = metric[2] / metric[3]
      -- the book adds five points an epoch (and the last batch's)
      if (i + 1) % math.max(1, num_batches // 5) == 0 or i == num_batches - 1 then
        animator:add(epoch + (i + 1) / num_batches, { train_l, train_acc, nil })
      end
      i = i + 1
    end
    test_acc = d2l.evaluate_accuracy_gpu(net, test_iter)
    animator:add(epoch + 1, { nil, nil, test_acc })
  end
  print(string.format("loss %.3f, train acc %.3f, test acc %.3f", train_l, train_acc, test_acc))
  print(string.format("%.1f examples/sec on %s%s", metric[3] * num_epochs / timer:sum(), device_name(device),
    d2l.timing_note(device)))
  -- nothing is returned, as the book's (the prompt would print it again);
  -- the chart stays reachable for saving
  d2l.last_animator = animator
end

-- the attention chapters' masking: attention.lua
do
  local attention = require("torch.d2l.attention")
  d2l.sequence_mask = attention.sequence_mask
  d2l.masked_softmax = attention.masked_softmax
  d2l.MaskedSoftmaxCELoss = attention.MaskedSoftmaxCELoss
end

-- the attention and transformer chapters' modules and check_shape
-- (attention_models.lua); show_heatmaps (heatmaps.lua)
for k, v in pairs(require("torch.d2l.attention_models")) do d2l[k] = v end
d2l.show_heatmaps = require("torch.d2l.heatmaps").show_heatmaps

-- the recurrent chapters' text helpers (text.lua) and training loop (train_seq.lua)
do
  local text = require("torch.d2l.text")
  for _, k in ipairs({ "read_time_machine", "tokenize", "Vocab", "count_corpus", "load_corpus_time_machine",
    "seq_data_iter_random", "seq_data_iter_sequential", "load_data_time_machine" }) do
    d2l[k] = text[k]
  end
  local seq = require("torch.d2l.train_seq")
  for _, k in ipairs({ "grad_clipping", "predict_ch8", "train_epoch_ch8", "train_ch8", "RNNModel" }) do
    d2l[k] = seq[k]
  end
end

-- resnet18 and its Residual block: resnet.lua (needs nn.Conv2d, BatchNorm2d)
d2l.resnet18 = function(...) return require("torch.d2l.resnet").resnet18(...) end
d2l.Residual = function(...) return require("torch.d2l.resnet").Residual(...) end

return d2l
