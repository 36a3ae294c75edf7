-- examples/exercise2_save_on_gpu.lua: the GPU chapter's exercise 2.
-- "How should we read and write model parameters on the GPU?"
--
--   build/gshell --sim-gpus 2 examples/exercise2_save_on_gpu.lua
--   build/gshell examples/exercise2_save_on_gpu.lua            (CPU only)
--
-- torch.save writes a state dict (safetensors); each tensor's device is
-- kept in the file and restored on load, unless map_location says
-- otherwise. A file saved on a GPU therefore loads on a machine without
-- one only with map_location = 'cpu'. Files go to a temporary directory.
torch = torch or require("torch")
nn = nn or torch.nn
try_gpu = try_gpu or torch.try_gpu

torch.manual_seed(0)
local dev = try_gpu()
local net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)):to(dev)
print("parameters on", net[1].weight.device)

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p '" .. dir .. "'"))
local path = dir .. "/mlp.safetensors"

-- write: the state dict, never the module itself
torch.save(net:state_dict(), path)

-- read back as saved: the tensors return to the device they came from
local sd = torch.load(path)
for name, t in pairs(sd) do print(string.format("  %-10s %-20s %s", name, tostring(t.shape), tostring(t.device))) end

-- read onto the CPU, e.g. on a machine without a GPU
local on_cpu = torch.load(path, { map_location = "cpu" })
print("with map_location = 'cpu':", on_cpu["1.weight"].device)

-- a fresh model on the CPU takes the GPU's weights (load_state_dict copies)
local clone = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
print(clone:load_state_dict(sd))
local X = torch.randn(3, 4)
local same = torch.allclose(clone(X), net(X:to(dev)):cpu(), { atol = 1e-6 })
print("same outputs on the cpu and on " .. tostring(dev) .. ":", same)
assert(same)
os.remove(path)
os.remove(dir)
