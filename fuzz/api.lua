-- fuzz/api.lua: a seeded random-call fuzzer over gshell's public API.
-- Run it with `make fuzz-api SECONDS=N [SEED=S] [CASE=C]` (fuzz/api.sh:
-- the ASan/UBSan build, a watchdog, the sanitizer reports checked).
--
-- The run is a sequence of cases; case i draws everything from
-- math.randomseed(SEED, i), so any case replays alone (CASE=i). A case
-- starts from a clean state, builds a pool of values, makes ~30 random
-- calls (api_calls.lua) and checks the oracle:
--   * an error is a Lua string error with a message: non-empty, and no
--     raw Lua or C internals ("attempt to index a nil value", "internal")
--     unless it is one the fuzzer raised itself from a metamethod;
--   * a failed call leaves every tensor it was given unchanged (shape,
--     strides, offset, dtype, device, values, requires_grad);
--   * at the end of the case, after a full collection, host memory in use
--     and memory allocated on every simulated GPU are back to where the
--     case started.
-- Crashes, hangs and sanitizer reports are caught by fuzz/api.sh.
-- Environment: FUZZ_SEED, FUZZ_SECONDS, FUZZ_CASE (one case only),
-- FUZZ_TRACE=1 (print each call before making it), FUZZ_LAST (a file that
-- names the case running, for the crash report).
local torch = require("torch")
local dir = (arg and arg[0] or ""):match("^(.*/)") or "fuzz/"
local C = assert(loadfile(dir .. "api_calls.lua"))(dir)
local V = C.V

local SEED = math.tointeger(tonumber(os.getenv("FUZZ_SEED") or "1")) or 1
local SECONDS = tonumber(os.getenv("FUZZ_SECONDS") or "60")
local ONE_CASE = math.tointeger(tonumber(os.getenv("FUZZ_CASE") or ""))
local TRACE = os.getenv("FUZZ_TRACE") == "1"
local MEMTRACE = os.getenv("FUZZ_TRACE") == "mem" -- also the host memory after each call
if MEMTRACE then TRACE = true end
local LAST = os.getenv("FUZZ_LAST")
local CALLS_PER_CASE = 30
local CALL_LIMIT_S = 30 -- one call running longer (in Lua code) is a hang

local SIM_GPUS = 2
torch._sim_configure(SIM_GPUS)
V.DEVICES = {"cpu", "cuda:0", "cuda:1"}

local tmpdir = os.tmpname()
os.remove(tmpdir)
assert(os.execute("mkdir -p '" .. tmpdir .. "'"))

local failures, calls, errors_seen = 0, 0, 0

local function fail(case, what, desc, detail)
  failures = failures + 1
  io.stderr:write(("FUZZ FAILURE seed %d case %d: %s\n  call: %s\n  %s\n  reproduce: make fuzz-api SEED=%d CASE=%d\n")
    :format(SEED, case, what, desc, detail or "", SEED, case))
end

-- ---- the oracle ----

-- Messages that mean library code failed in a way it did not mean to.
local INTERNAL = {"attempt to index", "attempt to call", "attempt to perform", "attempt to compare",
                  "attempt to concatenate", "attempt to get length", "attempt to add", "attempt to sub",
                  "attempt to mul", "attempt to div", "attempt to unm", "attempt to bitwise",
                  "stack overflow", "internal:", "(null)", "table index is nil", "table index is NaN",
                  "invalid key to 'next'"}
-- Lua's standard functions: a "bad argument" from one of them comes from
-- library code that passed it the user's value unchecked.
local STDLIB = {format = true, insert = true, concat = true, rep = true, sub = true, char = true, unpack = true,
                pairs = true, ipairs = true, setmetatable = true, tostring = true, select = true, floor = true,
                tointeger = true, remove = true, sort = true, find = true, match = true, gsub = true, max = true,
                min = true, abs = true, sqrt = true, type = true}

