-- The CPU kernels' instruction set (issue 32): each hand-written kernel
-- has a baseline, an AVX2 and an AVX-512 copy, chosen at start-up from the
-- CPU and GSHELL_CPU_ISA, named by torch.backends.cpu.get_cpu_capability()
-- and switched by set_cpu_capability. Every copy this machine can run
-- must give the baseline's results bit for bit (an AVX-512 machine runs
-- the AVX512 copy in the same spec; an AVX2 one the other two).
local torch = require("torch")
local H = require("helpers")

local cpu = torch.backends.cpu
local ORDER = { "DEFAULT", "AVX2", "AVX512" }

-- the capabilities this CPU runs, baseline first
local function runnable()
  local list = {}
  for _, c in ipairs(ORDER) do
    list[#list + 1] = c
    if c == cpu.max_cpu_capability() then break end
  end
  return list
end

local function same(a, b, what)
  assert.are.same(H.shape(a), H.shape(b), what)
  assert.are.equal(a.dtype, b.dtype, what)
  -- equal and both NaN or not: element for element, exactly
  local eq = torch.eq(a, b):logical_or(torch.ne(a, a):logical_and(torch.ne(b, b)))
  assert.is_true(eq:all():item(), what)
end

-- the kernels each copy covers: elementwise (fast exp, sigmoid, the binary
-- loops and their broadcast paths), the reductions' pairwise trees (whole,
-- along rows, down columns), max/min with positions, the random numbers,
-- a 3x3 convolution through the Winograd transforms, a 5x5 one through
-- im2col and col2im, pooling, batch norm, resizing, softmax, forward and back
local function workload()
  torch.manual_seed(7)
  local x = torch.randn(331, 307) * 10
  local y = torch.rand(331, 307)
  local r = {}
  r.rand, r.randn = y, x
  r.exp, r.sigmoid, r.tanh, r.relu = x:exp(), x:sigmoid(), x:tanh(), x:relu()
  r.add, r.mul, r.div, r.sub_row = x + y, x * y, x / (y + 1), x - y[1]
  r.max2 = torch.maximum(x, y)
  r.x64 = x:double():exp() + y:double()
  r.sum, r.sum_rows, r.sum_cols = x:sum(), x:sum(2), x:sum(1)
  r.sum64_cols = x:double():sum(1)
  r.softmax_cols, r.logsoftmax_rows = x:softmax(1), x:log_softmax(2)
  r.mean = y:mean()
  local mx, imx = x:max(2)
  local mn, imn = x:min(1)
  r.max, r.imax, r.min, r.imin, r.amax = mx, imx, mn, imn, x:max()
  local ix = torch.randint(-1000, 1000, { 4099 })
  r.imaxall, r.iabs = ix:max(), ix:abs()
  local inp = torch.randn(2, 8, 10, 10):requires_grad_(true)
  local w = torch.randn(16, 8, 3, 3):requires_grad_(true)
  local prev = torch._conv_winograd(2)
  local out = torch.nn.functional.conv2d(inp, w, { padding = 1 })
  out:sum():backward()
  torch._conv_winograd(prev)
  r.conv, r.conv_gin, r.conv_gw = out:detach(), inp.grad, w.grad
  -- LeNet's second layer's shape, small: im2col and col2im, forward and back
  local F = torch.nn.functional
  local x5 = torch.randn(3, 6, 14, 14):requires_grad_(true)
  local w5 = torch.randn(16, 6, 5, 5):requires_grad_(true)
  local y5 = F.conv2d(x5, w5, { padding = 1 })
  -- 2x2 max pooling (its own loop), 3x3 average pooling, batch norm,
  -- bilinear resizing: forward and back
  local p1 = F.max_pool2d(y5, 2)
  local p2 = F.avg_pool2d(y5, 3, { stride = 2, padding = 1 })
  local bn = F.batch_norm(y5, nil, nil, { training = true })
  local up = F.interpolate(y5, { scale_factor = 1.5, mode = "bilinear" })
  local sm = y5:view(3, -1):softmax(2)
  ;(p1:sum() + (p2 * p2):sum() + (bn * bn):sum() + up:sum() + (sm * sm):sum()):backward()
  r.conv5, r.conv5_gx, r.conv5_gw = y5:detach(), x5.grad, w5.grad
  r.maxpool, r.avgpool, r.bn, r.up, r.softmax = p1:detach(), p2:detach(), bn:detach(), up:detach(), sm:detach()
  return r
