-- examples/gpu_chapter.lua: the "GPU" chapter of Dive into Deep Learning,
-- step by step in gshell. Every `In [n]` of the book's PyTorch session is a
-- cell here (cells are split by `-- %%` lines, so `gshell --notebook` runs
-- it as a notebook).
--
--   build/gshell --sim-gpus 2 examples/gpu_chapter.lua   two simulated GPUs
--   build/gshell -i examples/gpu_chapter.lua             then stay at the prompt
--                                                        (X, Y, Z, net are globals)
--   GSHELL_SIM_GPUS=2 LUA_CPATH="build/?.so;;" lua5.4 examples/gpu_chapter.lua
--
-- It runs with any number of GPUs, real or simulated, including none:
-- then try_gpu() is the cpu, and the steps that need a second GPU say so.

-- %% Setup: gshell has these globals already; stock Lua needs the module.
torch = torch or require("torch")
nn = nn or torch.nn
try_gpu = try_gpu or torch.try_gpu
try_all_gpus = try_all_gpus or torch.try_all_gpus

local function show(...) -- prints values the way the REPL shows them
  local parts = table.pack(...)
  for i = 1, parts.n do
    local v = parts[i]
    if type(v) == "table" and getmetatable(v) == nil then
      local items = {}
      for j, x in ipairs(v) do items[j] = tostring(x) end
      parts[i] = "{" .. table.concat(items, ", ") .. "}"
    else
      parts[i] = tostring(v)
    end
  end
  print(table.concat(parts, "\t", 1, parts.n))
end

local function step(title) print("\n== " .. title) end

-- An error as the chapter prints every one: "error: " and the message,
-- without the file:line that says where this script caught it.
local function error_text(e)
  return "error: " .. (tostring(e):gsub("^[^\n]-:%d+: ", ""))
end

local ngpu = torch.cuda.device_count()
if ngpu == 0 then
  print("No GPU here: try_gpu() gives the cpu, so everything below runs on the cpu.")
  print("(Start gshell with --sim-gpus 2, or set GSHELL_SIM_GPUS=2, to simulate two GPUs.)")
elseif torch.cuda.is_simulated() then
  print(string.format("%d simulated GPU(s): they behave like CUDA devices (own memory, copies, errors,", ngpu))
  print("work queued and run while Lua goes on), but compute on a share of the CPU's cores.")
  local note = (d2l or require("d2l")).timing_note()
  if note ~= "" then print("The times they report are" .. note:gsub("^ %((.*)%)$", " %1") .. ".") end
  print("Nothing here needs a real GPU.")
end

-- %% In [1]: !nvidia-smi
step("!nvidia-smi  ->  torch.cuda.smi()")
torch.cuda.smi()

-- %% Computing devices
step("torch.device('cpu'), torch.device('cuda'), torch.device('cuda:1')")
show(torch.device("cpu"), torch.device("cuda"), torch.device("cuda:1"))

step("torch.cuda.device_count()")
show(torch.cuda.device_count())

-- %% The book's helpers (gshell defines them; this is how they read)
--   function try_gpu(i)       -- cuda:i if it exists, else the cpu
--     i = i or 0
--     if torch.cuda.device_count() >= i + 1 then return torch.device('cuda', i) end
--     return torch.device('cpu')
--   end
step("try_gpu(), try_gpu(10), try_all_gpus()")
show(try_gpu(), try_gpu(10), try_all_gpus())

-- %% Tensors and GPUs: by default tensors are made on the CPU
step("X = torch.tensor({1, 2, 3}); X.device")
X = torch.tensor({ 1, 2, 3 })
show(X.device)

-- %% Storage on the GPU: give a device when making the tensor
step("X = torch.ones(2, 3, {device = try_gpu()})")
X = torch.ones(2, 3, { device = try_gpu() })
show(X)

step("Y = torch.rand(2, 3, {device = try_gpu(1)})")
Y = torch.rand(2, 3, { device = try_gpu(1) })
show(Y)

