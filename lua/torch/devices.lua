-- torch/devices.lua: the Lua half of device handling (the C half is
-- src/bind/lua_device.c). Adds to the torch table:
--   torch.with_device(dev, fn, ...)      run fn with a default device
--   torch.device_scope(dev)              the same as a to-be-closed value:
--                                          local s <close> = torch.device_scope('cuda:1')
--   torch.cuda.device(dev[, fn])         PyTorch's torch.cuda.device: with fn,
--                                          runs it with `dev` as the current device
--   torch.cuda.smi() / smi_text()        an nvidia-smi-style table
--   torch.cuda.memory_summary([dev])     allocator figures, in words
-- and returns a table of helpers that init.lua installs as torch.devices.
local torch = require("torch")
local cuda = torch.cuda

local M = {}

-- "1.50 GiB", "512 bytes": the units the engine's OOM message uses.
function M.format_bytes(n)
  local units = { "bytes", "KiB", "MiB", "GiB", "TiB" }
  local u, v = 1, n
  while v >= 1024 and u < #units do v = v / 1024; u = u + 1 end
  if u == 1 then return string.format("%d bytes", n) end
  return string.format("%.2f %s", v, units[u])
end

-- Sets the default device back to `prev` even if that device is gone
-- (simulated GPUs reconfigured inside the scope): then the CPU.
local function restore_default(prev)
  if not pcall(torch.set_default_device, prev) then torch.set_default_device("cpu") end
end

