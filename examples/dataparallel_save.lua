-- examples/dataparallel_save.lua: the `module.` prefix. nn.DataParallel
-- keeps the wrapped model in its `module` field, so its state dict's keys
-- start with "module."; a plain model does not have them. Save
-- model.module:state_dict() to load into a plain model later (or strip the
-- prefix), as PyTorch users do.
--
--   build/gshell --sim-gpus 2 examples/dataparallel_save.lua
--   build/gshell examples/dataparallel_save.lua                (CPU only)
torch = torch or require("torch")
nn = nn or torch.nn
try_gpu = try_gpu or torch.try_gpu

torch.manual_seed(0)
local function make() return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)) end
local model = nn.DataParallel(make()):to(try_gpu())

local function keys(sd)
  local k = {}
  for name in pairs(sd) do k[#k + 1] = name end
  return table.concat(k, ", ")
end
print("DataParallel keys:   " .. keys(model:state_dict()))
print("model.module keys:   " .. keys(model.module:state_dict()))

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p '" .. dir .. "'"))

-- 1. the usual way: save the wrapped module's state dict
torch.save(model.module:state_dict(), dir .. "/plain.safetensors")
local plain = make()
print("load into a plain model:", plain:load_state_dict(torch.load(dir .. "/plain.safetensors", { map_location = "cpu" })))

-- 2. a checkpoint saved from the wrapper has the prefix: strip it
torch.save(model:state_dict(), dir .. "/wrapped.safetensors")
local wrapped = torch.load(dir .. "/wrapped.safetensors", { map_location = "cpu" })
local ok = pcall(function() return make():load_state_dict(wrapped) end)
print("loading 'module.' keys into a plain model works:", ok)
local stripped = nn.OrderedDict()
for name, t in pairs(wrapped) do stripped[(name:gsub("^module%.", ""))] = t end
local other = make()
print("after stripping the prefix:", other:load_state_dict(stripped))

local X = torch.randn(2, 3)
assert(torch.allclose(plain(X), other(X)) and torch.allclose(plain(X), model(X:to(try_gpu())):cpu(), { atol = 1e-6 }))
print("all three give the same outputs")
os.remove(dir .. "/plain.safetensors")
os.remove(dir .. "/wrapped.safetensors")
os.remove(dir)
