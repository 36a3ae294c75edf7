-- examples/device_scopes.lua: choosing where tensors go without passing
-- `device =` everywhere -- the TensorFlow version of the GPU chapter
-- (`with tf.device('/GPU:1'): ...`, tf.debugging.set_log_device_placement)
-- written with gshell's scopes.
--
--   build/gshell --sim-gpus 2 examples/device_scopes.lua
--   GSHELL_SIM_GPUS=2 LUA_CPATH="build/?.so;;" lua5.4 examples/device_scopes.lua
--
-- With fewer GPUs, try_gpu(i) is the cpu and every step still runs.

-- %%
torch = torch or require("torch")
try_gpu = try_gpu or torch.try_gpu

local function step(title) print("\n== " .. title) end
local function message(err) return (tostring(err):gsub("^.-:%d+: ", "")) end

-- %% The default device: where factories put tensors when no device is given
step("torch.get_default_device()")
print(torch.get_default_device())

-- %% A block with a default device: `local s <close>` restores it at `end`
step("do local s <close> = torch.device_scope(try_gpu()) ... end")
do
  local s <close> = torch.device_scope(try_gpu())
  X = torch.ones(2, 3)            -- no device given: goes to try_gpu()
  print(s)
end
print("X.device:", X.device)
print("afterwards the default is", torch.get_default_device())

-- %% A function with a default device: torch.with_device(dev, fn) returns fn's results
step("Y = torch.with_device(try_gpu(1), function() return torch.rand(2, 3) end)")
Y = torch.with_device(try_gpu(1), function() return torch.rand(2, 3) end)
print(Y)

-- %% Scopes nest, and an error inside one still restores the default
step("nested scopes and errors")
torch.with_device(try_gpu(0), function()
  print("outer:", torch.zeros(1).device)
  torch.with_device(try_gpu(1), function() print("inner:", torch.zeros(1).device) end)
  print("outer again:", torch.zeros(1).device)
end)
local ok, err = pcall(function()
  local s <close> = torch.device_scope(try_gpu(1))
  error("something failed inside the scope")
end)
print("error:", message(err))
print("default after the error:", torch.get_default_device())

-- %% `with try_gpu(1): Z2 = Z` -- a scope does not move existing tensors
step("Z2 = Z inside a scope is the same object")
Z = X
local Z2 = torch.with_device(try_gpu(1), function() return Z end)
print("rawequal(Z2, Z):", rawequal(Z2, Z), " Z2.device:", Z2.device)

-- %% Scopes set where tensors are made; ops run where their inputs are
step("ops follow their inputs, not the scope")
torch.with_device(try_gpu(1), function()
  local sum = X + X                -- X lives on try_gpu(0): so does the sum
  print("X + X on", sum.device)
end)

-- %% The current CUDA device: what 'cuda' and x:cuda() mean (PyTorch's torch.cuda.device)
if torch.cuda.device_count() >= 2 then
  step("torch.cuda.device(1, fn): 'cuda' means cuda:1 inside fn")
  torch.cuda.device(1, function()
    print("current device:", torch.cuda.current_device(), " torch.ones(1):cuda().device:", torch.ones(1):cuda().device)
  end)
  print("current device afterwards:", torch.cuda.current_device())
end

-- %% The placement log: one line per op, naming its device (as TensorFlow prints)
step("torch.set_log_device_placement(true)")
torch.set_log_device_placement(true)
local A = torch.ones(2, 2, { device = try_gpu() })
local B = A:matmul(A) + 1
local total = B:sum()
local on_host = B:cpu()
torch.set_log_device_placement(false)

-- %% Mistakes get clear messages
step("bad devices")
for _, bad in ipairs({ "gpu:0", "cuda:7", "cuda:-1" }) do
  local ok2, e = pcall(torch.device_scope, bad)
  print(string.format("torch.device_scope(%q): %s", bad, message(e)))
end
print(string.format("torch.ones(2, {dtype = 'cuda:0'}): %s", message(select(2, pcall(torch.ones, 2, { dtype = "cuda:0" })))))
