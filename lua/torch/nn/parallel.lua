-- torch.nn.parallel: nn.DataParallel.
--
-- Each call splits the batch along `dim` with chunk semantics over the
-- devices (30 rows on 3 devices: 10, 10, 10; 10 rows: 4, 4, 2), copies the
-- wrapped module's parameters and buffers from the master (on
-- device_ids[1]) to each other device, calls the replicas in turn on the
-- calling thread, and concatenates their outputs on output_device. The
-- replica on the master device uses the master's own tensors, and the
-- copies are made with tensor:to(device), so gradients reach the master's
-- parameters through autograd wherever the engine records `to`.
--
-- Buffers: each replica gets the master's buffers moved to its device.
-- Because the replica on the master device is the master module itself,
-- a layer that updates its buffers in place (batch norm's running_mean,
-- running_var and num_batches_tracked) updates the original's with the
-- statistics of device_ids[1]'s slice of the batch, as PyTorch's
-- DataParallel does; the other replicas' updates go to their copies and
-- are dropped with them.
--
-- Why the replicas run concurrently although they are called in turn:
-- CUDA devices are asynchronous, so calling a replica only queues its
-- kernels on its device. Nothing here may make the host wait for a device
-- (item(), tolist(), a copy to the host, printing a tensor, a comparison
-- read as a Lua boolean): one such wait would let a device finish before
-- the next replica's work is even queued. spec/dataparallel_spec.lua runs
-- forward and backward under torch.cuda.set_sync_debug_mode('error').
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local options = require("torch.utils.errors").options
local errors = require("torch.utils.errors")
local base = require("torch.nn.module")

local Module, OMap = base.Module, base.OMap

local P = {}

