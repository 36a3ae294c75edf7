-- spec/support/helpers.lua: assertions and float64 reference helpers shared
-- by the tensor specs. Loaded with `local H = require("helpers")`
-- (tools/run_specs.sh puts spec/support/ on LUA_PATH).
--
-- References are computed here in plain Lua doubles (or rounded to float32
-- with string.pack), never taken from the engine under test.
local torch = require("torch")
local assert = require("luassert")

local H = {}

-- ---------------------------------------------------------------- numbers

H.inf = math.huge
H.nan = 0 / 0

function H.isnan(v) return v ~= v end

-- Rounds a Lua double to the nearest float32 (IEEE round-to-nearest-even),
-- as C's (float) cast does.
function H.f32(v)
  if v ~= v or v == math.huge or v == -math.huge then return v end
  return (string.unpack("f", string.pack("f", v)))
end

-- Applies H.f32 to every number of a nested list.
function H.f32_list(t) return H.map(t, H.f32) end

-- Python/PyTorch floor division and modulo on doubles and integers
-- (result takes the divisor's sign). Lua's // and % already follow
-- these rules, which is what the references rely on.
H.floordiv = function(a, b) return a // b end
H.mod = function(a, b) return a % b end

-- ---------------------------------------------------------------- lists

-- Maps f over every leaf of a nested list (a leaf is a non-table).
function H.map(t, f)
  if type(t) ~= "table" then return f(t) end
  local r = {}
  for i = 1, #t do r[i] = H.map(t[i], f) end
  return r
end

-- Maps f over the leaves of two nested lists of the same shape.
function H.map2(a, b, f)
  if type(a) ~= "table" then return f(a, b) end
  local r = {}
  for i = 1, #a do r[i] = H.map2(a[i], b[i], f) end
  return r
end

-- The leaves of a nested list in row-major order.
function H.flat(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t; return out end
  for i = 1, #t do H.flat(t[i], out) end
  return out
end

-- 1..n as a list (Lua integers), or a..b.
function H.range(a, b, step)
  if b == nil then a, b = 1, a end
  local r = {}
  for v = a, b, step or 1 do r[#r + 1] = v end
  return r
end

-- A deterministic pseudo-random nested list of doubles in [-1, 1) with the
-- given shape (independent of torch's generator), e.g. H.data({2, 3}, 7).
-- Values are exact float32 numbers (multiples of 2^-10) so float32 and
-- float64 tensors built from them hold the same numbers.
function H.data(shape, seed)
  local state = seed or 1
  local function nxt()
    state = (state * 1103515245 + 12345) % 2147483648
    return (state >> 8) % 2048 / 1024.0 - 1.0
  end
  local function build(d)
    if d > #shape then return nxt() end
    local r = {}
    for i = 1, shape[d] do r[i] = build(d + 1) end
    return r
  end
  return build(1)
end

-- The same with integers in [lo, hi].
function H.idata(shape, seed, lo, hi)
  lo, hi = lo or -9, hi or 9
  local state = seed or 1
  local function nxt()
    state = (state * 1103515245 + 12345) % 2147483648
    return lo + (state >> 8) % (hi - lo + 1)
  end
  local function build(d)
    if d > #shape then return nxt() end
    local r = {}
    for i = 1, shape[d] do r[i] = build(d + 1) end
    return r
  end
  return build(1)
end

-- ---------------------------------------------------------------- tensors

-- A tensor's shape as a plain Lua list.
function H.shape(t)
  local s, r = t:size(), {}
  for i = 1, #s do r[i] = s[i] end
  return r
end

-- "float32", "int64", ...
function H.dtype(t) return t.dtype.name end

-- Everything about a tensor that a failed call must leave as it was.
function H.snapshot(t)
  return {
    shape = H.shape(t), dtype = H.dtype(t), values = t:tolist(),
    stride = t:stride(), offset = t:storage_offset(), contiguous = t:is_contiguous(),
  }
end

-- Asserts that t still matches a snapshot taken before (NaN == NaN).
function H.assert_unchanged(t, snap)
  local now = H.snapshot(t)
  assert.are.same(snap.shape, now.shape)
  assert.are.equal(snap.dtype, now.dtype)
  assert.are.same(snap.stride, now.stride)
  assert.are.equal(snap.offset, now.offset)
  H.assert_list_equal(now.values, snap.values)
end

-- ---------------------------------------------------------------- asserts

local function path_str(path)
  if #path == 0 then return "" end
  return " at [" .. table.concat(path, "][") .. "]"
end

local function fmt(v)
  if type(v) == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    return string.format("%.17g", v)
  end
  return tostring(v)
end

-- Compares nested lists leaf by leaf. cmp(actual, expected) -> ok.
local function compare(actual, expected, cmp, path, what)
  if type(expected) == "table" then
    if type(actual) ~= "table" then
      error(string.format("%s: expected a list%s, got %s", what, path_str(path), fmt(actual)), 0)
    end
    if #actual ~= #expected then
      error(string.format("%s: expected length %d%s, got %d", what, #expected, path_str(path), #actual), 0)
    end
    for i = 1, #expected do
      path[#path + 1] = i
      compare(actual[i], expected[i], cmp, path, what)
      path[#path] = nil
    end
    return
  end
  if not cmp(actual, expected) then
    error(string.format("%s: expected %s%s, got %s", what, fmt(expected), path_str(path), fmt(actual)), 0)
  end
end

-- Exact equality of nested lists; integers must stay integers, floats
-- floats (math.type), NaN equals NaN.
function H.assert_list_equal(actual, expected, msg)
  compare(actual, expected, function(a, e)
    if type(e) == "number" then
      if type(a) ~= "number" then return false end
      if math.type(a) ~= math.type(e) then return false end
      if e ~= e then return a ~= a end
      return a == e
    end
    return a == e
  end, {}, msg or "values differ")
end

-- Approximate equality: |a - e| <= atol + rtol * |e| (NaN matches NaN,
-- infinities must match exactly). Defaults suit float32 results.
function H.assert_close(actual, expected, rtol, atol, msg)
  rtol = rtol or 1e-5
  atol = atol or 1e-6
  compare(actual, expected, function(a, e)
    if type(a) ~= "number" or type(e) ~= "number" then return a == e end
    if e ~= e then return a ~= a end
    if e == math.huge or e == -math.huge then return a == e end
    return math.abs(a - e) <= atol + rtol * math.abs(e)
  end, {}, msg or "values not close")
end

-- Checks a tensor: its dtype name, its shape and its values (exact, or
-- within rtol/atol when given).
function H.check(t, dtype, shape, values, rtol, atol)
  assert(torch.is_tensor(t), "expected a tensor, got " .. type(t))
  assert.are.equal(dtype, H.dtype(t))
  assert.are.same(shape, H.shape(t))
  if values ~= nil then
    if rtol then H.assert_close(t:tolist(), values, rtol, atol)
    else H.assert_list_equal(t:tolist(), values) end
  end
end

-- Calls fn, expects a Lua error whose message contains every string in
-- `needles` (a string or a list; plain text, not patterns). Returns the
-- message.
function H.errors(fn, needles)
  local ok, err = pcall(fn)
  if ok then error("expected an error" .. (needles and (" mentioning '" .. tostring(type(needles) == "table" and needles[1] or needles) .. "'") or "") .. ", but the call succeeded", 2) end
  err = tostring(err)
  if type(needles) == "string" then needles = {needles} end
  for _, n in ipairs(needles or {}) do
    if not err:find(n, 1, true) then
      error(string.format("error message %q does not mention %q", err, n), 2)
    end
  end
  return err
end

-- The message of the error fn(...) raises, without Lua's "file:line: "
-- position prefix; fails when fn succeeds.
function H.error_message(fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then error("expected an error, but the call succeeded", 2) end
  return (tostring(err):gsub("^[^\n]-:%d+: ", ""))
end

-- True when the specs run under AddressSanitizer (tools/run_specs.sh
-- build-san preloads libasan into lua5.4).
H.UNDER_ASAN = (os.getenv("LD_PRELOAD") or ""):find("asan") ~= nil
-- True when the specs run under ThreadSanitizer (`make test TSAN=1`;
-- tools/sanitizer_env.sh sets GSHELL_UNDER_TSAN).
H.UNDER_TSAN = os.getenv("GSHELL_UNDER_TSAN") == "1"

-- CI time (issue 24): `it` for slow end-to-end cases that add nothing
-- under a sanitizer -- they drive uninstrumented child processes, or
-- repeat at length what faster cases already run there -- so they run in
-- the plain `make test` only and are pending (with `why`) under ASan and
-- TSAN. Say why in the spec, next to the case:
--   local plain_it = H.plain_it(it, pending, "starts a dozen python3 processes")
function H.plain_it(it, pending, why)
  if not (H.UNDER_ASAN or H.UNDER_TSAN) then return it end
  return function(name) pending(name .. " -- plain run only: " .. why) end
end
-- The same for cases that ThreadSanitizer adds nothing to (single-threaded
-- leak and recursion checks, whose collector work its instrumented Lua
-- makes many times slower); they still run under ASan, where they matter.
function H.not_under_tsan_it(it, pending, why)
  if not H.UNDER_TSAN then return it end
  return function(name) pending(name .. " -- not under TSAN: " .. why) end
end

-- Returns a replacement for busted's `it` that registers a pending case
-- instead when the case's name is a key of `known` (a table of known bugs:
-- name -> explanation). Used for bugs in files the spec author may not
-- fix; delete the entry once the bug is fixed. An explanation starting
-- with "ASAN:" pends the case only under AddressSanitizer (the behaviour
-- is right but the call leaks, which fails the sanitizer run). busted's
-- `it` and `pending` live in the spec file's environment, so they are
-- passed in:
--   local it = H.it_unless(KNOWN, it, pending)
-- With GS_RUN_KNOWN=1 in the environment the known-bug cases run too
-- (to check a fix before deleting its entry).
function H.it_unless(known, it, pending)
  local run_all = os.getenv("GS_RUN_KNOWN") == "1"
  return function(name, fn)
    local why = known[name]
    if why and why:sub(1, 5) == "ASAN:" and not H.UNDER_ASAN then why = nil end
    if why and not run_all then
      pending(name .. " -- KNOWN BUG: " .. why)
    else
      it(name, fn)
    end
  end
end

-- ---------------------------------------------------------------- autograd

-- Numeric gradient of sum(f(inputs) * w) with respect to inputs[k].
local function numeric_grad(f, inputs, k, w, eps)
  eps = eps or 1e-6
  local x = inputs[k]
  local flat = x:view(-1)
  local g = torch.zeros(x:numel(), { dtype = torch.float64 })
  torch.no_grad(function()
    for i = 1, x:numel() do
      local orig = flat[i]:item()
      flat[i] = orig + eps
      local up = (f(table.unpack(inputs)) * w):sum():item()
      flat[i] = orig - eps
      local down = (f(table.unpack(inputs)) * w):sum():item()
      flat[i] = orig
      g[i] = (up - down) / (2 * eps)
    end
  end)
  return g:view(x.shape)
end

-- Checks analytic against numeric gradients for every input (leaf tensors
-- that require grad, float64): a missing .grad or a difference fails.
function H.gradcheck(f, inputs, tol)
  tol = tol or 1e-5
  for _, x in ipairs(inputs) do x.grad = nil end
  local out = f(table.unpack(inputs))
  local w = torch.rand(out.shape, { dtype = torch.float64 }) + 0.5
  ;(out * w):sum():backward()
  for k, x in ipairs(inputs) do
    local num = numeric_grad(f, inputs, k, w)
    assert.is_not_nil(x.grad, "input " .. k .. " got no gradient")
    local ok = x.grad:allclose(num, tol, tol)
    if not ok then
      error(("gradient of input %d differs:\nanalytic %s\nnumeric  %s"):format(k, tostring(x.grad), tostring(num)))
    end
  end
end

-- ---------------------------------------------------------------- refs

-- Matrix product of nested lists a [m][k] x b [k][n], accumulated from
-- `zero`: 0.0 computes in doubles, 0 in Lua integers (which wrap like int64).
local function ref_mm(a, b, zero)
  local m, k, n = #a, #b, #b[1]
  local c = {}
  for i = 1, m do
    c[i] = {}
    for j = 1, n do
      local s = zero
      for p = 1, k do s = s + a[i][p] * b[p][j] end
      c[i][j] = s
    end
  end
  return c
end

function H.ref_mm(a, b) return ref_mm(a, b, 0.0) end
function H.ref_mm_int(a, b) return ref_mm(a, b, 0) end

-- |c - ref| <= rtol * sum_k |a_ik b_kj| + atol for every element: the
-- error bound of a dot product, so float32 (which BLAS accumulates in
-- float) and float64 results are held to their own precision.
function H.assert_mm_close(got, a, b, rtol)
  local m, k, n = #a, #b, #b[1]
  assert.are.equal(m, #got)
  for i = 1, m do
    assert.are.equal(n, #got[i])
    for j = 1, n do
      local s, mag = 0.0, 0.0
      for p = 1, k do s = s + a[i][p] * b[p][j]; mag = mag + math.abs(a[i][p] * b[p][j]) end
      local err = math.abs(got[i][j] - s)
      if err > rtol * mag + 1e-300 then
        error(string.format("element [%d][%d]: got %.17g, want %.17g (error %.3g, bound %.3g)", i, j, got[i][j], s, err,
                            rtol * mag), 2)
      end
    end
  end
end

-- Transpose of a 2-d nested list.
function H.ref_t(a)
  local r = {}
  for j = 1, #a[1] do
    r[j] = {}
    for i = 1, #a do r[j][i] = a[i][j] end
  end
  return r
end

-- Runs a Lua chunk in a fresh lua5.4 process that loads the same torch
-- module (same package.cpath / package.path), with extra environment
-- variables (a table name -> value); returns what it printed. Used to
-- check that results do not depend on GSHELL_NUM_THREADS.
function H.run_lua(code, env)
  local parts = {}
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "='" .. tostring(v) .. "'" end
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "w"))
  f:write(code)
  f:close()
  local cmd = string.format("%s LUA_CPATH='%s' LUA_PATH='%s' lua5.4 %s 2>&1", table.concat(parts, " "),
                            package.cpath, package.path, tmp)
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  p:close()
  os.remove(tmp)
  return out
end

-- Resident set size of this process in KiB (Linux), or nil.
function H.rss_kib()
  local f = io.open("/proc/self/status", "r")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmRSS:%s*(%d+)"))
end

-- CUDA devices for a spec: the machine's own, or n simulated ones when it
-- has none. H.release_gpus() (in a teardown) undoes the simulation so the
-- next spec file starts as the suite did.
local simulated_gpus = false
function H.gpus(n)
  local torch = require("torch")
  local have = torch.cuda.device_count()
  if have == 0 and not simulated_gpus then
    torch._sim_configure(n)
    simulated_gpus = true
    have = n
  end
  return have >= n
end

function H.gpus_simulated() return simulated_gpus end

function H.release_gpus()
  if not simulated_gpus then return end
  collectgarbage()
  require("torch")._sim_configure(0)
  simulated_gpus = false
end

-- The whole contents of a file (the spec fails if it cannot be read).
function H.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- Runs the rest of a spec case on `n` simulated GPUs of GPU model `spec`
-- ("v100", "host", ...), and puts back the model, the device count and
-- allow_tf32 when the case ends. busted's `finally` belongs to the spec
-- file, so it is passed in; busted keeps one `finally` per case, so a case
-- that uses this helper must not register another. opts.stop_gc: the
-- collector stays stopped until then (a collection between two launches
-- is host time on the modelled clock).
function H.with_model(finally, spec, n, opts)
  local old = torch.cuda._set_gpu_model(spec)
  collectgarbage()
  local old_n, old_cap = torch._sim_configure(n)
  local tf32 = torch.backends.cuda.matmul.allow_tf32
  if opts and opts.stop_gc then collectgarbage("stop") end
  finally(function()
    collectgarbage("restart")
    torch.backends.cuda.matmul.allow_tf32 = tf32
    collectgarbage()
    torch._sim_configure(old_n, old_cap)
    torch.cuda._set_gpu_model(old)
  end)
end

return H