---------------------------------------------------------------------------
-- Default-device scopes (TensorFlow's `with tf.device(...)`)
---------------------------------------------------------------------------

-- torch.with_device(dev, fn, ...): calls fn(...) with `dev` as the default
-- device for factories, restores the previous default whether fn returns
-- or raises, and returns fn's results (or re-raises its error).
function torch.with_device(dev, fn, ...)
  if type(fn) ~= "function" then
    local mt = getmetatable(fn)
    if not (mt and mt.__call) then
      error("torch.with_device(dev, fn): expected a function as the second argument, got " .. type(fn), 2)
    end
  end
  local prev = torch._default_device_raw()
  torch.set_default_device(dev) -- a bad device raises here, before anything changed
  local res = table.pack(pcall(fn, ...))
  restore_default(prev)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

local Scope = {}
Scope.__index = Scope
Scope.__name = "torch.device_scope"

-- Restores the default device the scope replaced; safe to call twice.
function Scope:close()
  if rawget(self, "closed") then return end
  rawset(self, "closed", true)
  restore_default(self.previous)
end
Scope.__close = function(self) self:close() end
Scope.__tostring = function(self)
  return string.format("<torch.device_scope %s%s>", tostring(self.device), rawget(self, "closed") and " (closed)" or "")
end

-- torch.device_scope(dev): makes `dev` the default device now and returns
-- a scope object that restores the previous default when closed. Declare
-- it `<close>` and Lua closes it when the block ends, normally or by an
-- error:
--   do
--     local s <close> = torch.device_scope(try_gpu(1))
--     Y = torch.rand(2, 3)            -- on cuda:1
--   end                               -- default device restored here
function torch.device_scope(dev)
  local prev = torch._default_device_raw()
  torch.set_default_device(dev)
  return setmetatable({ device = torch.get_default_device(), previous = prev }, Scope)
end

---------------------------------------------------------------------------
-- torch.cuda.device: PyTorch's current-device context
---------------------------------------------------------------------------

local CudaDevice = {}
CudaDevice.__index = CudaDevice
CudaDevice.__name = "torch.cuda.device"
CudaDevice.__tostring = function(self) return self._repr end

-- torch.cuda.device(dev) is an object naming a CUDA device; it prints as
-- in PyTorch (<torch.cuda.device at 0x...>) and changes nothing by itself.
-- torch.cuda.device(dev, fn, ...) runs fn with `dev` as the current device
-- (what 'cuda' and x:cuda() mean), then restores the previous one.
function cuda.device(dev, fn, ...)
  local ok, d = pcall(torch.device, dev) -- (called from pcall: its message has no position of ours)
  if not ok then error("torch.cuda.device: " .. tostring(d), 2) end
  if d.type ~= "cuda" then error("torch.cuda.device: expected a CUDA device, got " .. tostring(d), 2) end
  local obj = { idx = d.index }
  obj._repr = string.format("<torch.cuda.device at %s>", tostring(obj):match("0x%x+") or tostring(obj))
  setmetatable(obj, CudaDevice)
  if fn == nil then return obj end
  if type(fn) ~= "function" then
    error("torch.cuda.device(dev, fn): expected a function as the second argument, got " .. type(fn), 2)
  end
  local i, why = cuda._ordinal(d) -- a device that does not exist: an error at the caller's line
  if not i then error("torch.cuda.device: " .. why, 2) end
  local prev = cuda.current_device()
  cuda.set_device(i)
  local res = table.pack(pcall(fn, ...))
  pcall(cuda.set_device, prev)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

---------------------------------------------------------------------------
-- nvidia-smi
---------------------------------------------------------------------------

local function mib(n)
  if n > 0 and n < 1048576 then return string.format("%dKiB", math.ceil(n / 1024)) end
  return string.format("%dMiB", math.floor(n / 1048576 + 0.5))
end

local function pad(s, w, right)
  if #s > w then s = s:sub(1, w - 3) .. "..." end
  if right then return string.rep(" ", w - #s) .. s end
  return s .. string.rep(" ", w - #s)
end

-- The text of torch.cuda.smi(): every CUDA device with its name, memory
-- used (reserved by this process: live tensors plus the allocator's
-- cache, what nvidia-smi would show) and total, utilisation where known
-- (simulated devices: the share of time spent in kernels since the last
-- reading), then this process. Simulated devices are labelled as such.
function cuda.smi_text()
  local out = {}
  local function line(s) out[#out + 1] = s end
  local n = cuda.device_count()
  local sim = cuda.is_simulated()
  local W = 87 -- inner width
  line(os.date("%a %b %d %H:%M:%S %Y"))
  if n == 0 then
    line("No devices were found")
    line("(gshell sees no CUDA devices: start it with --sim-gpus N, or set GSHELL_SIM_GPUS=N, to simulate some;")
    line(" try_gpu() gives cpu meanwhile.)")
    return table.concat(out, "\n")
  end
  local bar = "+" .. string.rep("-", W) .. "+"
  local sep3 = "+" .. string.rep("-", 41) .. "+" .. string.rep("-", 22) .. "+" .. string.rep("-", 22) .. "+"
  local mid3 = "|" .. string.rep("-", 41) .. "+" .. string.rep("-", 22) .. "+" .. string.rep("-", 22) .. "|"
  local eq3 = "|" .. string.rep("=", 41) .. "+" .. string.rep("=", 22) .. "+" .. string.rep("=", 22) .. "|"
  local kind = sim and string.format("Simulated GPUs: %d (host memory, CPU kernels)", n)
    or string.format("CUDA GPUs: %d", n)
  line(bar)
  line("| " .. pad("GSHELL-SMI " .. (torch.__version__ or ""), 24) .. pad(kind, W - 26, true) .. " |")
  line(mid3)
  line("| " .. pad("GPU  Name", 28) .. pad(sim and "Simulated" or "", 11, true) .. " | "
    .. pad("Memory-Usage", 20) .. " | " .. pad("GPU-Util  Kernels", 20) .. " |")
  line(eq3)
  local procs = {}
  for i = 0, n - 1 do
    local p = cuda.get_device_properties(i)
    local free, total = cuda.mem_get_info(i)
    local used = cuda.memory_reserved(i)
    local util = cuda.utilization(i)
    local st = cuda.memory_stats(i)
    local kernels = st.num_kernels and tostring(st.num_kernels) or "N/A"
    -- the Simulated column says it: the row has the modelled GPU's own name
    local name = p.name:gsub(" %(simulated%)$", "")
    line("| " .. pad(string.format("%3d  %s", i, name), 33) .. pad(p.simulated and "Yes" or "No", 6, true) .. " | "
      .. pad(mib(used) .. " / " .. mib(total), 20, true) .. " | "
      .. pad((util and (util .. "%") or "N/A"), 8, true) .. "  " .. pad(kernels, 7, true) .. "   |")
    line(sep3)
    procs[#procs + 1] = { i, used }
  end
  line("")
  line(bar)
  line("| " .. pad("Processes:", W - 2) .. " |")
  line("| " .. pad(" GPU        PID   Type   Process name", W - 14) .. pad("GPU Memory", 12, true) .. " |")
  line("| " .. pad("", W - 14) .. pad("Usage", 12, true) .. " |")
  line("|" .. string.rep("=", W) .. "|")
  local pid = cuda._getpid()
  for _, pr in ipairs(procs) do
    line("| " .. pad(string.format("%4d  %9d      C   %s", pr[1], pid, "gshell (this process)"), W - 14)
      .. pad(mib(pr[2]), 12, true) .. " |")
  end
  line(bar)
  if sim then
    line(string.format("%s simulated by gshell: each has its own memory accounting (capped at %s),",
      n == 1 and "This GPU is" or ("These " .. n .. " GPUs are"), M.format_bytes(cuda.get_device_properties(0).total_memory)))
    line("but the memory is host memory and the kernels run on the CPU. No real GPU is used.")
    -- which GPUs they stand for (issue 29: GSHELL_GPU_MODEL, --gpu-model)
    local models, seen = {}, {}
    for i = 0, n - 1 do
      local m = cuda.gpu_model(i)
      local key = m and (m.name .. " (" .. m.key .. ")") or "no GPU: this machine's own time (host)"
      if not seen[key] then seen[key] = true; models[#models + 1] = key end
    end
    local lead = #models > 1 and "They model: " or n == 1 and "It models a " or "Each models a "
    line(lead .. table.concat(models, ", ")
      .. "; torch.cuda.gpu_model(i) gives the figures.")
    local cold = cuda._sim_context_ms()
    if cold > 0 then
      line(string.format("Cold start modelled: the first use of each device in this process waits %d ms, as creating", cold))
      line(string.format("a CUDA context does on a real GPU (GSHELL_SIM_CONTEXT_MS=%d).", cold))
    end
  end
  return table.concat(out, "\n")
end

-- torch.cuda.smi(): prints the table (the `!nvidia-smi` of the book).
function cuda.smi()
  print(cuda.smi_text())
end

-- torch.cuda.memory_summary([dev]): the allocator's figures for one device.
function cuda.memory_summary(dev)
  local st = cuda.memory_stats(dev)
  local free, total = cuda.mem_get_info(dev)
  local d = dev == nil and cuda.current_device() or torch.device(dev).index or cuda.current_device()
  local fb = M.format_bytes
  local rows = {
    string.format("memory summary of cuda:%d%s", d, cuda.is_simulated() and " (simulated)" or ""),
    string.format("  allocated: %s (peak %s)", fb(st["allocated_bytes.all.current"]), fb(st["allocated_bytes.all.peak"])),
    string.format("  reserved:  %s (allocated + cached)", fb(st["reserved_bytes.all.current"])),
    string.format("  free:      %s of %s", fb(free), fb(total)),
  }
  if st["allocation.all.current"] then
    rows[#rows + 1] = string.format("  blocks:    %d live, %d allocations, %d served from the cache, %d OOMs",
      st["allocation.all.current"], st["allocation.all.allocated"], st["num_cache_hits"], st["num_ooms"])
  end
  return table.concat(rows, "\n")
end

return M
