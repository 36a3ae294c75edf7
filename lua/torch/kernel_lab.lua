-- torch/kernel_lab.lua: the kernel lab (issue 30; docs/kernel-lab.md).
-- torch.cuda.kernel(fn) makes a kernel of a Lua function; k:launch(grid,
-- block, ...) runs it on a simulated GPU with CUDA's thread semantics:
-- every thread runs fn with threadIdx, blockIdx, blockDim, gridDim,
-- syncthreads(), shared(), the atomics and math in scope; tensor arguments
-- are flat arrays indexed from 0, numbers are scalars. Every access is
-- counted (torch/kernel_lab_report.lua turns the counts into a report and
-- a modelled time); the results are written back to the tensors only when
-- the whole launch succeeded.
--
-- How threads run: a kernel whose code never names syncthreads runs its
-- threads one after another as plain calls. One that does runs each thread
-- of a block as a coroutine (made once per launch and reused by every
-- block), and syncthreads() yields to the block's scheduler, which resumes
-- the threads in order until all wait at the barrier (then the next
-- interval starts) or all finished.
local torch = require("torch")
local report = require("torch.kernel_lab_report")

local M = {}
local Kernel = { __name = "torch.cuda.kernel" }
Kernel.__index = Kernel

local WARP, SECTOR, BANKS = 32, 32, 32
local floor, ceil, mtype, tointeger = math.floor, math.ceil, math.type, math.tointeger
local co_create, co_resume, co_yield = coroutine.create, coroutine.resume, coroutine.yield
local unpack = table.unpack

-- A launch error that already names block and thread (or none).
local function lab_error(msg) error({ lab_msg = msg }, 0) end

-- dims: a positive integer or {x [, y [, z]]} (also {x = .., y = .., z = ..})
local function dim3(v, what)
  local x, y, z
  if type(v) == "number" then x, y, z = v, 1, 1
  elseif type(v) == "table" then
    x, y, z = v.x or v[1], v.y or v[2] or 1, v.z or v[3] or 1
  else
    error(string.format("launch: %s must be a number or {x, y, z}, got a %s", what, type(v)), 3)
  end
  local out = {}
  for k, n in ipairs({ x, y, z }) do
    local i = type(n) == "number" and tointeger(n) or nil
    if not i or i < 1 then
      error(string.format("launch: %s.%s must be a positive integer, got %s", what, ("xyz"):sub(k, k), tostring(n)), 3)
    end
    out[k] = i
  end
  return out[1], out[2], out[3]
end

-- The function fn as a fresh closure whose _ENV is its own (set per
-- launch), sharing every other upvalue with fn (its locals stay live).
local function instantiate(fn)
  local ok, code = pcall(string.dump, fn)
  if not ok then error("torch.cuda.kernel: expected a Lua function (its code is copied), got a C function", 3) end
  local copy = load(code, nil, "b") -- a binary chunk keeps fn's source name: errors name the user's lines
  local env_index
  for i = 1, math.huge do
    local name = debug.getupvalue(fn, i)
    if not name then break end
    if name == "_ENV" then env_index = i else debug.upvaluejoin(copy, i, fn, i) end
  end
  return copy, env_index
end

function M.kernel(fn, opts)
  if type(fn) ~= "function" then
    error("torch.cuda.kernel: expected a function (the kernel's body), got a " .. type(fn), 2)
  end
  opts = opts or {}
  if type(opts) ~= "table" then error("torch.cuda.kernel: options must be a table such as {name = 'add'}", 2) end
  for k in pairs(opts) do
    if k ~= "name" then error("torch.cuda.kernel: unknown option '" .. tostring(k) .. "' (known: name)", 2) end
  end
  local info = debug.getinfo(fn, "Su")
  local copy, env_index = instantiate(fn)
  local names = {}
  for i = 1, info.nparams do names[i] = debug.getlocal(fn, i) end
  local where = info.short_src:match("[^/]*$") .. ":" .. info.linedefined
  local code = string.dump(fn)
  return setmetatable({
    fn = fn, copy = copy, env_index = env_index, params = names, opts_name = opts.name,
    name = "kernel:" .. (opts.name or where),
    -- a kernel that never names syncthreads cannot wait at a barrier
    barriers = code:find("syncthreads", 1, true) ~= nil,
  }, Kernel)
end

