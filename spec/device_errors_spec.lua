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
    -- reported once; the device goes on working
    assert.are.same({ 5, 6 }, c:tolist() and (a // long({ 1, 1 }, "cuda:0")):tolist())
  end)

  it("integer % by a zero element names remainder, and torch.cuda.synchronize() reports it too", function()
    local r = long({ 7, 8 }, "cuda:1"):remainder(long({ 0, 3 }, "cuda:1"))
    assert.matches("^remainder on cuda:1 found an error in its data: ZeroDivisionError", err(cuda.synchronize))
    cuda.synchronize() -- cleared
    assert.are.equal(2, r[2]:item())
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
