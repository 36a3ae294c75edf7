-- `gshell --lesson lenet` (issue 21, "A second lesson"): the LeNet chapter
-- driven end to end with typed answers (right ones and the likely slips,
-- each with its hint), resumed in the middle of the lesson in a new
-- session (each step's setup rebuilds the data, the subset and the net),
-- and its first steps at a terminal, where show_images draws the images.
local R = require("gshell_run")
local H = require("helpers")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end
local function count(s, piece)
  local n, i = 0, 1
  while true do
    local a = s:find(piece, i, true)
    if not a then return n end
    n, i = n + 1, a + 1
  end
end

local LENET = "net = nn.Sequential(nn.Conv2d(1, 6, 5, {padding = 2}), nn.Sigmoid(), nn.AvgPool2d(2, {stride = 2}), " ..
  "nn.Conv2d(6, 16, 5), nn.Sigmoid(), nn.AvgPool2d(2, {stride = 2}), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), " ..
  "nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10))"

-- The lenet lesson from step `at` (1: from the start) with these lines
-- typed; returns stdout, stderr, exit code and the progress file.
local function lenet_from(at, lines)
  local dir = R.tmpdir()
  R.write_file(dir .. "/state", "lenet\t" .. at .. "\n")
  local out, err, code = R.run({ "--lesson", "lenet", "--repl-stdin" }, table.concat(lines, "\n") .. "\n",
    { GSHELL_LESSON_STATE = dir .. "/state" })
  local state = R.read_file(dir .. "/state")
  os.execute("rm -rf " .. R.quote(dir))
  return out, err, code, state
end

-- Step 8 trains 2 epochs over all 60000 images (issue 34): well under a
-- minute plain, many minutes under a sanitizer, which adds nothing the
-- 4-batch run does not cover; there the spec trains on train_small and
-- leaves the accuracy check to the plain run.
local SANITIZED = H.UNDER_ASAN or H.UNDER_TSAN
local STEP8 = SANITIZED and "d2l.train_ch6(net, train_small, test_small, 2, 0.9, device)"
  or "d2l.train_ch6(net, train_iter, test_small, 2, 0.9, device)"

-- The resumed sessions check the lesson's own Lua (each step's setup, its
-- hints): under TSAN they would only re-run, a dozen child processes
-- over, the engine paths the full run above them already drives there
-- (about 150 of TSAN's seconds). They still run plain and under ASan.
local lesson_it = H.not_under_tsan_it(it, pending, "the lesson's own Lua in a dozen child sessions; the full run covers the engine")

describe("gshell --lesson lenet", function()
  it("is listed with the gpu lesson", function()
    local out = R.run({ "--lesson" }, "", { GSHELL_LESSON_STATE = "/nonexistent/state" })
    assert.truthy(out:find("lenet%s+LeNet on Fashion%-MNIST.-%(16 steps, not started%)"), out)
  end)

  it("runs from the first step to the last, with a hint for each likely slip", function()
    local out, err, code, state = lenet_from(1, {
      "train_iter, test_iter = d2l.load_data_fashion_mnist(100)",            -- wrong batch size
      "train_iter, test_iter = d2l.load_data_fashion_mnist(256)",
      "X, y = table.unpack(train_iter:iter()())",
      "labels = d2l.get_fashion_mnist_labels(y[{{1, 8}}])",                  -- not shown yet
      "labels = d2l.get_fashion_mnist_labels(y[{{1, 8}}]); d2l.show_images(X[{{1, 8}}]:reshape(8, 28, 28), 2, 4, {titles = labels})",
      (LENET:gsub(", {padding = 2}", "")),                                     -- no padding
      LENET,
      -- the loop on the batch X of step 2 instead of one random image
      "for _, layer in ipairs(net) do X = layer(X); print(layer:_get_name(), 'output shape:', X.shape) end",
      "X = torch.rand(1, 1, 28, 28)",                                        -- the loop comes next: no hint
      "for _, layer in ipairs(net) do X = layer(X); print(layer:_get_name(), 'output shape:', X.shape) end",
      "device = try_gpu(); print(net)",                                      -- net not moved
      "net:to(device)",
      "train_small = take(train_iter, 4); test_small = take(test_iter, 2)",
      STEP8,
      "acc = d2l.evaluate_accuracy_gpu(net, test_small)",
      "p = torch.profiler.profile(function() d2l.train_ch6(net, train_small, test_small, 1, 0.9, device) end)",
      "waits = 3",                                                          -- a guess
      "waits = 0; for _, r in ipairs(p:key_averages()) do if r.kind == 'sync' then waits = waits + r.calls end end",
      "torch.cuda.set_sync_debug_mode('warn'); acc = d2l.evaluate_accuracy_gpu(net, test_small)",
      "d2l.evaluate_accuracy_gpu(net, test_small)",                          -- mode still 'warn': no error
      "torch.cuda.set_sync_debug_mode('error'); d2l.evaluate_accuracy_gpu(net, test_small)",
      "torch.cuda.set_sync_debug_mode('default'); test_gpu = {}; for i, b in ipairs(test_small) do test_gpu[i] = {b[1]:to(device), b[2]:to(device)} end",
      "torch.cuda.set_sync_debug_mode('error'); correct = torch.zeros({}, {device = device}); torch.no_grad(function() for _, b in ipairs(test_gpu) do correct = correct + net(b[1]):argmax(2):eq(b[2]):sum() end end)",
      "torch.cuda.set_sync_debug_mode('default'); acc_gpu = correct:item()",  -- forgot / 512
      "acc_gpu = correct:item() / 512",
      "secs = {}; for _, dev in ipairs({torch.device('cpu'), try_gpu()}) do local timer = d2l.Timer(); d2l.train_ch6(net, train_small, test_small, 1, 0.9, dev); secs[tostring(dev)] = timer:stop() end",
    })
    assert.are.equal(0, code, err)
    assert.truthy(has(out, "this lesson uses 2 SIMULATED CUDA devices"), out)
    assert.are.equal(16, count(out, "✓"), out)
    assert.truthy(has(out, "Lesson complete"), out)
    assert.are.equal("lenet\t17\n", state)
    -- the hints, in order
    local hints = {
      "train_iter has 600 batches; with batch size 256 it has 235",
      "now show them: d2l.show_images(",
      "net fails on a 28 x 28 image:",
      "after the loop X is torch.Size([256, 10]), it should be the last layer's output, [1, 10]: start from X = torch.rand(1, 1, 28, 28)",
      "net's parameters are on cpu, the task asks for cuda:0",
      "waits is 3, but p has ",
      "that ran without an error; the task is to see the error happen",
      "acc_gpu is ",
    }
    local at = 1
    for _, h in ipairs(hints) do
      local a = out:find("✗ Not yet: " .. h, at, true)
      assert.truthy(a, "missing or out of order: " .. h .. "\n" .. out)
      at = a + 1
    end
    assert.are.equal(#hints, count(out, "✗ Not yet"), out)
    -- the padding hint names the fix
    assert.truthy(has(out, "(did the first convolution get {padding = 2}?)"), out)
    -- what the learner sees along the way: images, the book's shape loop, training, the profile
    assert.truthy(has(out, "show_images: 8 images of 28x28 in 2 x 4: "), out)
    for _, l in ipairs({ "Conv2d\toutput shape:\ttorch.Size([1, 6, 28, 28])",
                         "AvgPool2d\toutput shape:\ttorch.Size([1, 16, 5, 5])",
                         "Flatten\toutput shape:\ttorch.Size([1, 400])",
                         "Linear\toutput shape:\ttorch.Size([1, 10])" }) do
      assert.truthy(has(out, l), l .. "\n" .. out)
    end
    assert.truthy(out:find("training on cuda:0.-examples/sec on cuda:0"), out)
    -- step 8's 2 epochs over all 60000 images leave chance (0.1) behind (issue 34)
    local train_acc = out:match("loss %d%.%d+, train acc (%d%.%d+), test acc")
    if not SANITIZED then assert.is_true(tonumber(train_acc) > 0.3, out) end
    assert.truthy(out:find("training on cpu.-examples/sec on cpu.-training on cuda:0"), out)
    -- warn mode named each wait on stderr; error mode raised at the first one
    assert.truthy(count(err, "[sync debug]") >= 2, err)
    assert.truthy(has(err, "torch.cuda.set_sync_debug_mode is 'error'") or has(out, "set_sync_debug_mode is 'error'"),
      out .. err)
  end)

  lesson_it("resumed at the profiler step in a new session, its setup makes the data, the subset and the net", function()
    local out, err, code, state = lenet_from(10, {
      "p = torch.profiler.profile(function() d2l.train_ch6(net, train_small, test_small, 1, 0.9, device) end)",
    })
    assert.are.equal(0, code, err)
    assert.truthy(has(out, "Resuming at step 10"), out)
    -- one load makes both loaders (issue 34: it used to read the data set twice)
    assert.truthy(has(out, "(made what this step builds on: train_iter, test_iter = d2l.load_data_fashion_mnist(256); "),
      out)
    assert.are.equal(1, count(out, "load_data_fashion_mnist"), out)
    for _, name in ipairs({ "train_small = take(train_iter, 4)", "test_small = take(test_iter, 2)",
                            "device = try_gpu()", "net = nn.Sequential(" }) do
      assert.truthy(has(out, name), name .. "\n" .. out)
    end
    assert.truthy(has(out, "training on cuda:0"), out)
    assert.truthy(has(out, "Step 11 of 16"), out)
    assert.are.equal("lenet\t11\n", state)
  end)

  lesson_it("every step's setup works in a new session: resumed anywhere, nothing is missing", function()
    for at = 2, 16 do
      local out, err, code = lenet_from(at, { "" })
      assert.are.equal(0, code, err)
      assert.truthy(has(out, "Resuming at step " .. at .. " "), out)
      assert.falsy(has(out, "could not make"), out)
      assert.falsy(has(out, "setup failed"), out)
    end
  end)

  lesson_it("resumed at 'Look at it', X and y are made from one batch and the labels check passes", function()
    local out, err, code, state = lenet_from(3, {
      "labels = d2l.get_fashion_mnist_labels(y[{{1, 8}}]); d2l.show_images(X[{{1, 8}}]:reshape(8, 28, 28), 2, 4, {titles = labels})",
    })
    assert.are.equal(0, code, err)
    assert.truthy(has(out, "(made what this step builds on: X, y = table.unpack(train_iter:iter()()))"), out)
    assert.truthy(has(out, "Step 4 of 16"), out)
    assert.are.equal("lenet\t4\n", state)
  end)

  lesson_it("the loop that counts on the GPU: a wrong count's hint, and a loop run without 'error' is not enough", function()
    local out, err, code, state = lenet_from(15, {
      "correct = torch.zeros({}, {device = device}); torch.no_grad(function() for _, b in ipairs(test_gpu) do correct = correct + net(b[1]):argmax(2):eq(b[2]):sum() end end); acc_gpu = correct:item() / 512",
      "torch.cuda.set_sync_debug_mode('error'); correct = correct:cpu()",
      "torch.cuda.set_sync_debug_mode('default')",
    })
    assert.are.equal(0, code, err)
    assert.truthy(has(out, "✗ Not yet: run the loop with torch.cuda.set_sync_debug_mode('error') on"), out)
    -- a copy to the host under 'error' fails: correct stays on the GPU and the step is not passed
    assert.truthy(has(out .. err, "cpu() waits for the GPU"), out .. err)
    assert.falsy(has(out, "Step 16 of 16"), out)
    assert.are.equal("lenet\t15\n", state)
  end)
end)

describe("the lenet lesson at a terminal", function()
  lesson_it("its first steps: show_images draws the images in half-blocks", function()
    local dir = R.tmpdir()
    local out, ok = R.pty({
      { expect = "Step 1 of 16" }, { expect = "gshell> " },
      { send = "train_iter, test_iter = d2l.load_data_fashion_mnist(256)\r" },
      { expect = "Step 2 of 16", timeout = 60 }, { expect = "gshell> " },
      { send = "X, y = table.unpack(train_iter:iter()())\r" },
      { expect = "Step 3 of 16", timeout = 60 }, { expect = "gshell> " },
      { send = "labels = d2l.get_fashion_mnist_labels(y[{{1, 8}}]); d2l.show_images(X[{{1, 8}}]:reshape(8, 28, 28), 2, 4, {titles = labels})\r" },
      { expect = "Step 4 of 16", timeout = 60 }, { expect = "gshell> " },
      { send = "\4" },
    }, { "--lesson", "lenet", "--restart" }, { GSHELL_LESSON_STATE = dir .. "/state" })
    os.execute("rm -rf " .. R.quote(dir))
    assert.is_true(ok, out)
    -- grey levels: half-blocks with colours, shades without (as in this pty)
    assert.truthy(has(out, "▀") or has(out, "▓"), out)
    assert.falsy(has(out, "show_images: 8 images"), out)  -- the summary line is for output that is not a terminal
  end)
end)
