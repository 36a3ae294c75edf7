-- device_errors_spec.lua: errors that a GPU kernel finds in the data (an
-- integer division by zero, an index out of range, a bad class index) do
-- not stop the host at the op: they are recorded on the device and
-- reported at the next synchronisation -- a copy to the host (print,
-- item, tolist, :cpu()) or torch.cuda.synchronize() -- naming the op, and
-- the device stays usable (src/core/gs_devflag.h). Simulated GPUs follow the
-- same rule as real ones; the CPU reports the same errors at once.
local torch = require("torch")
local cuda = torch.cuda
local H = require("helpers")

local saved_n, saved_cap
local function gc() collectgarbage(); collectgarbage() end
local err = H.error_message
local function long(t, dev) return torch.tensor(t, { dtype = torch.int64, device = dev }) end
-- the copies to the host f makes (a hidden synchronisation is one)
local function d2h(f)
  cuda.reset_transfers()
  f()
  return cuda.transfers().d2h.count
end

describe("errors found by device kernels", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() gc(); torch._sim_configure(saved_n, saved_cap) end)
  before_each(function() gc(); torch._sim_configure(2) end)

  it("integer // by a zero element: no wait at the op, ZeroDivisionError naming floor_divide at the next copy", function()
    local a, b = long({ 5, 6 }, "cuda:0"), long({ 1, 0 }, "cuda:0")
    local c
    assert.are.equal(0, d2h(function() c = a // b end)) -- the op neither fails nor waits
    assert.are.equal("floor_divide on cuda:0 found an error in its data: ZeroDivisionError: integer division or "
      .. "modulo by zero (the op was queued earlier: GPU kernels report such errors at the next synchronisation, "
      .. "and that op's result is undefined)", err(function() return c:tolist() end))
    -- reported once; the device goes on working (c itself stays marked:
    -- see "results of faulty work" below)
    assert.are.same({ 5, 6 }, (a // long({ 1, 1 }, "cuda:0")):tolist())
  end)

  it("integer % by a zero element names remainder, and torch.cuda.synchronize() reports it too", function()
    local r = long({ 7, 8 }, "cuda:1"):remainder(long({ 0, 3 }, "cuda:1"))
    assert.matches("^remainder on cuda:1 found an error in its data: ZeroDivisionError", err(cuda.synchronize))
    cuda.synchronize() -- cleared
    assert.are.equal(2, long({ 8 }, "cuda:1"):remainder(long({ 3 }, "cuda:1")):item())
    assert.matches("^this tensor holds the undefined result", err(function() return r[2]:item() end))
  end)

  it("an in-place // by a zero element is reported at the next synchronisation as well", function()
    local a = long({ 5, 6 }, "cuda:0")
    a:floor_divide_(long({ 0, 2 }, "cuda:0"))
    assert.matches("^floor_divide on cuda:0 found an error in its data: ZeroDivisionError", err(cuda.synchronize, 0))
  end)

  it("a Lua number divisor 0 is refused at once, on every device", function()
    for _, dev in ipairs({ "cpu", "cuda:0" }) do
      local a = long({ 5, 6 }, dev)
      assert.are.equal("ZeroDivisionError: integer division or modulo by zero", err(function() return a // 0 end))
      assert.are.equal("ZeroDivisionError: integer division or modulo by zero", err(function() return a % 0 end))
      assert.are.equal("ZeroDivisionError: integer division or modulo by zero", err(function() a:remainder_(0) end))
      assert.are.same({ 5, 6 }, a:tolist())
    end
    cuda.synchronize() -- nothing was left on the device
  end)

  it("index_select with an index out of range: reported at the next copy, with the CPU's words", function()
    local x, idx = torch.arange(12):reshape(4, 3):float(), long({ 0, 8, 1 })
    local cpu_msg = err(function() return x:index_select(1, idx + 1) end)
    assert.are.equal("index 9 is out of bounds for dimension 1 with size 4 (valid: 1 to 4)", cpu_msg)
    local gx, gi = x:cuda(1), (idx + 1):cuda(1)
    local y
    assert.are.equal(0, d2h(function() y = gx:index_select(1, gi) end))
    assert.are.equal("index_select on cuda:1 found an error in its data: " .. cpu_msg,
      err(function() return y:cpu() end):match("^(.-) %(the op"))
    -- the good rows are fine afterwards
    H.assert_list_equal(gx:index_select(2, long({ 3, 1 }, "cuda:1")):tolist(), { { 2.0, 0.0 }, { 5.0, 3.0 }, { 8.0, 6.0 }, { 11.0, 9.0 } })
  end)

  it("errors are per device: another device's copies do not report them", function()
    local _ = long({ 1 }, "cuda:1") // long({ 0 }, "cuda:1")
    assert.are.same({ 1 }, long({ 1 }, "cuda:0"):tolist())
    assert.matches("^floor_divide on cuda:1 found", err(function() return long({ 2 }, "cuda:1"):item() end))
  end)

  it("the first error is the one reported", function()
    local x = torch.ones(3, { device = "cuda:0" })
    local _ = x:index_select(1, long({ 7 }, "cuda:0"))
    local _ = long({ 1 }, "cuda:0") // long({ 0 }, "cuda:0")
    assert.matches("^index_select on cuda:0 found an error in its data: index 7 ", err(cuda.synchronize))
    cuda.synchronize()
  end)

  it("nll_loss checks its targets without reading them back, and reports a bad one at the next copy", function()
    local lp = torch.zeros(2, 3, { device = "cuda:0" })
    local loss
    assert.are.equal(0, d2h(function() loss = torch.nll_loss(lp, long({ 1, 3 }, "cuda:0")) end))
    assert.are.equal(0.0, loss:item())
    assert.are.equal(0, d2h(function() loss = torch.nll_loss(lp, long({ 1, 4 }, "cuda:0")) end))
    assert.matches("^nll_loss on cuda:0 found an error in its data: Target 4 is out of bounds: class indices must be in 1%.%.3",
      err(function() return loss:item() end))
    -- the CPU says the same at once
    assert.are.equal("Target 0 is out of bounds: class indices must be in 1..3",
      err(torch.nll_loss, torch.zeros(2, 3), long({ 0, 1 })))
  end)

  it("CrossEntropyLoss on a GPU does not wait for its targets either", function()
    local logits = torch.randn(4, 3, { device = "cuda:1" })
    local n
    n = d2h(function() local _ = torch.nn.CrossEntropyLoss()(logits, long({ 1, 2, 3, 1 }, "cuda:1")) end)
    assert.are.equal(0, n)
    local bad = torch.nn.CrossEntropyLoss()(logits, long({ 1, 2, 9, 1 }, "cuda:1"))
    assert.matches("^nll_loss on cuda:1 found an error in its data: Target 9 is out of bounds", err(function() return bad:item() end))
  end)
end)

-- Issue 22 item 1: the values faulty work left are never shown as if they
-- were good. The device error is reported once, by whichever call waits
-- first; after that every read of a tensor that work wrote, or of one
-- computed from it, raises again (as every read fails after a sticky CUDA
-- error), naming the first error.
describe("results of faulty work", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() gc(); torch._sim_configure(saved_n, saved_cap) end)
  before_each(function() gc(); torch._sim_configure(2) end)

  local function bad_loss(dev, requires_grad)
    local logits = torch.tensor({ { 1.0, 2, 3 }, { 1, 2, 3 }, { 3, 2, 1 }, { 1, 1, 1 } },
      { device = dev, requires_grad = requires_grad })
    local target = long({ 0, 1, 2, 0 }, dev) -- 0-based: out of 1..3
    return torch.nn.CrossEntropyLoss()(logits, target), logits, target
  end
  local FIRST = "^nll_loss on cuda:0 found an error in its data: Target 0 is out of bounds: class indices must be in 1%.%.3"
  local AGAIN = "^this tensor holds the undefined result of work that failed %(reported before%): nll_loss on "
    .. "cuda:0 found an error in its data: Target 0 is out of bounds"

  local reads = {
    ["tostring"] = function(x) return tostring(x) end,
    ["item()"] = function(x) return x:item() end,
    ["tolist()"] = function(x) return x:tolist() end,
    [":cpu()"] = function(x) return x:cpu() end,
    ["a copy to another device, read"] = function(x) return x:cuda(1):item() end,
  }
  for name, read in pairs(reads) do
    it("the first " .. name .. " raises the device error, and every later read raises again", function()
      local l = bad_loss("cuda:0")
      assert.matches(FIRST, err(function() return read(l) end))
      for other, again in pairs(reads) do
        assert.matches(AGAIN, err(function() return again(l) end), 1, false, other)
      end
      -- a tensor computed from it is marked too, on its device or another
      assert.matches(AGAIN, err(function() return (l * 2 + 1):item() end))
      assert.matches(AGAIN, err(function() return (l:cuda(1) + 1):item() end))
      -- the device goes on working, and good tensors read as before
      assert.are.equal(6, (torch.ones(3, { device = "cuda:0" }) * 2):sum():item())
    end)
  end

  it("the targets stay readable; the gradients computed from the bad loss are marked", function()
    local l, logits, target = bad_loss("cuda:0", true)
    l:backward()
    assert.matches(FIRST, err(function() return logits.grad:sum():item() end))
    assert.matches(AGAIN, err(function() return tostring(logits.grad) end))
    assert.are.same({ 0, 1, 2, 0 }, target:tolist())
    assert.are.same({ 1, 2, 3 }, logits[1]:tolist())
  end)

  it("index_select's and //'s outputs are marked; a good result on the same device is not", function()
    local y = torch.ones(3, { device = "cuda:0" }):index_select(1, long({ 7 }, "cuda:0"))
    local ok = torch.arange(1, 4, { device = "cuda:0" }) * 2
    assert.matches("^index_select on cuda:0 found", err(cuda.synchronize))
    assert.are.same({ 2, 4, 6 }, ok:tolist())
    assert.matches("^this tensor holds the undefined result of work that failed %(reported before%): "
      .. "index_select on cuda:0", err(function() return y:tolist() end))
    local q = long({ 4 }, "cuda:1") // long({ 0 }, "cuda:1")
    assert.matches("^floor_divide on cuda:1", err(function() return q:item() end))
    assert.matches("^this tensor holds", err(function() return q:item() end))
  end)
end)

describe("results of faulty work in the shell", function()
  local R = require("gshell_run")
  local SETUP = "logits = torch.tensor({{1.0, 2, 3}, {1, 2, 3}, {3, 2, 1}, {1, 1, 1}}, {device = 'cuda:0'}); "
    .. "l = nn.CrossEntropyLoss()(logits, torch.tensor({0, 1, 2, 0}, {device = 'cuda:0'}))"
  local FIRST = "nll_loss on cuda:0 found an error in its data: Target 0 is out of bounds: class indices must be in 1..3"
  local AGAIN = "this tensor holds the undefined result of work that failed (reported before): " .. FIRST
  local function count(s, sub)
    local n, at = 0, 1
    while true do
      local i = s:find(sub, at, true)
      if not i then return n end
      n, at = n + 1, i + #sub
    end
  end

  it("at the prompt, the display of `l` raises the device error, then every later look raises again", function()
    local out, err, code = R.prompt({ SETUP, "l", "l", "print(l)", "l:item()", "{l}", "%tb", "print('alive', 1 + 1)" },
      { "--sim-gpus", "1" })
    assert.are.equal(0, code, err)
    local all = out .. err
    assert.is_nil(all:find("__tostring failed", 1, true), all)
    assert.is_nil(all:find("device='cuda:0')", 1, true), all) -- the undefined value is never shown
    -- reported once as itself (and %tb shows that traceback again)...
    assert.truthy(err:find(FIRST, 1, true), err)
    assert.is_true(count(all, FIRST) - count(all, AGAIN) >= 1, all)
    -- l, print(l), l:item(), {l}: each raises again
    assert.is_true(count(err, AGAIN) >= 4, err)
    assert.truthy(out:find("alive\t2", 1, true), out)
  end)

  it("at a real prompt (pty): the first display raises the error, the second raises again", function()
    local out, ok = R.pty({
      { expect = "gshell> " },
      { send = SETUP .. "\r" },
      { expect = "gshell> " },
      { send = "l\r" },
      { expect = "Target 0 is out of bounds" },
      { expect = "gshell> " },
      { send = "l\r" },
      { expect = "reported before" },
      { expect = "gshell> " },
      { send = "\4" },
    }, { "--sim-gpus", "1" })
    assert.is_true(ok, out)
    assert.is_nil(out:find("__tostring failed", 1, true), out)
    assert.is_nil(out:find("device='cuda:0')", 1, true), out)
  end)

  it("in a script: print(l) raises the device error and ends the script with status 1", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/s.lua", SETUP .. "\nprint(pcall(print, l))\nprint(l)\nprint('not reached')\n")
    local out, err, code = R.run({ "--sim-gpus", "1", dir .. "/s.lua" }, "")
    assert.are.equal(1, code)
    assert.truthy(out:find("false\t" .. FIRST, 1, true), out)
    assert.truthy(err:find(AGAIN, 1, true), err)
    assert.is_nil(out:find("not reached", 1, true), out)
  end)

  it("in a --notebook cell ending in `l`: the cell fails with the device error, the next shows it again", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/nb.lua", SETUP .. "\n-- %%\nl\n-- %%\nl\n-- %%\nprint('after', 2 + 2)\n")
    local out, err = R.run({ "--sim-gpus", "1", "--notebook", dir .. "/nb.lua", "--md", dir .. "/nb.md" }, "")
    local md = R.read_file(dir .. "/nb.md") or ""
    assert.truthy(md:find(FIRST, 1, true), md .. out .. err)
    assert.truthy(md:find(AGAIN, 1, true), md)
    assert.is_nil(md:find("device='cuda:0')", 1, true), md)
    assert.is_nil(md:find("__tostring failed", 1, true), md)
    assert.truthy(md:find("after\t4", 1, true), md)
  end)
end)
