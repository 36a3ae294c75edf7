-- interrupt_spec.lua: Ctrl-C inside the engine. The shell's SIGINT handler
-- sets a flag; long loops (elementwise, copies, fills, reductions, softmax,
-- random draws, matrix products) poll it between blocks of work and stop
-- with "interrupted!", leaving every tensor valid. torch._interrupt_in(s)
-- stands in for the signal: it sets the flag s seconds later from another
-- thread (0: now).
local torch = require("torch")
local H = require("helpers")

local BIG = 1 << 22 -- well above the size where ops use the thread pool

-- Waits for a flag still on its way and consumes it with a big op, so no
-- test leaves it set for the next.
local function drain()
  while not torch._interrupt_pending() do end
  pcall(function() return torch.ones(BIG) + 1 end)
  assert.is_false(torch._interrupt_pending())
end

describe("Ctrl-C inside the engine", function()
  it("stops a big op before it writes, consumes the flag, and leaves its inputs as they were", function()
    local x = torch.arange(BIG, { dtype = torch.float64 })
    local total = (BIG - 1) * BIG / 2
    torch._interrupt_in(0)
    H.errors(function() return x * 2 end, "interrupted!")
    assert.is_false(torch._interrupt_pending()) -- consumed: the shell raises no second error
    assert.are.equal(total, x:sum():item())
    assert.are.equal(2 * total, (x * 2):sum():item()) -- the next op runs normally
  end)

  it("every kind of long loop polls", function()
    local x = torch.rand(BIG)
    local ints = torch.randint(1, 100, { BIG })
    local m = torch.rand(2048, 2048)
    local loops = {
      unary = function() return x:exp() end,
      binary = function() return x + x end,
      ["integer division (serial)"] = function() return ints // 7 end,
      ["copy (cast)"] = function() return x:double() end,
      ["copy (strided)"] = function() return x:view(2048, 2048):t():contiguous() end,
      ["fill (a new tensor)"] = function() return torch.full({ BIG }, 3) end,
      ["random draw"] = function() return torch.rand(BIG) end,
      ["whole sum"] = function() return x:sum() end,
      ["sum along a dim"] = function() return x:view(2048, 2048):sum(2) end,
      ["max along a dim"] = function() return x:view(2048, 2048):max(1) end,
      softmax = function() return x:view(2048, 2048):softmax(2) end,
      matmul = function() return m:matmul(m) end,
      ["batched matmul"] = function() return m:view(8, 512, 1024):bmm(m:view(8, 1024, 512)) end,
    }
    for name, f in pairs(loops) do
      torch._interrupt_in(0)
      local ok, err = pcall(f)
      assert(not ok, name .. " ran to the end despite the flag")
      assert(tostring(err):find("interrupted!", 1, true), name .. ": " .. tostring(err))
      assert.is_false(torch._interrupt_pending(), name)
    end
  end)

  it("small ops never look at the flag", function()
    torch._interrupt_in(0)
    local y = torch.ones(1000) * 3 + 1
    local s = y:sum()
    local p = torch.ones(8, 8):matmul(torch.ones(8, 8))
    assert.is_true(torch._interrupt_pending())
    assert.are.equal(4000, s:item())
    assert.are.equal(8, p[{ 1, 1 }]:item())
    drain()
  end)

  it("stops an op that is already running", function()
    -- the flag arrives from another thread while the op runs; only polling
    -- inside the op can notice it (tried a few times on a busy machine)
    local cases = {
      { "matmul", torch.rand(2048, 2048), function(a) return a:matmul(a) end, 0.02 },
      { "elementwise", torch.rand(1 << 24), function(a) return a:exp() end, 0.003 },
    }
    for _, c in ipairs(cases) do
      local before = c[2]:sum():item()
      local stopped = false
      for _ = 1, 5 do
        torch._interrupt_in(c[4])
        local ok, err = pcall(c[3], c[2])
        if not ok then
          assert.matches("interrupted!", tostring(err), nil, true)
          stopped = true
          break
        end
        drain() -- it finished first; let the flag land and clear it
      end
      assert(stopped, c[1] .. " never noticed the flag set while it ran")
      assert.is_false(torch._interrupt_pending())
      assert.are.equal(before, c[2]:sum():item()) -- input intact
    end
  end)

  it("in-place writes into the user's tensors finish; the next op reports the interrupt", function()
    local x = torch.ones(BIG)
    local y = torch.full({ BIG }, 2.0)
    torch._interrupt_in(0)
    x:mul_(3)
    x:add_(y)
    x:exp_():log_()
    y:copy_(x)
    y[{ { 1, BIG // 2 } }] = 7
    x:clamp_(0, 100)
    assert.is_true(torch._interrupt_pending())
    H.errors(function() return x + 1 end, "interrupted!")
    H.assert_close(x:sum():item(), 5 * BIG, 1e-6)
    assert.are.equal(7 * (BIG // 2) + 5 * (BIG // 2), y:sum():item())
  end)

  it("gradients accumulate fully into .grad", function()
    local w = torch.ones(BIG, { requires_grad = true })
    ;(w * 2):sum():backward()
    local loss = (w * 3):sum()
    torch._interrupt_in(0)
    local ok = pcall(function() loss:backward() end)
    if torch._interrupt_pending() then drain() end
    -- either the backward stopped before touching .grad or it summed all of it
    local g = w.grad:sum():item()
    assert(g == 2 * BIG or g == 5 * BIG, "partial .grad: " .. g .. (ok and " (backward ran)" or ""))
  end)
end)

describe("Ctrl-C in the shell", function()
  local GSHELL = (os.getenv("GSHELL_BUILD") or "build") .. "/gshell"

  it("a real SIGINT stops one long matrix product; the error can be caught and the session goes on", function()
    -- the product takes seconds; the signal comes 0.3 s in. Without polling
    -- inside the engine the error would only be raised after it, outside
    -- the pcall, and the script would die before printing.
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
      local pid = assert(io.open("/proc/self/stat")):read("n")
      local a = torch.rand(6144, 6144)
      os.execute("(sleep 0.3; kill -INT " .. pid .. ") &")
      local ok, err = pcall(a.matmul, a, a)
      print(ok, err)
      print("after", (torch.ones(3) + 1):sum():item())
    ]])
    f:close()
    local p = assert(io.popen("GSHELL_HISTORY= GSHELL_SIM_GPUS= " .. GSHELL .. " " .. script .. " 2>&1", "r"))
    local out = p:read("a")
    local _, _, code = p:close()
    os.remove(script)
    assert.matches("^false\t[^\n]*interrupted!\nafter\t6%.0?\n$", out)
    assert.are.equal(0, code)
  end)
end)