-- k:cuda_source(): the kernel as CUDA C (torch/kernel_lab_cuda.lua), typed
-- by the last launch's arguments when there was one.
function Kernel:cuda_source(...)
  if getmetatable(self) ~= Kernel then error("cuda_source: call it as k:cuda_source()", 2) end
  if select("#", ...) > 0 then error("cuda_source() takes no arguments", 2) end
  return require("torch.kernel_lab_cuda").source(self)
end

function Kernel:__tostring()
  return string.format("%s (%d parameters: %s)", self.name, #self.params, table.concat(self.params, ", "))
end

local round = { float32 = torch._lab_f32, float16 = torch._lab_f16, bfloat16 = torch._lab_bf16 }
local elem_size = { float32 = 4, float64 = 8, float16 = 2, bfloat16 = 2, int64 = 8, int32 = 4, int16 = 2,
  int8 = 1, uint8 = 1, bool = 1 }

-- A value stored into an array of dtype dt, or nil and why not.
local function converter(dt)
  local r = round[dt]
  if r then
    return function(v)
      if type(v) ~= "number" then
        if v == true then return 1.0 elseif v == false then return 0.0 end
        return nil
      end
      return r(v)
    end
  elseif dt == "float64" then
    return function(v)
      if type(v) ~= "number" then
        if v == true then return 1.0 elseif v == false then return 0.0 end
        return nil
      end
      return v + 0.0
    end
  end
  -- integer dtypes: a float is truncated toward zero, as C converts it,
  -- then the integer wraps to the dtype's width (two's complement); bool
  -- stores 0 or 1
  local bits = ({ int32 = 32, int16 = 16, int8 = 8, uint8 = 8 })[dt]
  local span, half = bits and (1 << bits), bits and (1 << (bits - 1))
  local signed = dt ~= "uint8"
  return function(v)
    if mtype(v) ~= "integer" then
      if type(v) ~= "number" then
        if v == true then return 1 elseif v == false then return 0 end
        return nil
      end
      v = tointeger(v >= 0 and floor(v) or ceil(v))
      if not v then return nil end
    end
    if dt == "bool" then return v ~= 0 and 1 or 0 end
    if not bits then return v end
    v = v % span
    if signed and v >= half then v = v - span end
    return v
  end
end

