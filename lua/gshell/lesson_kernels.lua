-- gshell.lesson_kernels: the checks of `gshell --lesson kernels`
-- (lua/gshell/lessons/kernels.lua, issue 30). Each step of that lesson has
-- the learner write a kernel and launch it on tensors the step made; its
-- check looks at the cell's error (a kernel error names the block, the
-- thread and what went wrong: the hint says which habit caused it), then
-- at the output's values against a tensor computation (never written,
-- shifted by one, too few threads), then at the launch's report (a count
-- target: each element read once, the tile's 2n^3/16 reads...).
local M = {}

local function torch() return package.loaded.torch or rawget(_G, "torch") end

local function is_report(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") == "torch.cuda.kernel_report"
end

-- A step's tensors, made afresh (the lesson's inputs, whatever the
-- learner held before) and announced; the report variable's value is kept
-- so that the check can tell a new launch from an old report.
function M.setup(report_var, make)
  return function(env)
    local made = {}
    for _, p in ipairs(make) do
      local fn, err = load("return " .. p[2], "=(lesson setup)", "t", env)
      local ok, v = false, err
      if fn then ok, v = pcall(fn) end
      if not ok then
        print("lesson: could not make " .. p[1] .. " for this step: " .. tostring(v))
        return
      end
      env[p[1]] = v
      made[#made + 1] = p[1] .. " = " .. p[2]
    end
    rawset(env, "_kernels_old_report", rawget(env, report_var) or false)
    print("(this step's tensors: " .. table.concat(made, "; ") .. ")")
  end
end

-- "block (b), thread (t)" and the index and array of an out-of-bounds error.
local function parse_oob(err)
  local bx, tx = err:match("block %((%d+),%d+,%d+%), thread %((%d+),%d+,%d+%)")
  local idx, name, n = err:match("index (%-?%d+) is out of bounds for argument %d+ %(([%w_]+), (%d+) elements")
  return tonumber(bx), tonumber(tx), tonumber(idx), name, tonumber(n)
end

-- The hint for a kernel error, or nil. step: the step's table of options
-- (barrier: where syncthreads() goes in this step's kernel).
function M.error_hint(err, step)
  err = tostring(err)
  if err:find("is out of bounds for argument", 1, true) then
    local bx, tx, idx, name, n = parse_oob(err)
    if idx and n then
      local msg = string.format("index %d of %s is past its end (%s has %d elements, indices 0..%d)", idx, name, name,
        n, n - 1)
      if step.dims == 1 and bx and tx and step.block and idx == bx * step.block + tx + 1 then
        return msg .. ": off by one. Inside kernels positions start at 0: thread i handles element i, so drop the + 1"
      end
      if idx < 0 then
        return msg .. ": inside kernels positions start at 0, so the first element is " .. name .. "[0]"
      end
      return msg .. ": the launch has more threads than elements, so the extra threads must do nothing: " ..
        "guard the work with `if i < n then ... end`" .. (step.dims == 2 and " (both row and column: " ..
        "`if row < n and col < n then`)" or "")
    end
  end
  if err:find("race on shared memory", 1, true) or err:find("read of shared memory never written", 1, true) then
    return "a syncthreads() is missing: one thread reads what another writes, so they must wait for each other. " ..
      (step.barrier or "Put syncthreads() after the writes to shared memory and before the reads.")
  end
  if err:find("finished without reaching it", 1, true) then
    return "syncthreads() inside an `if` that not every thread takes hangs the block: move it out of the `if`, " ..
      "so that every thread of the block reaches it"
  end
  if err:find("assignment to global", 1, true) then
    return "a variable inside a kernel must be local (`local i = ...`): a global would be shared by every thread"
  end
  if err:find("is not an integer", 1, true) then
    return "an index must be an integer: / gives a float in Lua, // divides to an integer (n // 2)"
  end
  return nil
end

local function flat(t)
  local c = t:detach():cpu():double()
  return c:reshape(c:numel()):tolist()
end

-- What is wrong with the values `got` against `want` (tensors of one
-- shape), or nil when they agree. r: the launch's report.
function M.values_hint(var, got, want, r, step)
  local t = torch()
  if not t.is_tensor(got) then return var .. " should be a tensor: the step made it, launch your kernel on it" end
  if tostring(got.shape) ~= tostring(want.shape) then
    return string.format("%s has shape %s; the step's is %s (the step made it: did you replace it?)", var,
      tostring(got.shape), tostring(want.shape))
  end
  local g, w = flat(got), flat(want)
  local function same(a, b) return math.abs(a - b) <= 1e-4 * math.max(1, math.abs(b)) end
  local wrong, unwritten = {}, 0
  for k = 1, #w do
    if not same(g[k], w[k]) then
      wrong[#wrong + 1] = k - 1
      if g[k] == 0 and w[k] ~= 0 then unwritten = unwritten + 1 end
    end
  end
  if #wrong == 0 then return nil end
  if step.accumulates and #w == 1 then
    local times = g[1] / w[1]
    if math.abs(times - math.floor(times + 0.5)) < 1e-3 and times > 1.5 then
      return string.format("%s holds %d times the answer: atomic_add adds to what %s held, and it held an earlier "
        .. "launch's result; zero it first (%s:zero_()), then launch once", var, math.floor(times + 0.5), var, var)
    end
  end
  local first, last = wrong[1], wrong[#wrong]
  if unwritten == #wrong then
    if first == 0 and #wrong == 1 then
      return string.format("%s[0] was never written: inside kernels positions start at 0, so thread 0 handles "
        .. "element 0 (no + 1)", var)
    end
    local suffix = last == #w - 1 and #wrong == last - first + 1
    if suffix and is_report(r) and r.threads < #w then
      local b = r.block[1] * r.block[2] * r.block[3]
      return string.format("elements %d..%d of %s were never written: the launch has %d threads (%d blocks of %d) "
        .. "for %d elements; launch enough blocks: (n + %d) // %d", first, last, var, r.threads, r.grid[1] * r.grid[2] * r.grid[3], b,
        #w, b - 1, b)
    end
    if suffix then
      return string.format("elements %d..%d of %s were never written (indices from 0): does every element have a "
        .. "thread? blockIdx.x * blockDim.x + threadIdx.x is a thread's element", first, last, var)
    end
  end
  -- shifted by one: out[k] holds what belongs at k + 1 or k - 1
  for _, d in ipairs({ 1, -1 }) do
    local shifted = true
    for _, k in ipairs(wrong) do
      local o = w[k + 1 + d]
      if not (o and same(g[k + 1], o)) and not (g[k + 1] == 0) then shifted = false; break end
    end
    if shifted and #wrong > 1 then
      return string.format("%s is off by one: %s[%d] holds what belongs at %d; inside kernels positions start at 0 "
        .. "(thread i handles element i)", var, var, first, first + d)
    end
  end
  return string.format("%s[%d] (from 0; %s[%d] outside kernels) is %s, expected %s (%d of %d elements are wrong)",
    var, first, var, first + 1, tostring(g[first + 1]), tostring(w[first + 1]), #wrong, #w)
end

-- The check of a kernel step. spec: {report = "r", out = "out", want =
-- function(env) -> tensor, counts = function(r, env) -> true | false,
-- hint, and the options error_hint and values_hint read}.
function M.check(spec)
  return function(ctx)
    local env = ctx.env
    local src = type(ctx.src) == "string" and ctx.src or ""
    if ctx.status == "error" then
      local h = M.error_hint(ctx.err, spec)
      if h then return false, h end
      return false, "that cell failed (the error is above); fix it and run it again"
    end
    -- defining the kernel, or looking around: quiet until a launch
    if not src:find("launch", 1, true) then return false, nil end
    local r = env[spec.report]
    if not is_report(r) or rawequal(r, rawget(env, "_kernels_old_report")) then
      return false, string.format("keep the launch's report: `%s = %s:launch(...)`", spec.report, spec.kernel)
    end
    local h = M.values_hint(spec.out, env[spec.out], spec.want(env), r, spec)
    if h then return false, h end
    if spec.counts then
      local ok, ch = spec.counts(r, env)
      if not ok then return false, ch end
    end
    return true
  end
end

return M