end

describe("torch.backends.cpu: the kernels' instruction set", function()
  local start
  before_each(function() start = cpu.get_cpu_capability() end)
  after_each(function() cpu.set_cpu_capability(start) end)

  it("names the one in use as PyTorch does, the best this CPU has by default", function()
    local c = cpu.get_cpu_capability()
    assert.truthy(c == "DEFAULT" or c == "AVX2" or c == "AVX512", c)
    if os.getenv("GSHELL_CPU_ISA") == nil then assert.are.equal(cpu.max_cpu_capability(), c) end
    -- and it follows the CPU's flags: AVX2 (with FMA, BMI2) gives at least
    -- AVX2, no avx512f never AVX512
    local f = io.open("/proc/cpuinfo")
    local flags = f and f:read("a"):match("\nflags%s*:([^\n]*)")
    if f then f:close() end
    if flags and flags:find(" avx2 ") and flags:find(" fma ") and flags:find(" bmi2 ") then
      assert.are_not.equal("DEFAULT", cpu.max_cpu_capability())
    end
    if flags and not flags:find(" avx512f ") then assert.are_not.equal("AVX512", cpu.max_cpu_capability()) end
  end)

  it("every copy this CPU runs gives the baseline's results bit for bit", function()
    local list = runnable()
    cpu.set_cpu_capability("default")
    assert.are.equal("DEFAULT", cpu.get_cpu_capability())
    local base = workload()
    for i = 2, #list do
      cpu.set_cpu_capability(list[i])
      assert.are.equal(list[i], cpu.get_cpu_capability())
      local got = workload()
      for k, v in pairs(base) do
        if torch.is_tensor(v) then same(got[k], v, list[i] .. ": " .. k)
        else assert.are.equal(v, got[k], list[i] .. ": " .. k) end
      end
    end
  end)

  it("a level the CPU lacks or an unknown name is a clear error, and nothing changes", function()
    local before = cpu.get_cpu_capability()
    if cpu.max_cpu_capability() ~= "AVX512" then
      H.errors(function() cpu.set_cpu_capability("avx512") end, { "this CPU has no AVX512", "the best it runs is" })
    end
    H.errors(function() cpu.set_cpu_capability("sse9") end, { 'expected "default", "avx2" or "avx512", got "sse9"' })
    H.errors(function() cpu.set_cpu_capability(2) end, { "wants", "got" })
    assert.are.equal(before, cpu.get_cpu_capability())
  end)

  it("GSHELL_CPU_ISA picks one at start-up; one the CPU lacks warns and falls back", function()
    local code = 'local torch = require("torch"); print("cap=" .. torch.backends.cpu.get_cpu_capability())'
    local out = H.run_lua(code, { GSHELL_CPU_ISA = "baseline" })
    assert.truthy(out:find("cap=DEFAULT", 1, true), out)
    out = H.run_lua(code, { GSHELL_CPU_ISA = "nonsense" })
    assert.truthy(out:find("GSHELL_CPU_ISA=nonsense is not an instruction set gshell knows (expected baseline, avx2 or avx512)", 1, true), out)
    assert.truthy(out:find("cap=" .. cpu.max_cpu_capability(), 1, true), out)
    if cpu.max_cpu_capability() ~= "AVX512" then
      out = H.run_lua(code, { GSHELL_CPU_ISA = "avx512" })
      assert.truthy(out:find("GSHELL_CPU_ISA=avx512: this CPU has no AVX512", 1, true), out)
      assert.truthy(out:find("cap=" .. cpu.max_cpu_capability(), 1, true), out)
    end
  end)
end)