local function message_problem(err)
  if type(err) ~= "string" then return "the error is a " .. type(err) .. ", not a message string" end
  if err:find(V.MARK, 1, true) then return nil end -- raised by the fuzzer's own metamethod
  local text = err:gsub("^[^:\n]*:%d+: ", "")
  if not text:find("%S") then return "empty error message" end
  for _, pat in ipairs(INTERNAL) do
    if err:find(pat, 1, true) then return "raw internal error: " .. pat end
  end
  local fn = err:match("bad argument #%d+ to '([^']*)'")
  if fn and STDLIB[fn:match("[%w_]+$") or fn] then return "a Lua standard function got an unchecked value" end
  if not fn and err:find("number has no integer representation", 1, true) then
    return "raw internal error: number has no integer representation"
  end
  return nil
end

local function values_equal(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) == "table" then
    if #a ~= #b then return false end
    for i = 1, #a do if not values_equal(a[i], b[i]) then return false end end
    return true
  end
  if a ~= a then return b ~= b end
  return a == b and math.type(a) == math.type(b)
end

local function snapshot(t)
  local s = {shape = t:size(), stride = t:stride(), offset = t:storage_offset(), dtype = tostring(t.dtype),
             device = tostring(t.device), requires_grad = t.requires_grad}
  if t:numel() <= 4096 then
    -- torch._interrupt_in(s), fuzzed like any function, interrupts s
    -- seconds later, wherever the process is: when that lands in this
    -- read rather than in a call under test, read again (seed 7 case
    -- 3705 reported "values changed ... to nil" for an untouched tensor)
    local ok, v
    for _ = 1, 3 do
      ok, v = pcall(t.tolist, t)
      if ok or not tostring(v):find("interrupted!", 1, true) then break end
    end
    s.values = ok and v or nil
    s.read_error = not ok and tostring(v) or nil
  end
  return s
end

local function snapshot_problem(t, s)
  local now = snapshot(t)
  for _, k in ipairs({"shape", "stride", "offset", "dtype", "device", "requires_grad", "values"}) do
    if not values_equal(now[k], s[k]) then
      return ("%s changed from %s to %s%s"):format(k, C.describe_value(s[k]), C.describe_value(now[k]),
        now.read_error and " (reading it failed: " .. now.read_error .. ")" or "")
    end
  end
end

-- Host bytes in use by tensors and bytes allocated on each GPU (simulated
-- GPUs allocate from the C library, outside the host tensor allocator).
local function memory_now()
  local host = torch._host_memory()
  local dev = {}
  for i = 0, SIM_GPUS - 1 do dev[i + 1] = torch.cuda.memory_allocated(i) end
  return host, dev
end