-- %% Copying: to compute X + Y both must be on one device
step("Z = X:cuda(1); print(X); print(Z)")
if ngpu >= 2 then
  Z = X:cuda(1)
else
  -- X:cuda(1) needs a second GPU; try_gpu(1) is where Y is on this machine
  local _, why = pcall(function() return X:cuda(1) end)
  print(string.format("(only %d GPU(s): X:cuda(1) fails)", ngpu))
  print(error_text(why))
  Z = X:to(try_gpu(1))
end
print(X)
print(Z)

step("Y + Z")
show(Y + Z)

step("rawequal(Z:cuda(1), Z)  -- Python's `Z.cuda(1) is Z`")
if ngpu >= 2 then
  show(rawequal(Z:cuda(1), Z))
else
  show(rawequal(Z:to(try_gpu(1)), Z), "(Z:to(try_gpu(1)): already there, so the same object)")
end

-- %% Do not simply add X and Y: they live on different devices
step("X + Y")
local ok, err = pcall(function() return X + Y end)
if ok then
  print("(X and Y are on the same device on this machine, so X + Y works:)")
  show(err)
else
  print(error_text(err))
end

-- %% Side note: copies are slow, so gshell counts them
step("torch.cuda.transfers()")
torch.cuda.reset_transfers()
local _ = tostring(Z)          -- printing a GPU tensor copies it to the host
local big = torch.rand(100, 100, { device = try_gpu() })
local s = 0
for i = 1, 100 do s = s + big[{ i, 1 }]:item() end  -- 100 tiny copies
local col = big:select(2, 1):tolist()              -- one copy of the same numbers
local t = torch.cuda.transfers()
print(string.format("host->device %d, device->host %d (%d bytes), device->device %d",
  t.h2d.count, t.d2h.count, t.d2h.bytes, t.d2d.count))
print("Many small copies are much worse than one big one: read values in bulk.")

-- %% Side note: every read on the host also waits for the device
-- GPU work is queued and runs while the host goes on; item(), tolist(),
-- printing and :cpu() must wait until the value exists. In a training
-- loop such a wait at every step stops the host and the GPU in turn (the
-- book's warning about logging each minibatch's loss). Sync debug mode
-- finds them: 'warn' prints a line per wait, 'error' raises.
step("torch.cuda.set_sync_debug_mode('error'); M[{1, 1}]:item()")
if ngpu > 0 then
  local M = torch.rand(100, 100, { device = try_gpu() })
  local norms = {}
  torch.cuda.set_sync_debug_mode("error")
  for i = 1, 3 do norms[i] = M[i]:norm() end          -- queued on the device: no wait
  local ok_read, why = pcall(function() return M[{ 1, 1 }]:item() end)
  torch.cuda.set_sync_debug_mode("default")
  print(ok_read and "(no wait?)" or error_text(why))
  print("examples/exercise3_log_norms.lua measures what such waits cost; docs/time.md explains them.")
else
  print("(no GPU: the cpu does not queue work, so nothing ever waits)")
end

-- %% Neural networks and GPUs
step("net = nn.Sequential(nn.Linear(3, 1)); net = net:to(try_gpu())")
net = nn.Sequential(nn.Linear(3, 1))
net = net:to(try_gpu())

step("net(X)")
show(net(X))

step("net[1].weight.data.device")
show(net[1].weight.data.device)

-- %% Memory on the device, as PyTorch reports it
if ngpu > 0 then
  step("torch.cuda.memory_allocated(), memory_reserved(), mem_get_info()")
  print(string.format("allocated %d bytes, reserved %d bytes, free %d of %d bytes",
    torch.cuda.memory_allocated(0), torch.cuda.memory_reserved(0), torch.cuda.mem_get_info(0)))
  print(torch.cuda.memory_summary(0))
  step("torch.cuda.smi() again: the memory our tensors use")
  torch.cuda.smi()
end
