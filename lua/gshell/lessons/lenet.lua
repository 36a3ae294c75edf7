-- The LeNet chapter of Dive into Deep Learning as a guided lesson:
-- Fashion-MNIST, LeNet and its layer shapes, training on the GPU, then
-- where the time goes (the profiler, sync debug mode) and the CPU against
-- the GPU. A plain data file: see docs/shell.md, "Writing a lesson".
-- Training runs 2 epochs over the whole training set (under a minute: the
-- sigmoid LeNet leaves chance in the second epoch); the steps after it
-- profile and time a few batches so that each takes seconds. The steps'
-- `setup` rebuild what they need for a learner who resumes.
local function gpu(i)
  return function() return tostring(try_gpu(i)) end
end

local LENET = "nn.Sequential(nn.Conv2d(1, 6, 5, {padding = 2}), nn.Sigmoid(), nn.AvgPool2d(2, {stride = 2}), " ..
  "nn.Conv2d(6, 16, 5), nn.Sigmoid(), nn.AvgPool2d(2, {stride = 2}), nn.Flatten(), " ..
  "nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10))"
local NET_ON_GPU = LENET .. ":to(try_gpu())"
local LOADERS = "d2l.load_data_fashion_mnist(256)"

-- what the data steps rebuild (one load gives both loaders)
local DATA = {
  { "train_iter, test_iter", LOADERS },
}
local SMALL = {
  DATA[1],
  { "train_small", "take(train_iter, 4)" },
  { "test_small", "take(test_iter, 2)" },
}
local function with(list, ...)
  local r = {}
  for _, p in ipairs(list) do r[#r + 1] = p end
  for _, p in ipairs({ ... }) do r[#r + 1] = p end
  return r
end
local TRAINING = with(SMALL, { "device", "try_gpu()" }, { "net", NET_ON_GPU })

local function is_loader(v)
  local mt = getmetatable(v)
  return type(v) == "table" and mt and mt.__len ~= nil and (mt.enumerate ~= nil or v.enumerate ~= nil)
end

-- A list of n {X, y} batches, each X [bs, 1, 28, 28] and y [bs].
local function batch_list(n, bs)
  return function(v)
    if type(v) ~= "table" or getmetatable(v) ~= nil then
      return false, "it should be a plain list of {X, y} batches: take(loader, n) makes one"
    end
    if #v ~= n then return false, string.format("it holds %d batches, the task asks for %d", #v, n) end
    for i, b in ipairs(v) do
      if type(b) ~= "table" or not torch.is_tensor(b[1]) or not torch.is_tensor(b[2]) then
        return false, string.format("batch %d should be {X, y}", i)
      end
      if b[1]:size(1) ~= bs then
        return false, string.format("batch %d holds %d images; load the data with batch size %d", i, b[1]:size(1), bs)
      end
    end
    return true
  end
end

-- Did the cell call `name` (e.g. "train_ch6") without failing?
local function ran(name, hint)
  return {
    check = function(ctx)
      if ctx.status ~= "ok" then return false, nil end
      if type(ctx.src) ~= "string" or not ctx.src:find(name, 1, true) then return false, hint end
      return true
    end,
  }
end

-- The host waits a profile recorded (its 'sync' rows).
local function waits_in(p)
  local n = 0
  for _, r in ipairs(p:key_averages()) do
    if r.kind == "sync" then n = n + r.calls end
  end
  return n
end

local function is_profile(v)
  return type(v) == "table" and type(v.key_averages) == "function" and type(v.events) == "table"
end

return {
  title = "LeNet on Fashion-MNIST: data, layers, training on the GPU, where the time goes (D2L 'LeNet')",
  sim_gpus = 2,
  intro = [[
The LeNet chapter at the prompt: look at Fashion-MNIST, build LeNet, train
it on the GPU for a short while, then find out where the time goes. After
each line you type, gshell checks the result. Training here uses a few
batches, so every step takes seconds (the book trains 10 epochs).]],
  setup = function(env)
    -- take(loader, n): the first n batches of a loader, as a list of
    -- {X, y} (train_ch6 and evaluate_accuracy_gpu take such a list)
    rawset(env, "take", function(loader, n)
      local r = {}
      for i, X, y in loader:enumerate() do
        r[i] = { X, y }
        if i == n then break end
      end
      return r
    end)
  end,
  steps = {
    {
      title = "The data",
      explain = [[
d2l.load_data_fashion_mnist(batch_size) returns two DataLoaders, the
training set (60000 images) and the test set (10000), read from Debian's
dataset-fashion-mnist package. Lua returns both values at once.]],
      task = "Set `train_iter, test_iter = d2l.load_data_fashion_mnist(256)`.",
      expect = {
        { var = "train_iter", test = function(v)
            if not is_loader(v) then return false, "train_iter should be a DataLoader" end
            return #v == 235, string.format("train_iter has %d batches; with batch size 256 it has 235 " ..
              "(60000 images / 256, the last batch smaller)", #v)
          end },
        { var = "test_iter", test = function(v)
            if not is_loader(v) then
              return false, "test_iter should be the second value: `train_iter, test_iter = d2l.load_data_fashion_mnist(256)`"
            end
            return #v == 40, string.format("test_iter has %d batches; with batch size 256 it has 40", #v)
          end },
      },
      done = "235 training batches of 256 images, 40 test batches.",
    },
    {
      title = "One batch",
      explain = [[
The book's next(iter(train_iter)) is train_iter:iter()() in Lua: iter()
gives a function, calling it gives the next batch, a list {X, y};
table.unpack(batch) spreads it into two variables.]],
      task = "Set `X, y = table.unpack(train_iter:iter()())` and look at X.shape and y.",
      setup = DATA,
      expect = {
        { var = "X", shape = { 256, 1, 28, 28 }, dtype = "float32", device = "cpu",
          hint = "X should be the images of the first batch: `X, y = table.unpack(train_iter:iter()())`" },
        { var = "y", shape = { 256 }, dtype = "int64", test = function(v)
            return v:min():item() >= 1 and v:max():item() <= 10, "y should hold the labels 1..10"
          end },
      },
      done = "256 grey images of 28 x 28 pixels (values in [0, 1]) and their labels: 1 is t-shirt, 10 ankle boot.",
    },
    {
      title = "Look at it",
      explain = [[
d2l.get_fashion_mnist_labels names labels; d2l.show_images draws images
with titles (half-blocks at a terminal, a PNG in Jupyter). X[{{1, 8}}] is
Python's X[0:8]: the first 8 images.]],
      task = "Set `labels = d2l.get_fashion_mnist_labels(y[{{1, 8}}])`, then in the same line show them: " ..
        "`d2l.show_images(X[{{1, 8}}]:reshape(8, 28, 28), 2, 4, {titles = labels})`.",
      setup = function(env)
        -- X and y must come from one batch: one call makes both
        if env.X == nil or env.y == nil then
          env.X, env.y = table.unpack(d2l.load_data_fashion_mnist(256):iter()())
          print("(made what this step builds on: X, y = table.unpack(train_iter:iter()()))")
        end
      end,
      expect = {
        { var = "labels", type = "table", test = function(v, env)
            local want = d2l.get_fashion_mnist_labels(env.y[{ { 1, 8 } }])
            if #v ~= 8 then return false, string.format("labels holds %d names; the task asks for the first 8", #v) end
            for i = 1, 8 do
              if v[i] ~= want[i] then
                return false, string.format("labels[%d] is %s, but y[%d] is %s", i, tostring(v[i]), i, want[i])
              end
            end
            return true
          end },
        ran("show_images", "now show them: d2l.show_images(X[{{1, 8}}]:reshape(8, 28, 28), 2, 4, {titles = labels})"),
      },
    },
    {
      title = "LeNet",
      explain = [[
The book's LeNet: two convolutions with sigmoid and average pooling, then
three fully connected layers. nn.Conv2d(1, 6, 5, {padding = 2}) is
Python's nn.Conv2d(1, 6, kernel_size=5, padding=2).]],
      task = "Make `net = nn.Sequential(nn.Conv2d(1, 6, 5, {padding = 2}), nn.Sigmoid(), nn.AvgPool2d(2, {stride = 2}), " ..
        "nn.Conv2d(6, 16, 5), nn.Sigmoid(), nn.AvgPool2d(2, {stride = 2}), nn.Flatten(), " ..
        "nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10))`.",
      expect = {
        { var = "net", test = function(v)
            if not (type(v) == "table" and torch.nn.is_module(v)) then
              return false, "net should be a module: nn.Sequential(...)"
            end
            if #v ~= 12 then
              return false, string.format("net has %d layers; the book's LeNet has 12 (conv, sigmoid, pool twice, " ..
                "flatten, then three linear layers with a sigmoid after the first two)", #v)
            end
            local ok, out = pcall(function()
              local g <close> = torch.no_grad()
              local p = v:parameters()[1]
              return v(torch.zeros(2, 1, 28, 28, { device = p and p.device or "cpu" }))
            end)
            if not ok then
              return false, "net fails on a 28 x 28 image: " .. tostring(out):gsub("^.-:%d+: ", "") ..
                " (did the first convolution get {padding = 2}?)"
            end
            if out:size(2) ~= 10 then
              return false, string.format("net gives %d scores per image; there are 10 classes", out:size(2))
            end
            return true
          end },
      },
    },
    {
      title = "Each layer's output shape",
      explain = [[
The book passes one random image through the layers one at a time and
prints each output's shape. A Sequential is a list of layers, so
ipairs(net) walks them; layer:_get_name() is the class name.]],
      task = "Set `X = torch.rand(1, 1, 28, 28)`, then " ..
        "`for _, layer in ipairs(net) do X = layer(X); print(layer:_get_name(), 'output shape:', X.shape) end`.",
      setup = { { "net", LENET } },
      -- a loop that failed half-way left X as some layer's output; the
      -- right loop then fails on it with a channel error: say why
      check = function(ctx)
        local X = ctx.env.X
        local src = type(ctx.src) == "string" and ctx.src or ""
        if ctx.status == "error" and src:find("for", 1, true) and not src:find("torch.rand", 1, true)
           and torch.is_tensor(X) and tostring(X.shape) ~= "torch.Size([1, 1, 28, 28])" then
          return false, "X was changed by the failed cell (it is now " .. tostring(X.shape) .. "); set it again, " ..
            "X = torch.rand(1, 1, 28, 28), then run the loop"
        end
        return true
      end,
      expect = {
        -- quiet until the cell has the loop (setting X first is part of the task)
        { check = function(ctx)
            if type(ctx.src) ~= "string" or not ctx.src:find("for", 1, true) then return false, nil end
            local X = ctx.env.X
            if not torch.is_tensor(X) then return false, "X should be a tensor: X = torch.rand(1, 1, 28, 28)" end
            if X:dim() ~= 2 or X:size(1) ~= 1 or X:size(2) ~= 10 then
              return false, "after the loop X is " .. tostring(X.shape) .. ", it should be the last layer's " ..
                "output, [1, 10]: start from X = torch.rand(1, 1, 28, 28) and set X = layer(X) each turn"
            end
            return true
          end },
      },
      done = "28 x 28 becomes 6 x 28 x 28, 6 x 14 x 14, 16 x 10 x 10, 16 x 5 x 5, then 400 numbers, 120, 84 and 10 scores.",
    },
    {
      title = "To the GPU",
      explain = [[
try_gpu() is the first GPU, or the CPU when there is none. A module's
:to(device) moves its parameters in place.]],
      task = "Set `device = try_gpu()` and move the network: `net:to(device)`.",
      setup = { { "net", LENET } },
      expect = {
        { var = "device", is = "device", device = gpu(0) },
        { var = "net", module_device = gpu(0) },
      },
    },
    {
      title = "A small subset",
      explain = [[
One epoch of the book is 235 batches. Training (next step) uses them all;
the steps after it profile and time a few batches, which take seconds, and
test on a few: take(loader, n) (this lesson's helper) is the loop
`for i, X, y in loader:enumerate() do r[i] = {X, y}; if i == n then break end end`,
and train_ch6 takes such a list as it takes a DataLoader.]],
      task = "Set `train_small = take(train_iter, 4)` and `test_small = take(test_iter, 2)`.",
      setup = DATA,
      expect = {
        { var = "train_small", test = batch_list(4, 256) },
        { var = "test_small", test = batch_list(2, 256) },
      },
    },
    {
      title = "Train",
      explain = [[
d2l.train_ch6(net, train_iter, test_iter, num_epochs, lr, device) is the
book's loop: Xavier initialisation, SGD, cross-entropy, a chart of loss
and accuracies, and the closing lines. Two epochs over all 60000 images
take under a minute here: the accuracy stays near chance (0.1) for most
of the first epoch, then climbs in the second (to about 0.5; the book's
10 epochs reach about 0.8). On a few batches it would stay flat.]],
      task = "Train for 2 epochs over the whole training set, testing on test_small: " ..
        "`d2l.train_ch6(net, train_iter, test_small, 2, 0.9, device)`.",
      setup = TRAINING,
      expect = {
        ran("train_ch6", "call d2l.train_ch6(net, train_iter, test_small, 2, 0.9, device)"),
        { var = "net", module_device = gpu(0) },
      },
      done = "The examples/sec line names the device it trained on.",
    },
    {
      title = "Evaluate",
      explain = [[
d2l.evaluate_accuracy_gpu(net, data) runs the net in eval mode, without
gradients, on the device of its parameters, and returns the share of
right answers.]],
      task = "Set `acc = d2l.evaluate_accuracy_gpu(net, test_small)`.",
      setup = TRAINING,
      expect = {
        { var = "acc", type = "number", test = function(v, env)
            local want = d2l.evaluate_accuracy_gpu(env.net, env.test_small)
            return math.abs(v - want) < 1e-9, string.format("acc is %s; evaluating net on test_small gives %.4f",
              tostring(v), want)
          end },
      },
    },
    {
      title = "Where the time goes: the profiler",
      explain = [[
torch.profiler.profile(fn) runs fn and records every kernel, copy and
host wait; printing it gives a table per op. Kind 'sync' rows are the
times the host (the CPU running your Lua) stopped to wait for the GPU.]],
      task = "Profile one epoch: `p = torch.profiler.profile(function() d2l.train_ch6(net, train_small, test_small, " ..
        "1, 0.9, device) end)`, then `print(p:table({row_limit = 12}))`.",
      setup = TRAINING,
      expect = {
        { var = "p", test = function(v)
            if not is_profile(v) then
              return false, "p should be what torch.profiler.profile(function() ... end) returns"
            end
            local gpu_kernels = 0
            for _, r in ipairs(v:key_averages()) do
              if r.kind == "kernel" and r.device ~= "cpu" then gpu_kernels = gpu_kernels + r.calls end
            end
            return gpu_kernels > 0, "p recorded no kernel on the GPU: was net trained on device (try_gpu())?"
          end },
      },
      done = "conv2d, its backward and the matrix products do the work; the 'sync' rows are the host waiting.",
    },
    {
      title = "How often does the host wait?",
      explain = [[
p:key_averages() gives the table's rows as Lua tables (name, device,
kind, calls, total_ns...). Count the waits: the calls of the rows whose
kind is 'sync'.]],
      task = "Set `waits = 0; for _, r in ipairs(p:key_averages()) do if r.kind == 'sync' then waits = waits + r.calls end end`.",
      setup = with(TRAINING, { "p", "torch.profiler.profile(function() d2l.train_ch6(net, train_small, test_small, 1, " ..
        "0.9, device) end)" }),
      expect = {
        { var = "waits", type = "number", test = function(v, env)
            local want = waits_in(env.p)
            return v == want, string.format("waits is %s, but p has %d waits (rows with kind == 'sync')", tostring(v), want)
          end },
      },
      done = "Several waits per batch: the book's metric reads the loss and the number of right answers back " ..
        "with item() after every batch, and each read waits for the GPU to finish the batch (the table's " ..
        "last lines say how much of the time the host spent waiting).",
    },
    {
      title = "Sync debug mode",
      explain = [[
torch.cuda.set_sync_debug_mode('warn') prints a line each time the host
waits for a GPU, naming the call (item(), tolist(), cpu(), ...); 'error'
raises instead; 'default' is quiet.]],
      task = "Set `torch.cuda.set_sync_debug_mode('warn')`, then evaluate again: " ..
        "`acc = d2l.evaluate_accuracy_gpu(net, test_small)`, and read the warnings.",
      setup = TRAINING,
      expect = {
        { check = function()
            return torch.cuda.get_sync_debug_mode() == 1,
              "switch the mode on first: torch.cuda.set_sync_debug_mode('warn')"
          end },
        ran("evaluate_accuracy_gpu", "now run acc = d2l.evaluate_accuracy_gpu(net, test_small) and read the warnings"),
      },
      done = "Three waits per batch, each warned about at the line of your code that led to it: the copies " ..
        "of X and y to the GPU from ordinary host memory, and d2l.accuracy's item(), which waits for the " ..
        "batch's result before the next batch is queued.",
    },
    {
      title = "Make the wait an error",
      task = "Set `torch.cuda.set_sync_debug_mode('error')`, then try `d2l.evaluate_accuracy_gpu(net, test_small)` " ..
        "and read the error.",
      setup = TRAINING,
      expect = { { error = "'error'" } },
      done = "The first wait raised: the copy of the first batch to the GPU (and item() would wait after it).",
    },
    {
      title = "The batches on the GPU first",
      explain = [[
Copying from ordinary (pageable) host memory to a GPU waits too: that is
what raised just now. Move the test batches to the GPU once, with the mode
back to 'default'.]],
      task = "Set `torch.cuda.set_sync_debug_mode('default'); test_gpu = {}; for i, b in ipairs(test_small) do " ..
        "test_gpu[i] = {b[1]:to(device), b[2]:to(device)} end`.",
      setup = TRAINING,
      expect = {
        { var = "test_gpu", test = function(v)
            local ok, h = batch_list(2, 256)(v)
            if not ok then return false, h end
            for i, b in ipairs(v) do
              for k = 1, 2 do
                if tostring(b[k].device) ~= tostring(try_gpu()) then
                  return false, string.format("test_gpu[%d][%d] is on %s; move it with :to(device)", i, k,
                    tostring(b[k].device))
                end
              end
            end
            return true
          end },
        { check = function()
            return torch.cuda.get_sync_debug_mode() == 0, "set the mode back: torch.cuda.set_sync_debug_mode('default')"
          end },
      },
    },
    {
      title = "Count on the GPU, read once",
      explain = [[
Keep the count of right answers as a tensor on the GPU and read it once at
the end: the loop then queues every batch without waiting, which the
mode 'error' proves. y_hat == y is `y_hat:eq(y)` in Lua.]],
      task = "Set `torch.cuda.set_sync_debug_mode('error'); correct = torch.zeros({}, {device = device}); " ..
        "torch.no_grad(function() for _, b in ipairs(test_gpu) do correct = correct + " ..
        "net(b[1]):argmax(2):eq(b[2]):sum() end end)`, then `torch.cuda.set_sync_debug_mode('default'); " ..
        "acc_gpu = correct:item() / 512`.",
      setup = with(TRAINING, { "test_gpu", "(function() local r = {} for i, b in ipairs(test_small) do " ..
        "r[i] = {b[1]:to(device), b[2]:to(device)} end return r end)()" }),
      expect = {
        { var = "correct", device = gpu(0), shape = {},
          hint = "correct should stay a 0-d tensor on the GPU: correct = correct + ...:sum()" },
        { var = "acc_gpu", type = "number", test = function(v, env)
            if torch.cuda.get_sync_debug_mode() ~= 0 then
              return false, "set the mode back with torch.cuda.set_sync_debug_mode('default') before reading correct"
            end
            local want = d2l.evaluate_accuracy_gpu(env.net, env.test_small)
            return math.abs(v - want) < 1e-6, string.format("acc_gpu is %s; evaluate_accuracy_gpu gives %.4f " ..
              "(512 test images in test_small)", tostring(v), want)
          end },
        -- the loop ran under 'error' (in this cell or an earlier one of this step)
        { check = function(ctx)
            local src = type(ctx.src) == "string" and ctx.src or ""
            if ctx.status == "ok" and (torch.cuda.get_sync_debug_mode() == 2 or src:find("'error'", 1, true)
                or src:find('"error"', 1, true)) then
              rawset(ctx.env, "_lenet_loop_checked", true)
            end
            return rawget(ctx.env, "_lenet_loop_checked") == true,
              "run the loop with torch.cuda.set_sync_debug_mode('error') on: it proves the loop never waits"
          end },
      },
      done = "Same accuracy, and one wait instead of one per batch.",
    },
    {
      title = "The CPU against the GPU",
      -- the words about simulated GPUs' speed live in gshell.sim_speed
      explain = "d2l.Timer() starts when made; timer:stop() returns the seconds since. Train\n" ..
        "one epoch on each device: train_ch6 moves the net there.\n" .. require("gshell.sim_speed").compare,
      task = "Set `secs = {}; for _, dev in ipairs({torch.device('cpu'), try_gpu()}) do local timer = d2l.Timer(); " ..
        "d2l.train_ch6(net, train_small, test_small, 1, 0.9, dev); secs[tostring(dev)] = timer:stop() end`.",
      setup = TRAINING,
      expect = {
        { var = "secs", type = "table", test = function(v)
            local c, g = v["cpu"], v[tostring(try_gpu())]
            if type(c) ~= "number" or type(g) ~= "number" then
              return false, "secs should hold the seconds for 'cpu' and for " .. tostring(try_gpu()) ..
                " (secs[tostring(dev)] = timer:stop())"
            end
            return c > 0 and g > 0, "the times should be positive"
          end },
        { var = "net", module_device = gpu(0),
          hint = "train on the GPU last, so that net ends there: {torch.device('cpu'), try_gpu()}" },
      },
      done = "Compare secs.cpu with the GPU's; examples/sec in the closing lines says the same per image.",
    },
  },
  outro = [[
That is the chapter: Fashion-MNIST, LeNet's shapes, training on the GPU,
the profiler, sync debug mode and a loop that does not wait. The full run
is examples/lenet.ipynb (Jupyter) and the book's train_ch6 with 10 epochs.]],
}