-- Garbage collected, then queued device work finished: a non_blocking copy
-- keeps its pinned source until it ran (as a real GPU's host allocator
-- keeps the block until the copy's event completed).
local function settle()
  collectgarbage("collect")
  collectgarbage("collect")
  for i = 0, SIM_GPUS - 1 do pcall(torch.cuda.synchronize, i) end
end

-- a Lua-side watchdog: a call stuck in Lua code for too long is a hang
local call_started
local function watchdog()
  if call_started and os.clock() - call_started > CALL_LIMIT_S then
    call_started = nil
    error("fuzz watchdog: call ran past " .. CALL_LIMIT_S .. " s", 2)
  end
end

-- ---- a case ----

-- Each case starts from the same state, so that it replays alone.
local function reset_state()
  torch.set_grad_enabled(true)
  torch.set_default_device("cpu")
  torch.cuda.set_device(0)
  for i = 0, SIM_GPUS - 1 do torch.cuda.empty_cache(i) end
end

-- The calls of a case; a function of its own so that its locals are off
-- the stack (and collectable) when the case's memory is checked.
local function run_calls(case)
  local pool = {}
  local ctx = {pool = pool, tmpdir = tmpdir}
  function ctx.add(v)
    if torch.is_tensor(v) and v:numel() <= 4096 then
      if #pool < 12 then pool[#pool + 1] = v else pool[math.random(#pool)] = v end
    end
  end
  function ctx.tensor()
    if #pool > 0 and math.random() < 0.6 then
      local t = V.pick(pool)
      if torch.is_tensor(t) then return t end
    end
    local t = V.tensor()
    ctx.add(t)
    return t
  end
  for _ = 1, 3 do
    local ok, t = pcall(V.tensor)
    if ok then ctx.add(t)
    elseif message_problem(t) then fail(case, message_problem(t), "making a tensor", tostring(t)) end
  end

  for _ = 1, CALLS_PER_CASE do
    local a = C.pick_action()
    local ok_build, desc, fn, involved = pcall(a.fn, ctx)
    if not ok_build then
      -- building the call used the API too (views, clones): the same oracle
      local problem = message_problem(desc)
      if problem then fail(case, problem, a.name .. " (while building the call)", tostring(desc)) end
      goto next
    end
    do
      if TRACE then io.stderr:write(("case %d: %s\n"):format(case, desc)) end
      for k in pairs(V.touched) do V.touched[k] = nil end
      -- An error an earlier call left on a device (an index found out of
      -- range inside a kernel) is raised at the next sync: take it now, so
      -- it is not mistaken for this call's doing in the snapshots.
      for i = 0, SIM_GPUS - 1 do pcall(torch.cuda.synchronize, i) end
      local snaps = {}
      for i, t in ipairs(involved) do snaps[i] = snapshot(t) end
      calls = calls + 1
      call_started = os.clock()
      debug.sethook(watchdog, "", 100000)
      local ok, r = pcall(fn)
      debug.sethook()
      call_started = nil
      if MEMTRACE then
        settle()
        io.stderr:write(("  -> %s; host in use %d\n"):format(ok and "ok" or tostring(r), (torch._host_memory())))
      end
      if ok then
        if torch.is_tensor(r) then ctx.add(r) end
      else
        errors_seen = errors_seen + 1
        local problem = message_problem(r)
        if problem then fail(case, problem, desc, "error: " .. tostring(r)) end
        if type(r) == "string" and r:find("fuzz watchdog", 1, true) then fail(case, "hang", desc, r) end
        for i, t in ipairs(involved) do
          local changed = not V.touched[t] and snapshot_problem(t, snaps[i])
          if changed then
            fail(case, "a failed call changed a tensor it was given", desc,
              ("argument %d: %s; the error was: %s"):format(i, changed, tostring(r)))
            break
          end
        end
      end
    end
    ::next::
  end
end

local function run_case(case)
  math.randomseed(SEED, case)
  reset_state()
  settle()
  local host0, dev0 = memory_now()
  run_calls(case)
  -- memory back to the baseline
  reset_state()
  settle()
  local host1, dev1 = memory_now()
  if host1 ~= host0 then
    fail(case, "host memory not back to its baseline", "(end of case)",
      ("%d bytes in use before the case, %d after a collection"):format(host0, host1))
  end
  for i = 1, SIM_GPUS do
    if dev1[i] ~= dev0[i] then
      fail(case, "device memory not back to its baseline", "(end of case)",
        ("cuda:%d: %d bytes allocated before the case, %d after a collection"):format(i - 1, dev0[i], dev1[i]))
    end
  end
end

local function note_case(case)
  if not LAST then return end
  local f = io.open(LAST, "w")
  if f then f:write(case, "\n"); f:close() end
end

local start = os.time()
local case = 0
local first, last_case = ONE_CASE or 1, ONE_CASE or math.maxinteger
for c = first, last_case do
  if not ONE_CASE and os.time() - start >= SECONDS then break end
  case = c
  note_case(c)
  run_case(c)
  if failures >= 20 then break end
end
os.execute("rm -rf '" .. tmpdir .. "'")
print(("fuzz-api: seed %d, %d cases, %d calls (%d raised errors), %d s, %d failures")
  :format(SEED, ONE_CASE and 1 or case, calls, errors_seen, os.time() - start, failures))
os.exit(failures == 0 and 0 or 1)
