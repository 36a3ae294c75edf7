-- torch.cuda.comm: collectives between the devices of one process, as
-- PyTorch's. On real GPUs broadcast and reduce_add run on NCCL; on
-- simulated devices every move is one of the engine's device-to-device
-- copies (counted in torch.cuda.transfers()). Dims are 1-based.
--   broadcast(t, devices)                 -> {t on devices[1], ...}
--   reduce_add(tensors[, destination])    -> their sum on destination
--   scatter(t, devices[, {dim =, chunk_sizes =}]) -> chunks, one per device
--   gather(tensors[, {dim =, destination =}])     -> concatenation
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local C = torch._comm

local M = {}

local check_options = require("torch.utils.errors").check_options

local function check_keys(fn, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" then fail(string.format("torch.cuda.comm.%s: options must be a table, got %s", fn, type(opts))) end
  check_options(opts, "torch.cuda.comm." .. fn, allowed)
  return opts
end

-- An ordinal, 'cuda:i' or a device object -> a device (CUDA ones only
-- unless cpu_ok, where -1 and 'cpu' mean the CPU, as PyTorch's gather).
local function device_of(fn, d, cpu_ok)
  if math.type(d) == "integer" then
    if d == -1 and cpu_ok then return torch.device("cpu") end
    if d < 0 then fail(string.format("torch.cuda.comm.%s: device ordinals are >= 0, got %d", fn, d)) end
    return torch.device("cuda", d)
  end
  local ok, dev = pcall(torch.device, d)
  if not ok then fail("torch.cuda.comm." .. fn .. ": " .. tostring(dev)) end
  if dev.type == "cpu" and not cpu_ok then
    fail(string.format("torch.cuda.comm.%s: expected CUDA devices, got cpu", fn))
  end
  if dev.type == "cuda" and dev.index == nil then return torch.device("cuda", torch.cuda.current_device()) end
  return dev
end

local function devices_of(fn, devices)
  if type(devices) ~= "table" or getmetatable(devices) ~= nil or #devices == 0 then
    fail(string.format("torch.cuda.comm.%s: expected a non-empty list of devices, got %s", fn, type(devices)))
  end
  local r = {}
  for i, d in ipairs(devices) do r[i] = device_of(fn, d, false) end
  return r
end

local function check_tensor(fn, t, what)
  if not torch.is_tensor(t) then
    fail(string.format("torch.cuda.comm.%s: %s must be a tensor, got %s", fn, what, type(t)))
  end
end

local function tensors_of(fn, list)
  if type(list) ~= "table" or getmetatable(list) ~= nil or #list == 0 then
    fail(string.format("torch.cuda.comm.%s: expected a non-empty list of tensors", fn))
  end
  for i, t in ipairs(list) do check_tensor(fn, t, "element " .. i) end
  return list
end

-- A 1-based dim (negatives from the end) -> 0-based for the engine.
local function dim0(fn, dim, ndim)
  if math.type(dim) ~= "integer" then fail(string.format("torch.cuda.comm.%s: dim must be an integer", fn)) end
  local d = dim < 0 and dim + ndim or dim - 1
  if d < 0 or d >= ndim then
    fail(string.format("torch.cuda.comm.%s: dim %d is out of range for a %d-dimensional tensor", fn, dim, ndim))
  end
  return d
end

function M.broadcast(t, devices)
  check_tensor("broadcast", t, "the tensor")
  return C.broadcast(t, devices_of("broadcast", devices))
end

function M.reduce_add(inputs, destination)
  tensors_of("reduce_add", inputs)
  local dst = destination == nil and torch.device("cuda", torch.cuda.current_device())
    or device_of("reduce_add", destination, false)
  return C.reduce_add(inputs, dst)
end

function M.scatter(t, devices, opts)
  check_tensor("scatter", t, "the tensor")
  opts = check_keys("scatter", opts, { "dim", "chunk_sizes" })
  local devs = devices_of("scatter", devices)
  if t:dim() == 0 then fail("torch.cuda.comm.scatter: cannot scatter a 0-dimensional tensor") end
  return C.scatter(t, devs, opts.chunk_sizes, dim0("scatter", opts.dim or 1, t:dim()))
end

function M.gather(tensors, opts)
  tensors_of("gather", tensors)
  opts = check_keys("gather", opts, { "dim", "destination" })
  local dst = opts.destination == nil and torch.device("cuda", torch.cuda.current_device())
    or device_of("gather", opts.destination, true)
  local nd = tensors[1]:dim()
  if nd == 0 then fail("torch.cuda.comm.gather: cannot gather 0-dimensional tensors (gather concatenates along a dim)") end
  return C.gather(tensors, dim0("gather", opts.dim or 1, nd), dst)
end

return M
