-- Lessons and notebooks that say why (issue 34, item 3): a plain `false`
-- from a check says "✗ Not yet", device names that can never match are
-- refused at load, a loop that failed half-way is named as what changed
-- X, sync-debug warnings name the call inside a d2l helper, a one-epoch
-- chart shows its points, and the words about simulated GPUs' speed.
-- (The notebook's rising chart: lenet_notebook_spec.lua; the lesson's
-- training and its one load on resume: lesson_lenet_spec.lua; the
-- profiler's host line: profiler_spec.lua.)
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end

local function lesson_file(text, lines)
  local dir = R.tmpdir()
  R.write_file(dir .. "/mini.lua", text)
  local out, err, code = R.run({ "--lesson", dir .. "/mini.lua", "--repl-stdin" }, table.concat(lines, "\n") .. "\n",
    { GSHELL_LESSON_STATE = dir .. "/state" })
  os.execute("rm -rf " .. R.quote(dir))
  return out, err, code
end

describe("a lesson author's check", function()
  it("returning plain false prints ✗ Not yet; false, nil stays quiet", function()
    local out = lesson_file([[
return { title = "mini", steps = {
  { task = "set a to 2", check = function(ctx)
      if ctx.env.quiet then return false, nil end
      return ctx.env.a == 2
    end },
} }]], { "a = 1", "quiet = true", "quiet = nil; a = 2" })
    local first = out:find("✗ Not yet.\n", 1, true)
    assert.truthy(first, out)
    -- once, for `a = 1`; the quiet cell says nothing
    assert.falsy(out:find("✗ Not yet", first + 1, true), out)
    assert.truthy(has(out, "✓"), out)
  end)

  it("an expectation about a device named other than cpu/cuda[:N] is refused at load", function()
    local out, err, code = lesson_file([[
return { title = "mini", steps = {
  { task = "t", expect = { { var = "c", device = "gpu0" } } },
} }]], { "c = 1" })
    local all = out .. err
    assert.truthy(has(all, "is \"gpu0\", not a device name: devices are named \"cpu\", \"cuda\" or \"cuda:N\""), all)
    assert.are_not.equal(0, code, all)
    local out2, err2 = lesson_file([[
return { title = "mini", steps = {
  { task = "t", expect = { { var = "c", device = { "cpu", "cuda:1", "cuda" } } } },
} }]], { "c = torch.ones(1)" })
    assert.truthy(has(out2, "✓"), out2 .. err2)
  end)
end)

describe("the lenet lesson", function()
  local function lenet_at(at, lines)
    local dir = R.tmpdir()
    R.write_file(dir .. "/state", "lenet\t" .. at .. "\n")
    local out, err, code = R.run({ "--lesson", "lenet", "--repl-stdin" }, table.concat(lines, "\n") .. "\n",
      { GSHELL_LESSON_STATE = dir .. "/state" })
    os.execute("rm -rf " .. R.quote(dir))
    return out, err, code
  end

  it("step 5: a loop that failed half-way changed X, and the lesson says so", function()
    local out, err = lenet_at(5, {
      "X = torch.rand(1, 1, 28, 28)",
      "for _, layer in ipairs(net) do X = layer(X); print(X.shape, nosuch.field) end",
      "for _, layer in ipairs(net) do X = layer(X); print(layer:_get_name(), 'output shape:', X.shape) end",
      "X = torch.rand(1, 1, 28, 28)",
      "for _, layer in ipairs(net) do X = layer(X); print(layer:_get_name(), 'output shape:', X.shape) end",
    })
    assert.truthy(has(out, "✗ Not yet: X was changed by the failed cell (it is now torch.Size([1, 6, 28, 28])); " ..
      "set it again, X = torch.rand(1, 1, 28, 28), then run the loop"), out .. err)
    assert.truthy(has(err, "to have 1 channels, but got 6 channels instead"), err)
    assert.truthy(has(out, "Step 6 of 16"), out)
  end)

  it("says why a simulated GPU can finish first, in the banner and at the last step", function()
    -- (the search path restored at once: busted runs every spec in one Lua)
    local saved = package.path
    package.path = "lua/?.lua;" .. saved
    local sim = require("gshell.sim_speed")
    package.path = saved
    local out = lenet_at(16, { "" })
    assert.truthy(has(out, sim.banner), out)
    assert.truthy(has(out, "the host only queues the\nwork, so it loads the next batch while the device computes"), out)
    assert.falsy(has(out, "not faster"), out)
  end)
end)

describe("sync debug warnings inside d2l helpers", function()
  it("name the helper and the call inside it that waited", function()
    local _, err = R.prompt({
      "te = {{torch.rand(4, 1, 28, 28), torch.randint(1, 11, {4})}}",
      "net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10)):to(try_gpu())",
      "torch.cuda.set_sync_debug_mode('warn')",
      "acc = d2l.evaluate_accuracy_gpu(net, te)",
      "x = torch.ones(2, {device = try_gpu()}); v = x:sum():item()",
    }, { "--sim-gpus", "1" })
    assert.truthy(has(err, "stdin:1: evaluate_accuracy_gpu() -> item() waits for the GPU"), err)
    assert.truthy(has(err, "stdin:1: evaluate_accuracy_gpu() -> to() waits for the GPU"), err)
    -- a call the user made directly stays one name
    assert.truthy(has(err, "stdin:1: item() waits for the GPU"), err)
  end)
end)

describe("train_ch6 for one epoch", function()
  it("draws its x axis from 0 to 1, so the points at 0.25 and 0.5 show", function()
    local out, err = R.prompt({
      "b = {torch.rand(8, 1, 28, 28), torch.randint(1, 11, {8})}",
      "ds = {b, b, b, b}",
      "net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))",
      "d2l.train_ch6(net, ds, ds, 1, 0.1, 'cpu')",
      "lo, hi = d2l.last_animator.chart:axis('x'); print('xaxis', lo, hi)",
      "d2l.train_ch6(net, ds, ds, 2, 0.1, 'cpu')",
      "lo, hi = d2l.last_animator.chart:axis('x'); print('xaxis', lo, hi)",
    })
    assert.truthy(has(out, "epoch 0.25: train loss"), out)
    assert.truthy(has(out, "xaxis\t0\t1"), out .. err)
    -- more epochs keep the book's {1, num_epochs}
    assert.truthy(has(out, "xaxis\t1\t2"), out .. err)
  end)
end)