local function mt_name(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__name or nil
end

local function devstr(d) return d.type == "cpu" and "cpu" or ("cuda:" .. tostring(d.index)) end

-- A device id given as an ordinal, 'cuda:1', or a device object -> ordinal.
local function ordinal(d, what)
  if math.type(d) == "integer" then return d end
  if type(d) == "string" or mt_name(d) == "torch.device" then
    local dev = torch.device(d)
    if dev.type ~= "cuda" then
      fail(string.format("nn.DataParallel: %s must be a CUDA device, got %s", what, tostring(dev)))
    end
    return dev.index or torch.cuda.current_device()
  end
  fail(string.format("nn.DataParallel: %s must be a CUDA ordinal or device, got %s", what, errors.describe(d)))
end

-- ------------------------------------------------------ scatter / gather

-- Splits every tensor in `args` (recursing into plain lists) into chunks
-- along dim and moves chunk i to devices[i]. Returns a list with one
-- argument list per chunk (at most #devices; fewer when the batch is
-- smaller than the number of devices).
local function scatter_one(obj, devices, dim)
  if torch.is_tensor(obj) then
    local chunks = obj:chunk(#devices, dim)
    local r = {}
    for i, c in ipairs(chunks) do r[i] = c:to(devices[i]) end
    return r
  end
  if type(obj) == "table" and getmetatable(obj) == nil then
    local parts, n = {}, nil
    local keys = {}
    for k in pairs(obj) do keys[#keys + 1] = k end
    for _, k in ipairs(keys) do
      parts[k] = scatter_one(obj[k], devices, dim)
      if parts[k] ~= false then n = n and math.min(n, #parts[k]) or #parts[k] end
    end
    if n == nil then return false end
    local r = {}
    for i = 1, n do
      local t = {}
      for _, k in ipairs(keys) do t[k] = parts[k] == false and obj[k] or parts[k][i] end
      r[i] = t
    end
    return r
  end
  return false -- not scattered: every replica gets it as is
end

-- DataParallel's own split of its argument list (args.n arguments).
local function scatter_args(args, devices, dim)
  local per, n = {}, nil
  for i = 1, args.n do
    per[i] = scatter_one(args[i], devices, dim)
    if per[i] ~= false then n = n and math.min(n, #per[i]) or #per[i] end
  end
  if n == nil then n = 1 end -- no tensors at all: one call on the first device
  local inputs = {}
  for c = 1, n do
    local a = { n = args.n }
    for i = 1, args.n do a[i] = per[i] == false and args[i] or per[i][c] end
    inputs[c] = a
  end
  return inputs
end

-- nn.parallel.scatter(inputs, target_gpus[, dim = 1]), PyTorch's public
-- contract: a tensor -> its chunks along dim, one per device (fewer when
-- it has fewer rows); a list -> one list per device with each tensor in it
-- split; anything else -> the same value once per device.
function P.scatter(inputs, target_gpus, dim)
  if type(target_gpus) ~= "table" or getmetatable(target_gpus) ~= nil or #target_gpus == 0 then
    fail("nn.parallel.scatter(inputs, target_gpus[, dim]): target_gpus must be a non-empty list of CUDA devices "
      .. "such as {0, 1}, got " .. errors.describe(target_gpus))
  end
  dim = dim or 1
  if math.type(dim) ~= "integer" then fail("nn.parallel.scatter: dim must be an integer, got " .. errors.describe(dim)) end
  local devices = {}
  for i, d in ipairs(target_gpus) do devices[i] = torch.device("cuda", ordinal(d, "target_gpus[" .. i .. "]")) end
  local r = scatter_one(inputs, devices, dim)
  if r then return r end
  r = {}
  for i = 1, #devices do r[i] = inputs end
  return r
end

local function gather(outputs, target, dim)
  local first = outputs[1]
  if torch.is_tensor(first) then
    local moved = {}
    local scalars = first:dim() == 0
    if scalars then
      io.stderr:write("UserWarning: Was asked to gather along dimension " .. dim .. ", but all input tensors were "
        .. "scalars; will instead unsqueeze and return a vector.\n")
    end
    for i, o in ipairs(outputs) do
      local t = o:to(target)
      if scalars then t = t:reshape(1) end
      moved[i] = t
    end
    return torch.cat(moved, scalars and 1 or dim)
  end
  if type(first) == "table" and getmetatable(first) == nil then
    local r = {}
    for k in pairs(first) do
      local col = {}
      for i, o in ipairs(outputs) do col[i] = o[k] end
      r[k] = gather(col, target, dim)
    end
    return r
  end
  if first == nil then return nil end
  fail("nn.DataParallel: cannot gather outputs of type " .. type(first) .. " (tensors or lists of tensors expected)")
end

-- nn.parallel.gather(outputs, target_device[, dim = 1]): the outputs
-- (tensors, or lists of them) concatenated along dim on target_device (an
-- ordinal, a device, or -1 / 'cpu' for the CPU), as PyTorch's.
function P.gather(outputs, target_device, dim)
  if type(outputs) ~= "table" or getmetatable(outputs) ~= nil or #outputs == 0 then
    fail("nn.parallel.gather(outputs, target_device[, dim]): outputs must be a non-empty list, got "
      .. errors.describe(outputs))
  end
  local target
  if target_device == -1 or target_device == "cpu" or (mt_name(target_device) == "torch.device"
      and target_device.type == "cpu") then
    target = torch.device("cpu")
  else
    target = torch.device("cuda", ordinal(target_device, "target_device"))
  end
  dim = dim or 1
  if math.type(dim) ~= "integer" then fail("nn.parallel.gather: dim must be an integer, got " .. errors.describe(dim)) end
  return gather(outputs, target, dim)
end

-- ------------------------------------------------------------- replicate

-- A copy of the module tree whose parameters and buffers are the
-- master's moved to `device` (the same tensors when already there).
-- Plain attributes are shared, as in PyTorch's replicate.
local function replicate(module, device, memo, tmemo)
  if memo[module] then return memo[module] end
  local r = setmetatable({}, getmetatable(module))
  memo[module] = r
  local function move(t)
    if tmemo[t] == nil then tmemo[t] = t:to(device) end
    return tmemo[t]
  end
  local params, bufs, mods = OMap.new(), OMap.new(), OMap.new()
  for k, p in module._parameters:items() do params:set(k, move(p)) end
  for k, b in module._buffers:items() do bufs:set(k, move(b)) end
  for k, m in module._modules:items() do mods:set(k, replicate(m, device, memo, tmemo)) end
  local attrs = {}
  for k, v in pairs(module._attrs) do attrs[k] = v end
  rawset(r, "_parameters", params)
  rawset(r, "_buffers", bufs)
  rawset(r, "_non_persistent", module._non_persistent)
  rawset(r, "_modules", mods)
  rawset(r, "_attrs", attrs)
  rawset(r, "_is_replica", true)
  return r
end
P.replicate = function(module, device) return replicate(module, device, {}, {}) end

-- ---------------------------------------------------------- DataParallel

-- nn.DataParallel(module[, {device_ids = {0, 1, ...}, output_device = 0,
-- dim = 1}]): device_ids default to every CUDA device, output_device to
-- device_ids[1], dim (1-based) to the batch dimension. Without CUDA
-- devices it simply calls the module.
local DataParallel = Module:extend("DataParallel")
P.DataParallel = DataParallel

function DataParallel:init(module, opts)
  if not base.is_module(module) then
    fail("nn.DataParallel: expected a module to wrap, got " .. type(module))
  end
  if opts ~= nil and type(opts) ~= "table" then
    fail("nn.DataParallel(module[, options]): expected an options table such as {device_ids = {0, 1}} "
         .. "(or a list of devices, {0, 1}) as the second argument, got " .. errors.describe(opts))
  end
  opts = options(opts, "nn.DataParallel")
  -- a list is PyTorch's positional device_ids: nn.DataParallel(m, {0, 1})
  if getmetatable(opts) == nil and rawget(opts, 1) ~= nil then
    if opts.device_ids ~= nil then
      fail("nn.DataParallel: devices given twice, as a list and as device_ids")
    end
    local ids = {}
    for i, d in ipairs(opts) do ids[i] = d end
    local rest = {}
    for k, v in pairs(opts) do if math.type(k) ~= "integer" then rest[k] = v end end
    rest.device_ids = ids
    opts = rest
  end
  check_options(opts, "nn.DataParallel", { "device_ids", "output_device", "dim" })
  self.module = module
  self.dim = opts.dim or 1
  if math.type(self.dim) ~= "integer" then fail("nn.DataParallel: dim must be an integer") end
  local n = torch.cuda.device_count()
  local ids = {}
  if n > 0 then
    if opts.device_ids then
      if type(opts.device_ids) ~= "table" then
        fail("nn.DataParallel: device_ids must be a list of devices such as {0, 1}, got " .. errors.describe(opts.device_ids))
      end
      for i, d in ipairs(opts.device_ids) do ids[i] = ordinal(d, "device_ids[" .. i .. "]") end
    else
      for i = 0, n - 1 do ids[#ids + 1] = i end
    end
    for _, id in ipairs(ids) do
      if id < 0 or id >= n then
        fail(string.format("nn.DataParallel: device_ids has cuda:%d, but only %d CUDA device(s) exist", id, n))
      end
    end
    if #ids == 0 then fail("nn.DataParallel: device_ids is empty") end
  end
  self.device_ids = ids
  if #ids > 0 then
    local out = opts.output_device
    if out == nil then
      self.output_device = torch.device("cuda", ids[1])
    elseif out == "cpu" or out == -1 or (mt_name(out) == "torch.device" and out.type == "cpu") then
      self.output_device = torch.device("cpu")
    else
      self.output_device = torch.device("cuda", ordinal(out, "output_device"))
    end
    self.src_device = torch.device("cuda", ids[1])
  end
end

function DataParallel:forward(...)
  local args = table.pack(...)
  if #self.device_ids == 0 then return self.module(...) end
  local src = self.src_device
  for _, list in ipairs({ self.module:named_parameters(), self.module:named_buffers() }) do
    for _, kv in ipairs(list) do
      if kv[2].device ~= src then
        fail(string.format("module must have its parameters and buffers on device %s (device_ids[1]) but found "
          .. "one of them on device: %s", devstr(src), devstr(kv[2].device)))
      end
    end
  end
  local devices = {}
  for i, id in ipairs(self.device_ids) do devices[i] = torch.device("cuda", id) end
  local inputs = scatter_args(args, devices, self.dim)
  if #self.device_ids == 1 then
    return self.module(table.unpack(inputs[1], 1, inputs[1].n))
  end
  -- Every replica is made before any of them runs, as PyTorch's
  -- replicate() then parallel_apply(): a copy between devices is ordered
  -- after the work already queued on its source, so copying the master's
  -- parameters after the master's forward was queued would make the
  -- other devices wait for that whole forward.
  local replicas = { self.module }
  for i = 2, #inputs do replicas[i] = replicate(self.module, devices[i], {}, {}) end
  local outputs = {}
  for i, inp in ipairs(inputs) do outputs[i] = replicas[i](table.unpack(inp, 1, inp.n)) end
  return gather(outputs, self.output_device, self.dim)
end

return P
