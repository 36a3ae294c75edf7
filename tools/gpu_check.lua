-- gpu_check.lua: runs every engine operation on a CUDA device and on the
-- CPU and compares the results, printing one PASS/FAIL line per check and
-- a summary. For a machine with a real GPU (the CUDA kernels cannot be
-- run where they are built); on simulated devices it checks the script.
--
--   build/gshell tools/gpu_check.lua [cuda:N] [--verbose] [--no-timing] [--only=WORD,WORD]
--   (--only: just the checks whose names contain one of the words, plain
--   text; tools/gpu_run.sh runs such a subset under compute-sanitizer)
--   LUA_CPATH='build/?.so;;' lua5.4 tools/gpu_check.lua
--   build/gshell --sim-gpus 2 tools/gpu_check.lua      (the script itself)
--
-- Exit status: 0 when everything passed, 1 on any failure, 2 when there
-- is no CUDA device. Written against the user API (/work/shared/API.md):
-- 1-based dims and indices, options tables, torch.cuda.*.

local torch = rawget(_G, "torch") or require("torch")
local nn = rawget(_G, "nn") or torch.nn

local args = rawget(_G, "arg") or {}
local dev, verbose, timing = "cuda:0", false, true
local only -- list of words (--only), nil: every check
for _, a in ipairs(args) do
  if a == "--verbose" or a == "-v" then verbose = true
  elseif a == "--no-timing" then timing = false
  elseif a:match("^%-%-only=") then
    only = {}
    for w in a:sub(8):gmatch("[^,]+") do only[#only + 1] = w end
  elseif a:match("^cuda") then dev = a end
end
local function selected(name)
  if not only then return true end
  for _, w in ipairs(only) do if name:find(w, 1, true) then return true end end
  return false
end

-- The CUDA libraries loaded so far (the driver, cuBLAS), one line each.
local function print_libraries()
  local libs = torch.cuda.libraries and torch.cuda.libraries() or {}
  if #libs == 0 then print("gpu_check: no CUDA library loaded") end
  for _, l in ipairs(libs) do print(("gpu_check: loaded %-7s %s"):format(l.name, l.path)) end
end

if torch.cuda.device_count() == 0 then
  print("gpu_check: no CUDA device is visible (torch.cuda.device_count() == 0); nothing to check.")
  print("gpu_check: reason: " .. tostring(torch.cuda.unavailable_reason()))
  print_libraries()
  print("  A driver older than the CUDA runtime gshell was built with also reads as no device")
  print("  (CUDA 13 needs driver 580 or newer): `nvidia-smi` shows the driver's version.")
  os.exit(2)
end

local ok_props, props = pcall(torch.cuda.get_device_properties, tonumber(dev:match(":(%d+)")) or 0)
print(("gpu_check on %s: %s%s"):format(dev, ok_props and props.name or "?",
  ok_props and props.simulated and " (simulated: CPU kernels)" or ""))

local passed, failed, skipped, infos = 0, 0, 0, {}
local failures = {}

-- Runs one check; fn raises an error (any value) to fail.
local function check(name, fn)
  if not selected(name) then return end
  local ok, err = pcall(fn)
  if ok then
    passed = passed + 1
    if verbose then print("PASS  " .. name) end
  else
    failed = failed + 1
    local msg = tostring(err):gsub("\n", " | ")
    failures[#failures + 1] = name
    print("FAIL  " .. name .. ": " .. msg)
  end
end

local function skip(name, why)
  if not selected(name) then return end
  skipped = skipped + 1
  print("SKIP  " .. name .. ": " .. why)
end

---------------------------------------------------------------- comparison

local function flatten(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t return out end
  for _, v in ipairs(t) do flatten(v, out) end
  return out
end

local function isnan(v) return type(v) == "number" and v ~= v end

-- The spacing of float16 (10 fraction bits) or bfloat16 (7) values near x:
-- the GPU may round an intermediate differently (a fused multiply-add, a
-- float32 step), which moves a half-precision result by one unit.
local function half_ulp(x, frac_bits, min_exp)
  local a = math.abs(x)
  if a == math.huge then return 0 end
  local e = a > 0 and math.floor(math.log(a, 2)) or min_exp -- 2^e <= a < 2^(e+1)
  if a > 0 and 2.0 ^ e > a then e = e - 1 elseif a > 0 and 2.0 ^ (e + 1) <= a then e = e + 1 end
  if e < min_exp then e = min_exp end -- subnormals share the smallest spacing
  return 2.0 ^ (e - frac_bits)
end
local HALF_ULP = {["torch.float16"] = {10, -14}, ["torch.bfloat16"] = {7, -126}}

-- Compares a CPU tensor with a device tensor: same shape and dtype, the
-- device one on the device, values equal (exact) or close (rtol/atol);
-- float16/bfloat16 without a tolerance within one unit of their precision;
-- NaN matches NaN, infinities must be equal.
local function expect_same(cpu, gpu, rtol, atol, what)
  what = what and (what .. ": ") or ""
  if not gpu.is_cuda then error(what .. "result is not on a CUDA device (" .. tostring(gpu.device) .. ")", 0) end
  if tostring(cpu.shape) ~= tostring(gpu.shape) then
    error(what .. "shape " .. tostring(gpu.shape) .. " ~= cpu " .. tostring(cpu.shape), 0)
  end
  if tostring(cpu.dtype) ~= tostring(gpu.dtype) then
    error(what .. "dtype " .. tostring(gpu.dtype) .. " ~= cpu " .. tostring(cpu.dtype), 0)
  end
  local g = gpu:cpu()
  local ulp = not (rtol or atol) and HALF_ULP[tostring(cpu.dtype)]
  if cpu:numel() > 20000 and not ulp then -- large: compare on the device side of the engine, no NaN expected
    local ok = (rtol or atol) and cpu:allclose(g, rtol or 0, atol or 0) or cpu:equal(g)
    if not ok then
      local d = (cpu:double() - g:double()):abs():max():item()
      error(("%svalues differ (max abs diff %.3g, rtol %s atol %s)"):format(what, d, rtol, atol), 0)
    end
    return
  end
  local a, b = flatten(cpu:tolist()), flatten(g:tolist())
  for i = 1, #a do
    local x, y = a[i], b[i]
    local same
    if isnan(x) or isnan(y) then same = isnan(x) and isnan(y)
    elseif x == y then same = true
    elseif ulp and type(x) == "number" and type(y) == "number" then
      same = math.abs(x - y) <= half_ulp(x, ulp[1], ulp[2]) -- one half-precision unit, not exact
    elseif type(x) ~= "number" or math.type(x) == "integer" or not (rtol or atol) then same = false
    else same = math.abs(x - y) <= (atol or 0) + (rtol or 0) * math.abs(x) end
    if not same then
      error(("%selement %d: cuda %s, cpu %s (rtol %s atol %s)"):format(what, i, tostring(y), tostring(x),
        tostring(rtol), tostring(atol)), 0)
    end
  end
end

local function expect(cond, msg) if not cond then error(msg, 0) end end

-- Calls fn(x...) on CPU tensors and on their device copies and compares.
local function same_op(fn, inputs, rtol, atol)
  local gin = {}
  for i, x in ipairs(inputs) do gin[i] = type(x) == "userdata" and x:to(dev) or x end
  local c1, c2 = fn(table.unpack(inputs))
  local g1, g2 = fn(table.unpack(gin))
  expect_same(c1, g1, rtol, atol)
  if c2 ~= nil then expect_same(c2, g2, rtol, atol, "second result") end
end

local F32 = {rtol = 2e-6, atol = 1e-6}
local F64 = {rtol = 1e-12, atol = 1e-12}
local function tol(dt) if dt == torch.float64 then return F64 end return F32 end

local DTYPES = {torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                torch.int16, torch.int8, torch.uint8, torch.bool}
local function dname(dt) return tostring(dt):gsub("^torch%.", "") end

torch.manual_seed(20240601)

---------------------------------------------------------------- cuBLAS's workspace (first: before any product)

-- cuBLAS's workspace comes from the caching allocator (cuda_blas.c), set
-- again after every cublasSetStream, which would otherwise put the handle
-- back on cuBLAS's own pool: the first float product grows memory_allocated
-- by exactly the workspace, 32 MiB on Hopper and newer, 8 MiB before.
if ok_props and props.simulated then
  skip("cuBLAS workspace taken from the cache", "simulated devices run products on the CPU (no cuBLAS)")
else
  check("cuBLAS workspace taken from the cache at the first product", function()
    local a, b = torch.randn(64, 64, {device = dev}), torch.randn(64, 64, {device = dev})
    torch.cuda.synchronize(dev)
    collectgarbage(); collectgarbage()
    local free0, total = torch.cuda.mem_get_info(dev)
    local before, reserved0 = torch.cuda.memory_allocated(dev), torch.cuda.memory_reserved(dev)
    local c = a:mm(b)
    torch.cuda.synchronize(dev)
    c = nil
    collectgarbage(); collectgarbage()
    local grew = torch.cuda.memory_allocated(dev) - before
    local want = (props.major >= 9 and 32 or 8) * 1048576
    -- information for the results: driver memory the product took outside
    -- the cache (the cuBLAS handle itself; a second workspace would show here)
    local free1 = torch.cuda.mem_get_info(dev)
    infos[#infos + 1] = ("first product: %.1f MiB allocated (workspace), %.1f MiB of driver memory outside the cache"):format(
      grew / 1048576, ((free0 - free1) - (torch.cuda.memory_reserved(dev) - reserved0)) / 1048576)
    expect(total > 0, "mem_get_info")
    expect(grew == want, ("memory_allocated grew by %d bytes at the first product, expected the %d-byte workspace"):format(
      grew, want))
  end)
end

---------------------------------------------------------------- transfers

check("transfer h2d/d2h round trip (float32, 1M)", function()
  local x = torch.randn(1000, 1000)
  expect_same(x, x:to(dev))
end)
check("transfer of a non-contiguous view", function()
  local x = torch.randn(30, 40)
  expect_same(x:t():contiguous(), x:t():to(dev))
end)
check("moving to the same device returns the same object", function()
  local g = torch.ones(3, {device = dev})
  expect(rawequal(g:to(dev), g), "x:to(its own device) made a copy")
end)
check("transfers are counted", function()
  torch.cuda.reset_transfers()
  local g = torch.ones(256):to(dev)
  local _ = g:cpu()
  local t = torch.cuda.transfers()
  expect(t.h2d.count >= 1 and t.d2h.count >= 1, "h2d/d2h counts did not move")
end)

---------------------------------------------------------------- dtype conversions

local base = torch.tensor({-300.7, -3.7, -1.5, -0.5, -0.0, 0.0, 0.25, 1.0, 2.5, 127.4, 255.6, 65504.0,
                           70000.5, 1e-8, 3.1e-5, 1 / 0, -1 / 0}, {dtype = torch.float64})
for _, s in ipairs(DTYPES) do
  for _, d in ipairs(DTYPES) do
    check(("convert %s -> %s"):format(dname(s), dname(d)), function()
      local xs = base:to(s)
      expect_same(xs:to(d), xs:to(dev):to(d))
    end)
  end
end
check("convert with NaN (float32 -> all)", function()
  local x = torch.tensor({0 / 0, 1.5, -2.5})
  for _, d in ipairs(DTYPES) do expect_same(x:to(d), x:to(dev):to(d), nil, nil, dname(d)) end
end)
check("convert while moving (x:to(dev, float16))", function()
  local x = torch.randn(50, 3)
  expect_same(x:to(torch.float16), x:to(dev, torch.float16))
end)

---------------------------------------------------------------- strided copies, fill, arange

check("strided copies (transpose, permute, narrow, select, expand)", function()
  local x = torch.randn(4, 5, 6)
  local g = x:to(dev)
  expect_same(x:transpose(1, 3):contiguous(), g:transpose(1, 3):contiguous(), nil, nil, "transpose")
  expect_same(x:permute(3, 1, 2):contiguous(), g:permute(3, 1, 2):contiguous(), nil, nil, "permute")
  expect_same(x:narrow(2, 2, 3):contiguous(), g:narrow(2, 2, 3):contiguous(), nil, nil, "narrow")
  expect_same(x:select(1, 2):contiguous(), g:select(1, 2):contiguous(), nil, nil, "select")
  local r = torch.randn(1, 6)
  expect_same(r:expand(5, 6):contiguous(), r:to(dev):expand(5, 6):contiguous(), nil, nil, "expand")
end)
check("copy_ into a strided destination, with conversion", function()
  local src = torch.randn(6, 5)
  local c, g = torch.zeros(5, 6, {dtype = torch.float64}), torch.zeros(5, 6, {dtype = torch.float64, device = dev})
  c:t():copy_(src)
  g:t():copy_(src:to(dev))
  expect_same(c, g)
end)
check("indexed assignment on the device", function()
  local c, g = torch.zeros(4, 5), torch.zeros(4, 5, {device = dev})
  c[{{}, 2}] = 7.5
  g[{{}, 2}] = 7.5
  c[{{2, 3}}] = torch.ones(2, 5)
  g[{{2, 3}}] = torch.ones(2, 5, {device = dev})
  expect_same(c, g)
end)
for _, dt in ipairs(DTYPES) do
  check("full/fill_/zero_ " .. dname(dt), function()
    local v = dt == torch.bool and 1 or 2.5
    expect_same(torch.full({3, 4}, v, {dtype = dt}), torch.full({3, 4}, v, {dtype = dt, device = dev}))
    local c, g = torch.zeros(5, 6, {dtype = dt}), torch.zeros(5, 6, {dtype = dt, device = dev})
    c:narrow(2, 2, 3):fill_(v)
    g:narrow(2, 2, 3):fill_(v)
    expect_same(c, g, nil, nil, "strided fill_")
    c:zero_()
    g:zero_()
    expect_same(c, g, nil, nil, "zero_")
  end)
end
check("arange, linspace, eye", function()
  expect_same(torch.arange(10), torch.arange(10, {device = dev}))
  expect_same(torch.arange(0, 1, 0.1), torch.arange(0, 1, 0.1, {device = dev}))
  expect_same(torch.arange(-5, 5, 0.5, {dtype = torch.float64}), torch.arange(-5, 5, 0.5, {dtype = torch.float64, device = dev}))
  expect_same(torch.arange(3, 40, 3, {dtype = torch.int32}), torch.arange(3, 40, 3, {dtype = torch.int32, device = dev}))
  expect_same(torch.arange(0, 2, 0.25, {dtype = torch.float16}), torch.arange(0, 2, 0.25, {dtype = torch.float16, device = dev}))
  expect_same(torch.linspace(-1, 1, 11), torch.linspace(-1, 1, 11, {device = dev}))
  expect_same(torch.eye(4, {dtype = torch.int64}), torch.eye(4, {dtype = torch.int64, device = dev}))
end)

---------------------------------------------------------------- unary

local UNARY = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "sin", "cos", "floor",
               "ceil", "round", "trunc", "sign", "reciprocal", "log1p", "expm1", "square", "logical_not", "erf"}
local POSITIVE = {log = true, sqrt = true, rsqrt = true, log1p = true, reciprocal = true}
for _, dt in ipairs({torch.float32, torch.float64}) do
  for _, op in ipairs(UNARY) do
    check(("unary %s %s"):format(op, dname(dt)), function()
      local x = torch.randn(257, 33, {dtype = dt}) * 3
      if POSITIVE[op] then x = x:abs() + 0.01 end
      local t = tol(dt)
      same_op(function(a) return a[op](a) end, {x}, t.rtol * 2, t.atol)
      same_op(function(a) return a:t()[op](a:t()) end, {x}, t.rtol * 2, t.atol) -- strided input
    end)
  end
  check("unary NaN/inf handling " .. dname(dt), function()
    local x = torch.tensor({0 / 0, 1 / 0, -1 / 0, -0.0, 0.5, -2.5, 2.5}, {dtype = dt})
    for _, op in ipairs({"relu", "sign", "abs", "neg", "floor", "ceil", "round", "trunc", "exp", "sigmoid", "tanh"}) do
      expect_same(x[op](x), x:to(dev)[op](x:to(dev)), 1e-6, 0, op)
    end
    expect_same(x:clamp(-1, 1), x:to(dev):clamp(-1, 1), nil, nil, "clamp")
    expect_same(x:clamp({min = 0}), x:to(dev):clamp({min = 0}), nil, nil, "clamp min only")
  end)
end
check("unary ops on int64", function()
  local x = torch.randint(-50, 50, {300})
  for _, op in ipairs({"neg", "abs", "relu", "sign", "square", "floor", "ceil", "round", "trunc", "logical_not"}) do
    expect_same(x[op](x), x:to(dev)[op](x:to(dev)), nil, nil, op)
  end
  expect_same(x:clamp(-10.5, 20.5), x:to(dev):clamp(-10.5, 20.5), nil, nil, "clamp")
  expect_same(x:exp(), x:to(dev):exp(), F32.rtol, F32.atol, "exp of int64 (float32 result)")
end)
check("unary in place (clamp_) and on float16", function()
  local x = torch.randn(100)
  local g = x:to(dev)
  x:clamp_(-0.5, 0.5)
  g:clamp_(-0.5, 0.5)
  expect_same(x, g)
  local h = torch.randn(64):half()
  expect_same(h:exp(), h:to(dev):exp(), nil, nil, "float16 exp")
end)

---------------------------------------------------------------- binary

local BINARY = {"add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum",
                "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"}
local function operands(dt, op)
  local a, b
  if dt == torch.int64 then
    a = torch.randint(-20, 20, {4, 1, 6})
    b = torch.randint(1, 6, {5, 6}) * (torch.randint(0, 2, {5, 6}) * 2 - 1) -- never 0
    if op == "pow" then a, b = torch.randint(-4, 5, {4, 1, 6}), torch.randint(0, 6, {5, 6}) end
  else
    a = torch.randn(4, 1, 6, {dtype = dt}) * 4
    b = torch.randn(5, 6, {dtype = dt}) * 2
    if op == "pow" then a = a:abs() + 0.1 end
    b[{1, 1}] = a[{1, 1, 1}]:item() -- an equal pair for the comparisons
  end
  return a, b
end
for _, dt in ipairs({torch.float32, torch.float64, torch.int64}) do
  for _, op in ipairs(BINARY) do
    check(("binary %s %s (broadcast, scalar, strided)"):format(op, dname(dt)), function()
      local a, b = operands(dt, op)
      local t = tol(dt)
      local rt = dt == torch.int64 and nil or t.rtol * 4
      local at = dt == torch.int64 and nil or t.atol
      same_op(function(x, y) return x[op](x, y) end, {a, b}, rt, at)
      same_op(function(x, y) return x:transpose(1, 3)[op](x:transpose(1, 3), y:t():unsqueeze(3)) end, {a, b}, rt, at)
      local s = dt == torch.int64 and 3 or 1.5
      same_op(function(x) return x[op](x, s) end, {a}, rt, at)
    end)
  end
end
check("binary maximum/minimum propagate NaN", function()
  local a = torch.tensor({0 / 0, 1, 0 / 0, -2})
  local b = torch.tensor({1, 0 / 0, 0 / 0, 3})
  same_op(function(x, y) return x:maximum(y), x:minimum(y) end, {a, b})
end)
check("operators + - * / // % ^ and in-place forms", function()
  local a, b = torch.randn(30, 40), torch.randn(40) + 3
  same_op(function(x, y) return x + y, x - y end, {a, b}, 1e-6, 1e-6)
  same_op(function(x, y) return x * y, x / y end, {a, b}, 1e-6, 1e-6)
  same_op(function(x, y) return x // y, x % y end, {a, b}, 1e-6, 1e-6)
  same_op(function(x) return x:abs() ^ 0.5, 2 - x end, {a}, 1e-6, 1e-6)
  same_op(function(x, y) local z = x:clone(); z:add_(y); z:mul_(2); z:sub_(y); z:div_(y); return z end, {a, b}, 1e-5, 1e-6)
end)
check("integer division by a Lua number 0 is refused at once", function()
  local a = torch.tensor({1, 2, 3})
  local ok, msg = pcall(function() return a:to(dev) // 0 end)
  expect(not ok and tostring(msg):find("ZeroDivisionError", 1, true), "got " .. tostring(msg))
  ok, msg = pcall(function() return a:to(dev) % 0 end)
  expect(not ok and tostring(msg):find("ZeroDivisionError", 1, true), "remainder: got " .. tostring(msg))
  local g = a:to(dev)
  pcall(function() g:floor_divide_(0) end)
  expect_same(a, g, nil, nil, "a refused in-place division must leave its target untouched")
  torch.cuda.synchronize() -- nothing was queued
end)
check("mixed dtypes promote as on the cpu", function()
  same_op(function(x, y) return x + y end, {torch.randint(0, 9, {6}, {dtype = torch.int32}), torch.randn(6)}, 1e-6, 0)
  same_op(function(x, y) return x * y end, {torch.randint(0, 9, {6}, {dtype = torch.uint8}),
                                           torch.randint(-9, 9, {6}, {dtype = torch.int8})})
  same_op(function(x, y) return x + y end, {torch.randn(6):half(), torch.randn(6):bfloat16()}, 1e-3, 1e-3)
end)

---------------------------------------------------------------- reductions

local function reductions(dt, shape, rtol, atol)
  local x = dt == torch.int64 and torch.randint(-100, 100, shape) or torch.randn(table.unpack(shape)):to(dt)
  for _, op in ipairs({"sum", "max", "min", "argmax", "argmin"}) do
    expect_same(x[op](x), x:to(dev)[op](x:to(dev)), rtol, atol, op .. "()")
    for d = 1, #shape do
      for _, keep in ipairs({false, true}) do
        local g = x:to(dev)
        local c1, c2 = x[op](x, d, keep)
        local g1, g2 = g[op](g, d, keep)
        expect_same(c1, g1, rtol, atol, ("%s(%d, %s)"):format(op, d, keep))
        if c2 then expect_same(c2, g2, nil, nil, ("%s(%d) indices"):format(op, d)) end
      end
    end
  end
end
check("reductions float32 (sum/max/min/argmax/argmin, every dim)", function() reductions(torch.float32, {7, 300, 5}, 1e-5, 1e-5) end)
check("reductions float64", function() reductions(torch.float64, {7, 300, 5}, 1e-12, 1e-12) end)
check("reductions int64", function() reductions(torch.int64, {7, 300, 5}) end)
check("reductions with long rows (split kernels)", function() reductions(torch.float32, {3, 200000}, 1e-5, 1e-4) end)
check("prod, mean, std, var, norm", function()
  local x = torch.rand(6, 40, 3) * 0.2 + 0.9
  same_op(function(a) return a:prod(), a:prod(2) end, {x}, 1e-5, 0)
  same_op(function(a) return a:mean(), a:mean(3, true) end, {x}, 1e-5, 1e-6)
  same_op(function(a) return a:std(), a:var(1) end, {x}, 1e-5, 1e-6)
  same_op(function(a) return a:norm(), a:norm(1) end, {x}, 1e-5, 1e-5)
  local i = torch.randint(-3, 4, {5, 7})
  same_op(function(a) return a:prod(), a:prod(1) end, {i})
end)
check("whole-tensor sum of 10M float32 elements", function()
  local x = torch.rand(10000000)
  expect_same(x:sum(), x:to(dev):sum(), 1e-6, 0)
end)
check("max/argmax: NaN wins, first of equal values", function()
  local x = torch.tensor({{1, 3, 3, 2}, {0 / 0, 5, 0 / 0, 1}, {-1 / 0, -1 / 0, -1 / 0, -1 / 0}})
  same_op(function(a) return a:max(2) end, {x})
  same_op(function(a) return a:min(2) end, {x})
  same_op(function(a) return a:argmax(2), a:argmin() end, {x})
  same_op(function(a) return a:max(), a:argmax() end, {x})
end)
check("all, any, equal, allclose on the device", function()
  local b = torch.tensor({{true, false}, {true, true}})
  same_op(function(a) return a:all(), a:any() end, {b})
  local x = torch.randn(10):to(dev)
  expect(x:equal(x:clone()) and x:allclose(x + 1e-9), "equal/allclose")
  expect(not x:equal(x + 1), "equal should be false")
end)
check("empty reductions", function()
  local e = torch.zeros(0, 3)
  same_op(function(a) return a:sum(), a:sum(1) end, {e})
  same_op(function(a) return a:prod(1) end, {e})
end)

---------------------------------------------------------------- softmax

for _, dt in ipairs({torch.float32, torch.float64}) do
  check("softmax/log_softmax every dim " .. dname(dt), function()
    local x = torch.randn(6, 50, 7, {dtype = dt}) * 5
    for d = 1, 3 do
      same_op(function(a) return a:softmax(d), a:log_softmax(d) end, {x}, tol(dt).rtol * 4, tol(dt).atol)
    end
  end)
end
check("softmax of long rows, -inf rows and NaN", function()
  same_op(function(a) return a:softmax(2), a:log_softmax(2) end, {torch.randn(3, 5000)}, 1e-5, 1e-7)
  local x = torch.tensor({{-1 / 0, -1 / 0, -1 / 0}, {0 / 0, 1, 2}, {1, 2, 1 / 0}})
  same_op(function(a) return a:softmax(2), a:log_softmax(2) end, {x})
  same_op(function(a) return a:softmax(1) end, {torch.randn(4, 3):half()}, 1e-3, 1e-3)
end)

---------------------------------------------------------------- random

check("rand/randn/randint give the cpu's numbers for the same seed", function()
  for _, dt in ipairs({torch.float32, torch.float64}) do
    torch.manual_seed(7); local c = torch.rand(1000, {dtype = dt})
    torch.manual_seed(7); local g = torch.rand(1000, {dtype = dt, device = dev})
    expect_same(c, g, nil, nil, "rand " .. dname(dt))
    torch.manual_seed(8); c = torch.randn(1000, {dtype = dt})
    torch.manual_seed(8); g = torch.randn(1000, {dtype = dt, device = dev})
    expect_same(c, g, 1e-14, 1e-14, "randn " .. dname(dt))
  end
  torch.manual_seed(9); local c = torch.randint(-5, 17, {2000})
  torch.manual_seed(9); local g = torch.randint(-5, 17, {2000}, {device = dev})
  expect_same(c, g, nil, nil, "randint")
end)
check("uniform_/normal_ on views and float16", function()
  local c, g = torch.zeros(10, 20), torch.zeros(10, 20, {device = dev})
  torch.manual_seed(3); c:t():uniform_(-2, 3)
  torch.manual_seed(3); g:t():uniform_(-2, 3)
  expect_same(c, g)
  c, g = torch.zeros(300, {dtype = torch.float16}), torch.zeros(300, {dtype = torch.float16, device = dev})
  torch.manual_seed(4); c:normal_(1, 2)
  torch.manual_seed(4); g:normal_(1, 2)
  expect_same(c, g)
end)

---------------------------------------------------------------- index_select

check("index_select every dim and dtype", function()
  local x = torch.randn(5, 6, 7) * 10
  local idx = torch.tensor({3, 1, 3, 5})
  for _, dt in ipairs(DTYPES) do
    for d = 1, 3 do
      same_op(function(a, i) return a:index_select(d, i) end, {x:to(dt), idx})
    end
  end
  same_op(function(a, i) return a:index_select(1, i) end, {x, torch.tensor({2, 4, 5, 1, 3}):narrow(1, 2, 3)})
end)
-- index_select's gradient is the index_add slot (atomicAdd on CUDA: repeated
-- indices sum in any order, so float32 within a few ulps)
check("index_select backward (index_add), repeated indices, every dim; nn.Embedding's gradient", function()
  local idx = torch.tensor({3, 1, 3, 5, 3})
  for _, dt in ipairs({torch.float32, torch.float64}) do
    for d = 1, 3 do
      same_op(function(a, i)
        local x = a:clone():requires_grad_()
        local y = x:index_select(d, i)
        y:backward(torch.ones_like(y) * 1.5)
        return x.grad
      end, {torch.randn(5, 6, 7, {dtype = dt}), idx}, tol(dt).rtol * 4, tol(dt).atol * 4)
    end
  end
  same_op(function(w, ids)
    local e = w:clone():requires_grad_()
    local y = nn.functional.embedding(ids, e, {padding_idx = 2})
    local loss = (y * y):sum()
    loss:backward()
    return y, e.grad
  end, {torch.randn(50, 16), torch.randint(1, 51, {32, 35})}, 1e-5, 1e-5)
end)
check("where, masked_fill, x[mask] and its gradient", function()
  same_op(function(a, m)
    local x = a:clone():requires_grad_()
    local y = torch.where(m, x, -x * 2):masked_fill(m:logical_not(), -1e9):softmax(2)
    ;((y * y):sum() + x[m]:sum()):backward()
    return y, x.grad
  end, {torch.randn(64, 33), torch.rand(64, 33):gt(0.3)}, 2e-6, 1e-6)
end)
check("index_select out of range: the cpu's message at the next synchronisation, device still usable", function()
  local x, idx = torch.randn(4, 3), torch.tensor({1, 9, 2})
  local _, m1 = pcall(function() return x:index_select(1, idx) end)
  m1 = tostring(m1):gsub("^.-:%d+: ", "")
  local y = x:to(dev):index_select(1, idx:to(dev)) -- no error yet: the kernel records it
  local ok, m2 = pcall(function() return y:cpu() end)
  expect(not ok and tostring(m2):find(m1, 1, true) and tostring(m2):find("index_select on " .. dev, 1, true),
    ("cpu %q, cuda %q"):format(m1, tostring(m2)))
  expect(x:to(dev):index_select(1, torch.tensor({2, 1}):to(dev)):cpu():equal(x:index_select(1, torch.tensor({2, 1}))),
    "index_select after the error")
end)
check("integer // and % by a zero element: ZeroDivisionError naming the op at synchronize", function()
  local a, b = torch.tensor({5, 6}):to(dev), torch.tensor({1, 0}):to(dev)
  local _ = a // b
  local ok, m = pcall(torch.cuda.synchronize)
  expect(not ok and tostring(m):find("floor_divide on " .. dev, 1, true) and tostring(m):find("ZeroDivisionError", 1, true),
    "got " .. tostring(m))
  local _ = a:remainder(b)
  ok, m = pcall(function() return a:tolist() end)
  expect(not ok and tostring(m):find("remainder on " .. dev, 1, true), "got " .. tostring(m))
  expect((a // torch.tensor({2, 3}):to(dev)):tolist()[2] == 2, "device unusable after the error")
end)
check("nll_loss: a bad target is reported at the next copy, a good one gives the cpu's loss", function()
  local lp = torch.randn(5, 4):log_softmax(2)
  local t = torch.tensor({1, 4, 2, 3, 1})
  expect_same(torch.nll_loss(lp, t), torch.nll_loss(lp:to(dev), t:to(dev)), 1e-6, 1e-6)
  local bad = torch.nll_loss(lp:to(dev), torch.tensor({1, 5, 2, 3, 1}):to(dev))
  local ok, m = pcall(function() return bad:item() end)
  expect(not ok and tostring(m):find("Target 5 is out of bounds", 1, true), "got " .. tostring(m))
end)

---------------------------------------------------------------- matrix products

check("mm float32 and float64, every transposition", function()
  for _, dt in ipairs({torch.float32, torch.float64}) do
    local a, b = torch.randn(33, 17, {dtype = dt}), torch.randn(17, 29, {dtype = dt})
    local at, bt = torch.randn(17, 33, {dtype = dt}), torch.randn(29, 17, {dtype = dt})
    local r = dt == torch.float64 and 1e-11 or 1e-4
    same_op(function(x, y) return x:mm(y) end, {a, b}, r, r)
    same_op(function(x, y) return x:t():mm(y) end, {at, b}, r, r)
    same_op(function(x, y) return x:mm(y:t()) end, {a, bt}, r, r)
    same_op(function(x, y) return x:t():mm(y:t()) end, {at, bt}, r, r)
  end
end)
check("matmul shapes: vectors, batches, broadcast, K = 0", function()
  local r = 1e-4
  same_op(function(x, y) return x:matmul(y) end, {torch.randn(17), torch.randn(17, 5)}, r, r)
  same_op(function(x, y) return x:matmul(y) end, {torch.randn(5, 17), torch.randn(17)}, r, r)
  same_op(function(x, y) return x:matmul(y) end, {torch.randn(17), torch.randn(17)}, r, r)
  same_op(function(x, y) return x:bmm(y) end, {torch.randn(4, 6, 7), torch.randn(4, 7, 3)}, r, r)
  same_op(function(x, y) return x:matmul(y) end, {torch.randn(2, 4, 6, 7), torch.randn(7, 3)}, r, r)
  same_op(function(x, y) return x:matmul(y) end, {torch.randn(6, 7), torch.randn(3, 7, 2)}, r, r)
  same_op(function(x, y) return x:matmul(y) end, {torch.zeros(3, 0), torch.zeros(0, 4)})
end)
check("matmul of operands cuBLAS cannot read directly (packed)", function()
  local a = torch.randn(8, 6, 2):select(3, 1) -- strides (12, 2): neither unit
  local b = torch.randn(6, 5, 3):select(3, 2)
  same_op(function(x, y) return x:mm(y) end, {a, b}, 1e-4, 1e-4)
end)
check("matmul int64, float16, bfloat16", function()
  same_op(function(x, y) return x:mm(y) end, {torch.randint(-9, 9, {13, 11}), torch.randint(-9, 9, {11, 7})})
  same_op(function(x, y) return x:transpose(2, 3):matmul(y) end, {torch.randint(-9, 9, {3, 13, 11}), torch.randint(-9, 9, {13, 7})})
  same_op(function(x, y) return x:mm(y) end, {torch.randn(9, 8):half(), torch.randn(8, 7):half()}, 2e-3, 2e-3)
  same_op(function(x, y) return x:mm(y) end, {torch.randn(9, 8):bfloat16(), torch.randn(8, 7):bfloat16()}, 1e-2, 1e-2)
end)
check("a large product (1024 x 1024 float32)", function()
  same_op(function(x, y) return x:mm(y) end, {torch.randn(1024, 1024), torch.randn(1024, 1024)}, 1e-3, 1e-3)
end)

---------------------------------------------------------------- convolution (conv2d)

-- conv2d/conv1d on the device against the cpu: the output and the input,
-- weight and bias gradients for the same inputs and output gradient.
local function conv_run(d, nd, xs, ws, opts, dt, bias)
  torch.manual_seed(31)
  local x = torch.randn(xs, {dtype = dt}):to(d):requires_grad_()
  local w = torch.randn(ws, {dtype = dt}):to(d):requires_grad_()
  local b = bias and torch.randn(ws[1], {dtype = dt}):to(d):requires_grad_() or nil
  local y = (nd == 2 and torch.conv2d or torch.conv1d)(x, w, b, opts)
  y:backward(torch.randn(y.shape, {dtype = dt}):to(d))
  return y:detach(), x.grad, w.grad, b and b.grad or nil
end
local function conv_same(nd, xs, ws, opts, bias)
  for _, dt in ipairs({torch.float32, torch.float64}) do
    local r = dt == torch.float64 and 1e-10 or 1e-4
    local c = {conv_run("cpu", nd, xs, ws, opts, dt, bias)}
    local g = {conv_run(dev, nd, xs, ws, opts, dt, bias)}
    for i, what in ipairs({"output", "input gradient", "weight gradient", "bias gradient"}) do
      if c[i] then expect_same(c[i], g[i], r, r, dname(dt) .. " " .. what) end
    end
  end
end
check("conv2d forward and every gradient: odd shapes, stride, padding, bias", function()
  conv_same(2, {2, 3, 13, 11}, {5, 3, 3, 3}, {padding = 1}, true)
  conv_same(2, {3, 2, 17, 9}, {4, 2, 5, 3}, {stride = {2, 3}, padding = {2, 0}}, true)
  conv_same(2, {1, 1, 9, 9}, {1, 1, 2, 2}, {stride = 3}, false)
end)
check("conv2d dilation, groups, depthwise, 'same' (even kernel), 1x1, unbatched", function()
  conv_same(2, {2, 4, 12, 10}, {6, 2, 3, 3}, {dilation = 2, padding = 2, groups = 2}, true)
  conv_same(2, {2, 8, 9, 9}, {8, 1, 3, 3}, {padding = 1, groups = 8}, true)
  conv_same(2, {2, 3, 8, 7}, {4, 3, 4, 2}, {padding = "same"}, true)
  conv_same(2, {4, 16, 7, 7}, {8, 16, 1, 1}, {}, true)
  conv_same(2, {3, 10, 8}, {2, 3, 3, 3}, {}, true)
end)
check("conv1d forward and every gradient", function()
  conv_same(1, {2, 3, 29}, {4, 3, 5}, {stride = 2, padding = 3, dilation = 2}, true)
  conv_same(1, {2, 4, 16}, {4, 1, 3}, {padding = "same", groups = 4}, false)
end)
check("conv2d with the batch in chunks (column cap lowered) equals one chunk", function()
  local cap = torch._conv_col_cap(256) -- a GPU's chunks take 16 times the cap: one sample each
  local ok, err = pcall(conv_same, 2, {5, 3, 10, 9}, {4, 3, 3, 3}, {padding = 1}, true)
  torch._conv_col_cap(cap)
  if not ok then error(err, 0) end
end)
check("conv2d is deterministic on the device (no atomics): two runs, same bits", function()
  local a = {conv_run(dev, 2, {8, 16, 28, 28}, {32, 16, 3, 3}, {padding = 1}, torch.float32, true)}
  local b = {conv_run(dev, 2, {8, 16, 28, 28}, {32, 16, 3, 3}, {padding = 1}, torch.float32, true)}
  for i = 1, 4 do expect(a[i]:cpu():equal(b[i]:cpu()), "result " .. i .. " differs between two runs") end
end)

---------------------------------------------------------------- pooling, batch norm, interpolate, pad (issue 20)

-- fn(x, w, b) on the CPU and on the device, x (and w, b when given)
-- requiring grad; the outputs, then the gradients of sum(out_k * g_k) for
-- fixed random g_k, must agree; and a second run on the device must give
-- bit-identical gradients (the kernels use no atomics). Each side runs fn
-- twice, so state it updates (running statistics) stays comparable.
local function same_grads(name, fn, xs, rtol, atol)
  local function run(on)
    local ins = {}
    for i, x in ipairs(xs) do ins[i] = x:to(on):detach():requires_grad_() end
    local outs = table.pack(fn(table.unpack(ins)))
    local loss
    for k = 1, outs.n do
      torch.manual_seed(100 + k)
      local g = torch.randn(outs[k].shape, {dtype = outs[k].dtype}):to(on)
      local term = (outs[k] * g):sum()
      loss = loss and loss + term or term
    end
    loss:backward()
    local grads = {}
    for i, x in ipairs(ins) do grads[i] = x.grad end
    return outs, grads
  end
  local co, cg = run("cpu")
  run("cpu") -- as many calls as on the device (batch norm's running statistics)
  local go, gg = run(dev)
  for k = 1, co.n do expect_same(co[k], go[k], rtol, atol, name .. " output " .. k) end
  for i = 1, #cg do expect_same(cg[i], gg[i], rtol, atol, name .. " gradient " .. i) end
  local _, gg2 = run(dev)
  for i = 1, #gg do
    expect(gg[i]:cpu():equal(gg2[i]:cpu()), name .. ": gradient " .. i .. " differs between two runs on " .. dev)
  end
end

for _, dt in ipairs({torch.float32, torch.float64}) do
  local t = tol(dt)
  local function x4(...) return torch.randn(table.pack(...), {dtype = dt}) end
  check("max_pool2d fwd/bwd (padding, stride > kernel, dilation, ceil_mode, ties) " .. dname(dt), function()
    same_grads("3x3 s2 p1 ceil", function(x) return torch.max_pool2d(x, 3, {stride = 2, padding = 1, ceil_mode = true}) end,
      {x4(3, 5, 17, 23)}, t.rtol, t.atol)
    same_grads("2x3 s(3,4)", function(x) return torch.max_pool2d(x, {2, 3}, {stride = {3, 4}, padding = {1, 0}}) end,
      {x4(2, 3, 19, 15)}, t.rtol, t.atol)
    same_grads("dilated", function(x) return torch.max_pool2d(x, 3, {stride = 1, padding = 1, dilation = 2}) end,
      {x4(2, 2, 13, 11)}, t.rtol, t.atol)
    same_grads("ties", function(x) return torch.max_pool2d(x, 3, {stride = 1, padding = 1}) end,
      {torch.randint(0, 3, {2, 3, 9, 10}):to(dt)}, t.rtol, t.atol)
    local x = x4(2, 3, 11, 13)
    local _, ci = torch.max_pool2d(x, 3, {stride = 2, return_indices = true})
    local _, gi = torch.max_pool2d(x:to(dev), 3, {stride = 2, return_indices = true})
    expect_same(ci, gi, nil, nil, "indices")
  end)
  check("avg_pool2d fwd/bwd (count_include_pad both ways, ceil_mode) " .. dname(dt), function()
    for _, cip in ipairs({true, false}) do
      same_grads("avg cip=" .. tostring(cip), function(x)
        return torch.avg_pool2d(x, 3, {stride = 2, padding = 1, ceil_mode = true, count_include_pad = cip})
      end, {x4(3, 4, 17, 22)}, t.rtol * 4, t.atol)
    end
  end)
  check("adaptive avg/max pool fwd/bwd (non-divisible, larger than input) " .. dname(dt), function()
    same_grads("adaptive avg", function(x) return torch.adaptive_avg_pool2d(x, {5, 7}) end, {x4(2, 3, 17, 23)},
      t.rtol * 4, t.atol)
    same_grads("adaptive avg 1x1", function(x) return torch.adaptive_avg_pool2d(x, 1) end, {x4(4, 64, 7, 7)},
      t.rtol * 8, t.atol)
    same_grads("adaptive max", function(x) return torch.adaptive_max_pool2d(x, {5, 7}) end, {x4(2, 3, 17, 23)},
      t.rtol, t.atol)
    same_grads("adaptive up", function(x) return torch.adaptive_avg_pool2d(x, {9, 8}) end, {x4(1, 2, 5, 3)},
      t.rtol * 4, t.atol)
  end)
  check("batch_norm fwd/bwd, training and eval, running stats " .. dname(dt), function()
    for _, shape in ipairs({{64, 10}, {8, 6, 33}, {16, 7, 9, 11}}) do
      local c = shape[2]
      local rmc, rvc = torch.zeros(c, {dtype = dt}), torch.ones(c, {dtype = dt})
      local rmg, rvg = rmc:to(dev), rvc:to(dev)
      local x = x4(table.unpack(shape)) * 3 + 2
      local w, b = torch.rand(c, {dtype = dt}) + 0.5, torch.randn(c, {dtype = dt})
      same_grads("training " .. #shape .. "-d", function(xx, ww, bb)
        local rm, rv = xx.is_cuda and rmg or rmc, xx.is_cuda and rvg or rvc
        return torch.batch_norm(xx, rm, rv, {weight = ww, bias = bb, training = true})
      end, {x, w, b}, t.rtol * 50, t.atol * 10)
      expect_same(rmc, rmg, t.rtol * 50, t.atol, "running_mean")
      expect_same(rvc, rvg, t.rtol * 50, t.atol, "running_var")
      same_grads("eval " .. #shape .. "-d", function(xx, ww, bb)
        local rm, rv = xx.is_cuda and rmg or rmc, xx.is_cuda and rvg or rvc
        return torch.batch_norm(xx, rm, rv, {weight = ww, bias = bb})
      end, {x, w, b}, t.rtol * 50, t.atol * 10)
    end
  end)
  check("interpolate nearest/bilinear fwd/bwd (up, down, align_corners) " .. dname(dt), function()
    local x = x4(2, 3, 13, 17)
    for _, o in ipairs({{size = {29, 40}}, {size = {5, 6}}, {scale_factor = 1.7}, {scale_factor = 2},
                        {size = {29, 40}, mode = "bilinear"}, {size = {5, 6}, mode = "bilinear"},
                        {size = {29, 40}, mode = "bilinear", align_corners = true},
                        {size = {5, 6}, mode = "bilinear", align_corners = true},
                        {scale_factor = 0.6, mode = "bilinear"}}) do
      local what = (o.mode or "nearest") .. (o.align_corners and " aligned" or "") ..
        (o.size and (" to " .. o.size[1] .. "x" .. o.size[2]) or (" x" .. o.scale_factor))
      same_grads(what, function(xx) return torch.interpolate(xx, o) end, {x}, t.rtol * 8, t.atol)
    end
  end)
  check("pad fwd/bwd (negative pads crop) " .. dname(dt), function()
    same_grads("pad", function(xx) return torch.pad(xx, {1, -2, 3, 0}, {value = 0.5}) end, {x4(2, 3, 7, 9)}, 0, 0)
  end)
end

---------------------------------------------------------------- autograd and nn

check("autograd through matmul, relu, softmax, sum", function()
  local function run(d)
    torch.manual_seed(11)
    local w = torch.randn(4, 3, {device = d, requires_grad = true})
    local x = torch.randn(5, 4, {device = d})
    local y = x:matmul(w):relu():softmax(2):sum(1):sum()
    y:backward()
    return w.grad
  end
  expect_same(run("cpu"), run(dev), 1e-5, 1e-6)
end)
check("nn.Linear + MSELoss forward/backward, then SGD step", function()
  torch.manual_seed(12)
  local net = nn.Linear(6, 2)
  local sd = net:state_dict()
  local x, t = torch.randn(8, 6), torch.randn(8, 2)
  local function step(d)
    local m = nn.Linear(6, 2)
    m:load_state_dict(sd)
    m:to(d)
    local opt = torch.optim.SGD(m:parameters(), {lr = 0.1})
    local loss = nn.MSELoss()(m(x:to(d)), t:to(d))
    opt:zero_grad()
    loss:backward()
    opt:step()
    return loss:detach(), m.weight:detach()
  end
  local l1, w1 = step("cpu")
  local l2, w2 = step(dev)
  expect_same(l1, l2, 1e-5, 1e-6, "loss")
  expect_same(w1, w2, 1e-5, 1e-6, "weights after a step")
end)

---------------------------------------------------------------- memory, errors, devices

check("memory figures: allocated, peak, reserved, empty_cache, mem_get_info", function()
  torch.cuda.synchronize()
  collectgarbage(); collectgarbage()
  local before = torch.cuda.memory_allocated(dev)
  local x = torch.empty(256, 1024, {device = dev}) -- 1 MiB
  local during = torch.cuda.memory_allocated(dev)
  expect(during - before >= 1048576, ("allocated grew by %d bytes"):format(during - before))
  expect(torch.cuda.max_memory_allocated(dev) >= during, "max_memory_allocated below allocated")
  expect(torch.cuda.memory_reserved(dev) >= during, "memory_reserved below allocated")
  x = nil
  collectgarbage(); collectgarbage()
  expect(torch.cuda.memory_allocated(dev) <= before, "freeing did not lower memory_allocated")
  torch.cuda.empty_cache()
  expect(torch.cuda.memory_reserved(dev) == torch.cuda.memory_allocated(dev), "empty_cache left cached blocks")
  local free, total = torch.cuda.mem_get_info(dev)
  expect(type(free) == "number" and total > 0 and free <= total, "mem_get_info")
end)
check("the allocator serves a smaller tensor from a freed larger block (best fit, split)", function()
  torch.cuda.synchronize()
  collectgarbage(); collectgarbage()
  torch.cuda.empty_cache()
  local x = torch.empty(2 * 1024 * 1024, {device = dev}) -- 8 MiB: a 20 MiB segment
  local reserved = torch.cuda.memory_reserved(dev)
  x = nil
  collectgarbage(); collectgarbage()
  local y = torch.empty(512 * 1024, {device = dev})      -- 2 MiB, carved from the cached segment
  local z = torch.empty(1536 * 1024, {device = dev})     -- 6 MiB, the same segment's rest
  expect(torch.cuda.memory_reserved(dev) == reserved,
    ("reserved grew from %d to %d"):format(reserved, torch.cuda.memory_reserved(dev)))
  y:fill_(1); z:fill_(2)
  expect(y:sum():item() == 512 * 1024 and z:sum():item() == 2 * 1536 * 1024, "split blocks overlap")
end)
check("out of memory is a clean error with PyTorch's message", function()
  local ok, msg = pcall(function() return torch.empty(1024, 1024, 1024, 1024, {device = dev}) end) -- 4 TiB
  expect(not ok and tostring(msg):find("CUDA out of memory", 1, true), "got " .. tostring(msg))
  local y = torch.ones(4, {device = dev}) -- and the device still works
  expect(y:sum():item() == 4, "device unusable after OOM")
end)
check("ops across devices are refused", function()
  local ok, msg = pcall(function() return torch.ones(2) + torch.ones(2, {device = dev}) end)
  expect(not ok and tostring(msg):find("same device", 1, true), "got " .. tostring(msg))
end)
check("printing a device tensor", function()
  local s = tostring(torch.ones(2, 3, {device = dev}))
  local want = "tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='" .. dev .. "')"
  expect(s == want, "got " .. s)
  expect(torch.tensor({1.5, -2.25}):to(dev):tolist()[2] == -2.25, "tolist")
  expect(torch.arange(5, {device = dev})[3]:item() == 2, "item")
end)
check("synchronize", function()
  local x = torch.randn(2000, 2000, {device = dev})
  local _ = x:mm(x)
  torch.cuda.synchronize()
  torch.cuda.synchronize(dev)
end)
if torch.cuda.device_count() >= 2 then
  check("copies between two devices (cuda:0 <-> cuda:1)", function()
    local x = torch.randn(512, 300)
    local g0 = x:to("cuda:0")
    local g1 = g0:to("cuda:1")
    expect(tostring(g1.device) == tostring(torch.device("cuda:1")), "not on cuda:1")
    expect_same(x, g1)
    expect_same(x:t():contiguous() * 2, g1:t():to("cuda:0") * 2)
    expect_same(x:double(), g0:to("cuda:1", torch.float64))
    expect_same(x:sum(1), g1:sum(1), 1e-5, 1e-5)
  end)
else
  skip("copies between two devices", "one CUDA device")
end

---------------------------------------------------------------- timing (information only)

local function time_it(fn, reps)
  fn(); torch.cuda.synchronize()
  local t0 = torch.clock()
  for _ = 1, reps do fn() end
  torch.cuda.synchronize()
  return (torch.clock() - t0) / reps
end
local okt, err = true, nil
if not timing or (ok_props and props.simulated) then
  infos[#infos + 1] = "timing skipped (--no-timing, or simulated devices)"
else okt, err = pcall(function()
  local a = torch.randn(4096, 4096, {device = dev})
  local s = time_it(function() return a + a end, 20)
  infos[#infos + 1] = ("add 4096x4096 float32: %.3f ms (%.0f GB/s)"):format(s * 1e3, 3 * 4 * 4096 * 4096 / s / 1e9)
  s = time_it(function() return a:mm(a) end, 5)
  infos[#infos + 1] = ("mm 4096^3 float32: %.2f ms (%.1f TFLOP/s)"):format(s * 1e3, 2 * 4096 ^ 3 / s / 1e12)
  s = time_it(function() return a:sum() end, 20)
  infos[#infos + 1] = ("sum of 16M float32: %.3f ms"):format(s * 1e3)
  -- issue 20: ResNet-18-sized max pooling and batch norm, forward + backward
  local x = torch.randn(64, 64, 28, 28, {device = dev}):requires_grad_()
  local w, b = torch.ones(64, {device = dev}):requires_grad_(), torch.zeros(64, {device = dev}):requires_grad_()
  local gp = torch.randn(64, 64, 14, 14, {device = dev})
  s = time_it(function() x.grad = nil; torch.max_pool2d(x, 3, {stride = 2, padding = 1}):backward(gp) end, 20)
  infos[#infos + 1] = ("max_pool2d 3x3/2 fwd+bwd 64x64x28x28 float32: %.3f ms"):format(s * 1e3)
  local gb = torch.randn(64, 64, 28, 28, {device = dev})
  s = time_it(function()
    x.grad, w.grad, b.grad = nil, nil, nil
    torch.batch_norm(x, nil, nil, {weight = w, bias = b, training = true}):backward(gb)
  end, 20)
  infos[#infos + 1] = ("batch_norm training fwd+bwd 64x64x28x28 float32: %.3f ms"):format(s * 1e3)
end) end
if not okt then infos[#infos + 1] = "timing failed: " .. tostring(err) end
for _, line in ipairs(infos) do print("INFO  " .. line) end
print_libraries()

print(("gpu_check: %d passed, %d failed, %d skipped"):format(passed, failed, skipped))
if failed > 0 then print("failed: " .. table.concat(failures, "; ")) end
os.exit(failed == 0 and 0 or 1)
