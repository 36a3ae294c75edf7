-- torch/init.lua: the Lua half of the torch module. luaopen_torch (C)
-- builds the table with the engine's functions and passes it here; this
-- file adds what is simplest in Lua: torch.<method> functions, device
-- helpers, and the nn/optim/utils sub-modules when present.
local torch = ...

-- Methods written in Lua (torch.normal, tile, repeat, where, masked_fill,
-- repeat_interleave, boolean-mask indexing): before the copy below.
require("torch.tensor_extra")

-- Every tensor method is also a torch function taking the tensor first:
-- torch.matmul(a, b) is a:matmul(b). Factories of the same name win.
for name, fn in pairs(torch._methods) do
  if torch[name] == nil then torch[name] = fn end
end

-- The book's helpers: cuda:i if it exists, else the CPU; all GPUs or {cpu}.
function torch.try_gpu(i)
  i = i or 0
  if math.type(i) ~= "integer" or i < 0 then
    local hint = torch.is_tensor(i) and " (a tensor's device is x.device)" or ""
    error("torch.try_gpu(i): expected a GPU ordinal, an integer >= 0 such as 0 or 1, got "
          .. require("torch.utils.errors").describe(i) .. hint, 2)
  end
  if torch.cuda.device_count() >= i + 1 then return torch.device("cuda", i) end
  return torch.device("cpu")
end

function torch.try_all_gpus()
  local devices = {}
  for i = 0, torch.cuda.device_count() - 1 do devices[#devices + 1] = torch.device("cuda", i) end
  if #devices == 0 then devices[1] = torch.device("cpu") end
  return devices
end

-- The Lua parts of the library, all compiled into the binary.
for _, name in ipairs({ "devices", "nn", "optim", "utils", "serialize", "linalg", "distributed", "profiler" }) do
  local mod = require("torch." .. name)
  if type(mod) == "table" and torch[name] == nil then torch[name] = mod end
end
-- torch.cuda.explain(fn): a roofline of fn's ops on a modelled GPU (issue 29)
torch.cuda.explain = require("torch.explain").explain
-- torch.cuda.kernel(fn): kernels written in Lua, run on simulated GPUs (issue 30)
torch.cuda.kernel = require("torch.kernel_lab").kernel

-- Convolutions: torch.conv2d and torch.conv1d (nn.functional merges the
-- same table, torch.nn.functional_conv).
do
  local conv = require("torch.nn.functional_conv")
  torch.conv2d, torch.conv1d = conv.conv2d, conv.conv1d
end

-- torch.max_pool2d, avg_pool2d, adaptive_*_pool2d, batch_norm, pad and
-- interpolate (issue 20): nn.functional's forms, also under torch for now.
for name, fn in pairs(require("torch.nn.functional_pool")) do
  if torch[name] == nil then torch[name] = fn end
end
-- d2l, the book's helpers (lua/torch/d2l/): require("d2l") is require("torch.d2l").
package.preload["d2l"] = package.preload["d2l"] or function() return require("torch.d2l") end

-- torch.cuda.Stream, Event, stream scopes, the sync debug mode.
require("torch.streams")

-- torch.cuda.comm: collectives between the devices of this process.
torch.cuda.comm = require("torch.cuda_comm")
-- torch.cuda.nccl.version() -> major, minor, patch: loads NCCL (listed by
-- torch.cuda.libraries() from then on) as a real GPU's first collective would.
torch.cuda.nccl = { version = torch._comm.nccl_version }

-- torch.backends.cuda.matmul.allow_tf32 (issue 29: the GPU models' time).
torch.backends = require("torch.backends")

-- require("torchvision"): the data sets and transforms (lua/torch/vision/),
-- loaded on first use.
package.preload.torchvision = package.preload.torchvision or function() return require("torch.vision") end

return torch