local function thread_str(t, bdx, bdy)
  return string.format("(%d,%d,%d)", t % bdx, (t // bdx) % bdy, t // (bdx * bdy))
end

-- One launch: returns the counts (for the report) and the arrays to write
-- back, or raises.
local function run(k, grid, block, args, arrays, m)
  local gdx, gdy, gdz = grid[1], grid[2], grid[3]
  local bdx, bdy, bdz = block[1], block[2], block[3]
  local nthreads = bdx * bdy * bdz
  -- where the running thread is (the error messages and the counts read these)
  local bx, by, bz, tid, warp = 0, 0, 0, 0, 0
  local gk, sk, shc = 0, 0, 0 -- this thread's global and shared accesses so far, shared() calls
  local c = { global_reads = 0, global_writes = 0, shared_reads = 0, shared_writes = 0, sectors = 0,
    bank_conflicts = 0, atomics = 0, threads = 0, smem = 0 }
  local greads, gwrites, sreads, swrites, nsectors, conflicts, natomics, sgroups = 0, 0, 0, 0, 0, 0, 0, 0
  local gsec, sgrp = {}, {} -- this block's access groups: (k-th access, warp) -> sectors / banks
  local ebase = 0           -- barrier intervals passed in this block, times 2048
  local atom = {}           -- proxy -> its atomic operation
  -- The first block's accesses, thread by thread, for r:picture()
  -- (kernel_lab_picture.lua): trace[tid] = {keys = {"r a", ...}, ["r a"] =
  -- {indices..., n = accesses}}. Only while the first block runs, so a
  -- launch of many blocks pays one upvalue test per access after it.
  local TRACE_CAP = 4096 -- indices kept per thread and array (the count goes on)
  local trace = {}
  local function rec(kind, name, i)
    local t = trace[tid]
    if not t then t = { keys = {} }; trace[tid] = t end
    local key = kind .. " " .. name
    local l = t[key]
    if not l then l = { n = 0 }; t[key] = l; t.keys[#t.keys + 1] = key end
    l.n = l.n + 1
    if l.n <= TRACE_CAP then l[l.n] = i end
  end

  local function where() return string.format("block (%d,%d,%d), thread %s", bx, by, bz, thread_str(tid, bdx, bdy)) end
  local function index_of(i, what, n, lvl)
    lvl = lvl or 3
    if mtype(i) ~= "integer" then
      local j = type(i) == "number" and tointeger(i) or nil
      if not j then
        if type(i) == "number" then error(string.format("index %s of %s) is not an integer", tostring(i), what), lvl) end
        error(string.format("%s) is an array: index it with an integer from 0 (got %s '%s')", what, type(i), tostring(i)), lvl)
      end
      i = j
    end
    if i < 0 or i >= n then
      error(string.format("index %d is out of bounds for %s, %d elements; kernels index from 0)", i, what, n), lvl)
    end
    return i
  end

  -- ---- global memory: one proxy per tensor argument ----
  local function global_proxy(a)
    local data, n, size, conv = a.data, a.n, a.size, converter(a.dtype)
    local what = string.format("argument %d (%s", a.argno, a.name)
    local akey = a.argno << 40 -- sectors of different arguments never coincide
    local function touch(i)
      local g = gk * WARP + warp
      gk = gk + 1
      local s = gsec[g]
      if not s then s = {}; gsec[g] = s end
      local key = akey + (i * size) // SECTOR
      if not s[key] then s[key] = true; nsectors = nsectors + 1 end
    end
    local p = setmetatable({}, {
      -- the hot path: touch() written out, index_of only off the fast path
      __index = function(_, i)
        if mtype(i) ~= "integer" or i < 0 or i >= n then i = index_of(i, what, n) end
        greads = greads + 1
        local g = gk * WARP + warp
        gk = gk + 1
        local s = gsec[g]
        if not s then s = {}; gsec[g] = s end
        local key = akey + (i * size) // SECTOR
        if not s[key] then s[key] = true; nsectors = nsectors + 1 end
        if trace then rec("r", a.name, i) end
        return data[i]
      end,
      __newindex = function(_, i, v)
        if mtype(i) ~= "integer" or i < 0 or i >= n then i = index_of(i, what, n) end
        local x = conv(v)
        if x == nil then
          error(string.format("cannot store %s (a %s) in %s, %s)", tostring(v), type(v), what, a.dtype), 2)
        end
        gwrites = gwrites + 1
        touch(i)
        if trace then rec("w", a.name, i) end
        data[i] = x
        a.written = true
      end,
      __len = function() return n end,
      __name = "kernel array",
    })
    atom[p] = function(i, op, v, cmp)
      i = index_of(i, what, n, 4)
      local old = data[i]
      local x = conv(op(old, v, cmp))
      if x == nil then error(string.format("cannot store the atomic's result in %s, %s)", what, a.dtype), 3) end
      greads, gwrites, natomics = greads + 1, gwrites + 1, natomics + 1
      touch(i)
      if trace then rec("a", a.name, i) end
      data[i] = x
      a.written = true
      return old
    end
    return p
  end

  -- ---- shared memory: the block's arrays, made by the first thread that asks ----
  local block_shared, smem_top = {}, 0
  local function bank(word)
    local g = sk * WARP + warp
    sk = sk + 1
    local grp = sgrp[g]
    if not grp then grp = { m = 0 }; sgrp[g] = grp; sgroups = sgroups + 1 end
    if not grp[word] then
      grp[word] = true
      local b = -1 - word % BANKS
      local cnt = (grp[b] or 0) + 1
      grp[b] = cnt
      if cnt > grp.m then
        if grp.m > 0 then conflicts = conflicts + 1 end
        grp.m = cnt
      end
    end
  end
  -- Race checks: per element, the last writer and the readers of the
  -- current barrier interval, each one number: ebase + tid (ebase =
  -- interval * 2048, so an older interval's mark is below ebase), or
  -- ebase + MANY for several readers.
  local MANY = 1024
  local function shared_proxy(no, n, dt)
    local vals, wr, rd = {}, {}, {}
    local size, conv = elem_size[dt], converter(dt)
    local off = smem_top
    smem_top = smem_top + ((n * size + 15) // 16) * 16
    local what = string.format("shared array %d (%s", no, dt)
    local pname = no == 1 and "shared" or "shared" .. no -- in r:picture()
    local function other(t) return thread_str(t, bdx, bdy) end
    local p = setmetatable({}, {
      __index = function(_, i)
        if mtype(i) ~= "integer" or i < 0 or i >= n then i = index_of(i, what, n) end
        local mine = ebase + tid
        local w = wr[i]
        if w and w >= ebase and w ~= mine then
          error(string.format("race on shared memory: element %d of shared array %d was written by thread %s "
            .. "since the last syncthreads() and is read here by another thread (a syncthreads() between them?)",
            i, no, other(w - ebase)), 2)
        end
        local v = vals[i]
        if v == nil then
          error(string.format("read of shared memory never written: element %d of shared array %d (shared memory "
            .. "starts undefined; a missing syncthreads() after the writes?)", i, no), 2)
        end
        local r = rd[i]
        if r ~= mine and r ~= ebase + MANY then
          if r and r >= ebase then rd[i] = ebase + MANY else rd[i] = mine end
        end
        sreads = sreads + 1
        bank((off + i * size) // 4)
        if trace then rec("r", pname, i) end
        return v
      end,
      __newindex = function(_, i, v)
        if mtype(i) ~= "integer" or i < 0 or i >= n then i = index_of(i, what, n) end
        local mine = ebase + tid
        local w = wr[i]
        if w and w >= ebase and w ~= mine then
          error(string.format("race on shared memory: element %d of shared array %d was written by thread %s "
            .. "since the last syncthreads() and is written again here by another thread", i, no, other(w - ebase)), 2)
        end
        local r = rd[i]
        if r and r >= ebase and r ~= mine then
          error(string.format("race on shared memory: element %d of shared array %d was read by %s since the last "
            .. "syncthreads() and is written here (a syncthreads() between the read and the write?)", i, no,
            r - ebase == MANY and "other threads" or "thread " .. other(r - ebase)), 2)
        end
        local x = conv(v)
        if x == nil then error(string.format("cannot store %s (a %s) in %s, %s)", tostring(v), type(v), what, dt), 2) end
        wr[i] = mine
        swrites = swrites + 1
        bank((off + i * size) // 4)
        if trace then rec("w", pname, i) end
        vals[i] = x
      end,
      __len = function() return n end,
      __name = "shared array",
    })
    atom[p] = function(i, op, v, cmp)
      i = index_of(i, what, n, 4)
      local old = vals[i]
      if old == nil then
        error(string.format("atomic on shared memory never written: element %d of shared array %d", i, no), 3)
      end
      local x = conv(op(old, v, cmp))
      if x == nil then error(string.format("cannot store the atomic's result in %s, %s)", what, dt), 3) end
      sreads, swrites, natomics = sreads + 1, swrites + 1, natomics + 1
      bank((off + i * size) // 4)
      if trace then rec("a", pname, i) end
      vals[i] = x
      return old
    end
    return { proxy = p, n = n, dtype = dt }
  end
  local smem_limit = m and m.smem_per_block or 48 * 1024
  local function shared(n, dt)
    local ni = type(n) == "number" and tointeger(n) or nil
    if not ni or ni < 1 then error("shared(n [, dtype]): n must be a positive integer, got " .. tostring(n), 2) end
    if dt ~= nil and type(dt) ~= "string" then dt = tostring(dt):match("torch%.(%w+)") or tostring(dt) end
    dt = dt or "float32"
    if not elem_size[dt] or dt == "bool" then
      error("shared(n, dtype): unknown dtype '" .. tostring(dt) .. "' (float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8)", 2)
    end
    shc = shc + 1
    local s = block_shared[shc]
    if not s then
      s = shared_proxy(shc, ni, dt)
      block_shared[shc] = s
      if smem_top > smem_limit then
        error(string.format("shared memory of a block is %d bytes, over the %s's %d per block", smem_top,
          m and m.key:upper() or "default", smem_limit), 2)
      end
      if smem_top > c.smem then c.smem = smem_top end
    elseif s.n ~= ni or s.dtype ~= dt then
      error(string.format("shared() call %d asks for %d %s elements, but another thread of the block made it with %d %s "
        .. "(every thread declares the same shared arrays in the same order)", shc, ni, dt, s.n, s.dtype), 2)
    end
    return s.proxy
  end

  local function atomic(name, op)
    return function(arr, i, v, cmp)
      local f = atom[arr]
      if not f then error(name .. "(arr, i, v): arr must be a tensor argument or a shared array, got a " .. type(arr), 2) end
      if type(v) ~= "number" then error(name .. "(arr, i, v): v must be a number, got a " .. type(v), 2) end
      return f(i, op, v, cmp)
    end
  end

  -- ---- the kernel's environment: CUDA's names, then the user's globals ----
  local threadIdx, blockIdx = { x = 0, y = 0, z = 0 }, { x = 0, y = 0, z = 0 }
  local BARRIER = {}
  local env = setmetatable({
    threadIdx = threadIdx, blockIdx = blockIdx,
    blockDim = { x = bdx, y = bdy, z = bdz }, gridDim = { x = gdx, y = gdy, z = gdz },
    syncthreads = function()
      if not coroutine.isyieldable() then
        error("syncthreads() was reached through a name the lab did not see in the kernel's code; "
          .. "call syncthreads() by that name inside the kernel", 2)
      end
      co_yield(BARRIER)
    end,
    shared = shared,
    atomic_add = atomic("atomic_add", function(a, b) return a + b end),
    atomic_max = atomic("atomic_max", function(a, b) return a > b and a or b end),
    atomic_min = atomic("atomic_min", function(a, b) return a < b and a or b end),
    atomic_exch = atomic("atomic_exch", function(_, b) return b end),
    atomic_cas = atomic("atomic_cas", function(a, cmp, val) if a == cmp then return val end return a end),
  }, {
    __index = k.env_index and select(2, debug.getupvalue(k.fn, k.env_index)) or _G,
    __newindex = function(_, name)
      error(string.format("assignment to global '%s' inside a kernel: every thread would share it "
        .. "(declare it local)", tostring(name)), 2)
    end,
  })
  -- atomic_cas(arr, i, compare, val): the op gets (old, compare, val)
  local cas = env.atomic_cas
  env.atomic_cas = function(arr, i, cmp, val)
    if type(val) ~= "number" then error("atomic_cas(arr, i, compare, val): val must be a number", 2) end
    return cas(arr, i, cmp, val)
  end
  if k.env_index then debug.setupvalue(k.copy, k.env_index, env) end

  local callargs, nargs = {}, args.n
  for i = 1, nargs do
    local a = arrays[i]
    callargs[i] = a and global_proxy(a) or args[i]
  end
  local fn = k.copy

  local function set_thread(t)
    tid, warp = t, t // WARP
    threadIdx.x, threadIdx.y, threadIdx.z = t % bdx, (t // bdx) % bdy, t // (bdx * bdy)
  end

  local function new_block(x, y, z)
    bx, by, bz = x, y, z
    blockIdx.x, blockIdx.y, blockIdx.z = x, y, z
    gsec, sgrp, block_shared, smem_top, ebase = {}, {}, {}, 0, 0
  end

  local function plain_block()
    for t = 0, nthreads - 1 do
      set_thread(t)
      gk, sk, shc = 0, 0, 0
      fn(unpack(callargs, 1, nargs))
    end
  end

  local cos, gks, sks, shcs, state
  local DONE = {}
  local function body()
    while true do
      fn(unpack(callargs, 1, nargs))
      co_yield(DONE)
    end
  end
  local function barrier_block()
    if not cos then
      cos, gks, sks, shcs, state = {}, {}, {}, {}, {}
      for t = 0, nthreads - 1 do cos[t] = co_create(body) end
    end
    for t = 0, nthreads - 1 do gks[t], sks[t], shcs[t], state[t] = 0, 0, 0, true end
    while true do
      local waiting, finished
      for t = 0, nthreads - 1 do
        if state[t] then
          set_thread(t)
          gk, sk, shc = gks[t], sks[t], shcs[t]
          local ok, what = co_resume(cos[t])
          if not ok then error(what, 0) end
          gks[t], sks[t], shcs[t] = gk, sk, shc
          if what == BARRIER then waiting = waiting or t
          else state[t] = false; finished = finished or t end
        end
      end
      if not waiting then return end
      if finished then
        lab_error(string.format("kernel error in block (%d,%d,%d): thread %s waits at syncthreads() but thread %s "
          .. "finished without reaching it (a barrier inside a branch not every thread takes hangs a real GPU)",
          bx, by, bz, thread_str(waiting, bdx, bdy), thread_str(finished, bdx, bdy)))
      end
      ebase = ebase + 2048
    end
  end

  local run_block = k.barriers and barrier_block or plain_block
  local poll = torch._lab_poll
  local ok, err = pcall(function()
    for z = 0, gdz - 1 do
      for y = 0, gdy - 1 do
        for x = 0, gdx - 1 do
          poll()
          new_block(x, y, z)
          run_block()
          if trace then c.trace, trace = trace, nil end
        end
      end
    end
  end)
  if k.env_index then debug.setupvalue(k.copy, k.env_index, nil) end
  if not ok then
    if type(err) == "table" and err.lab_msg then error(err.lab_msg, 0) end
    local msg = tostring(err)
    if msg:find("interrupted!", 1, true) then error(err, 0) end
    error("kernel error in " .. where() .. ": " .. msg, 0)
  end
  c.global_reads, c.global_writes, c.shared_reads, c.shared_writes = greads, gwrites, sreads, swrites
  c.sectors, c.bank_conflicts, c.atomics, c.shared_groups = nsectors, conflicts, natomics, sgroups
  c.threads = nthreads * gdx * gdy * gdz
  return c
end

-- k:launch(grid, block, ...): see the file's header and docs/kernel-lab.md.
function Kernel:launch(grid, block, ...)
  if getmetatable(self) ~= Kernel then error("launch: call it as k:launch(grid, block, ...)", 2) end
  local g = { dim3(grid, "grid") }
  local b = { dim3(block, "block") }
  local args = table.pack(...)
  -- the tensors: the device is the first one's; all must be there
  local dev, first
  local arrays, tensors = {}, {}
  for i = 1, args.n do
    local v = args[i]
    local name = self.params[i] or ("..." .. i)
    local same
    for j = 1, i - 1 do if rawequal(args[j], v) and arrays[j] then same = arrays[j] end end
    if same then
      arrays[i] = same -- the same tensor twice: one array (its first argument's name in messages)
    elseif torch.is_tensor(v) then
      local d = v.device
      if d.type ~= "cuda" then
        error(string.format("launch: argument %d (%s): kernels run on cuda devices; this tensor is on %s", i, name,
          tostring(d)), 2)
      end
      if not dev then dev, first = d, i
      elseif d.index ~= dev.index then
        error(string.format("launch: argument %d (%s) is on %s, but the kernel runs on %s (the device of argument %d, %s); "
          .. "move it with :to('%s')", i, name, tostring(d), tostring(dev), first, self.params[first] or "", tostring(dev)), 2)
      end
      arrays[i] = { argno = i, name = name, tensor = v, dtype = tostring(v.dtype):match("torch%.(%w+)") or tostring(v.dtype),
        n = v:numel() }
      arrays[i].size = elem_size[arrays[i].dtype] or 4
      tensors[#tensors + 1] = arrays[i]
    elseif type(v) ~= "number" then
      error(string.format("launch: argument %d (%s) is a %s: kernels take tensors (arrays) and numbers (scalars)", i,
        name, type(v)), 2)
    end
  end
  if not dev then error("launch: a kernel needs at least one tensor argument (its device runs the kernel)", 2) end
  -- the arguments' types, for cuda_source()
  local last = {}
  for i = 1, args.n do last[i] = arrays[i] and { dtype = arrays[i].dtype } or args[i] end
  self.last_args = last
  local m = torch.cuda.gpu_model(dev.index)
  local limit = m and m.max_threads_per_block or 1024
  if b[1] * b[2] * b[3] > limit or b[3] > 64 then
    error(string.format("launch: a block of %dx%dx%d = %d threads is over the limit (%d threads per block, z at most 64)",
      b[1], b[2], b[3], b[1] * b[2] * b[3], limit), 2)
  end
  if g[1] > 2147483647 or g[2] > 65535 or g[3] > 65535 then
    error("launch: grid too large (x at most 2^31-1, y and z at most 65535)", 2)
  end
  for _, a in ipairs(tensors) do
    local ok, e = pcall(torch._lab_fetch, a.tensor)
    if not ok then error(string.format("launch: argument %d (%s): %s", a.argno, a.name, tostring(e):gsub("^[^:]*:%d+: ", "")), 2) end
    a.data = e
  end
  torch._lab_begin(tensors[1].tensor)
  local ok, counts = pcall(run, self, g, b, args, arrays, m)
  torch._lab_end()
  if not ok then error(counts, 0) end -- nothing was written back
  local r = report.make(self.name, counts, g, b, m)
  -- the written tensors first: they carry the task's writes
  local order = {}
  for _, a in ipairs(tensors) do if a.written then order[#order + 1] = a.tensor end end
  for _, a in ipairs(tensors) do
    if a.written then torch._lab_store(a.tensor, a.data) else order[#order + 1] = a.tensor end
  end
  torch._lab_queue(self.name, r.time_ms and r.time_ms / 1000 or 0, report.bound_code(r.bound), unpack(order))
  return r
end

return M
