-- The GPU chapter of Dive into Deep Learning as a guided lesson, from
-- naming devices to a network on the GPU and the chapter's four
-- exercises. A plain data file: see docs/shell.md, "Writing a lesson".
-- Device expectations are functions so that they follow the machine:
-- try_gpu(i) is cuda:i when that device exists, else the CPU.
local function gpu(i)
  return function() return tostring(try_gpu(i)) end
end

return {
  title = "GPUs: devices, tensors and networks on the GPU (D2L chapter 'GPUs')",
  sim_gpus = 2,
  intro = [[
Every tensor lives on a device: the CPU or one of the GPUs. This lesson
walks through the chapter at the prompt; after each line you type, gshell
checks the result.]],
  setup = function(env)
    -- a scratch directory for the exercise that writes a file
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p '" .. dir .. "'")
    rawset(env, "lesson_dir", dir)
  end,
  steps = {
    {
      title = "Naming devices",
      explain = [[
torch.device('cpu') is the CPU (all its cores). torch.device('cuda') is
the current GPU, and torch.device('cuda:1') the second one: GPU numbers are
names, so they start at 0 even in Lua.]],
      task = "Make `cpu`, `gpu` and `gpu1`: the CPU, the current GPU and the GPU cuda:1.",
      expect = {
        { var = "cpu", is = "device", device = "cpu" },
        { var = "gpu", is = "device", device = { "cuda", "cuda:0" } },
        { var = "gpu1", is = "device", device = "cuda:1" },
      },
      done = "At the prompt a device shows as device(type='cuda', index=1); print(gpu1) gives cuda:1.",
    },
    {
      title = "How many GPUs?",
      task = "Set `n` to the number of CUDA devices: torch.cuda.device_count().",
      expect = { { var = "n", equals = function() return torch.cuda.device_count() end } },
    },
    {
      title = "The book's helpers",
      explain = [[
try_gpu(i) gives cuda:i when it exists and the CPU otherwise, so code runs
anywhere; try_all_gpus() gives every GPU (or {cpu}).]],
      task = "Set `g = try_gpu()`, `g10 = try_gpu(10)` and `all = try_all_gpus()`.",
      expect = {
        { var = "g", is = "device", device = gpu(0) },
        { var = "g10", is = "device", device = "cpu" },
        { var = "all", type = "table", test = function(v)
            return #v == math.max(1, torch.cuda.device_count()), "all should list every GPU"
          end },
      },
      done = "try_gpu(10) fell back to the CPU: there is no 11th GPU.",
    },
    {
      title = "Tensors start on the CPU",
      task = "Make `x = torch.tensor({1, 2, 3})` and look at x.device.",
      expect = { { var = "x", device = "cpu", values = { 1, 2, 3 } } },
    },
    {
      title = "Storage on the GPU",
      explain = "Factories take the device in their options table: {device = ...}.",
      task = "Make `X`, a 2x3 tensor of ones on the first GPU (device = try_gpu()).",
      expect = { { var = "X", device = gpu(0), shape = { 2, 3 }, fill = 1 } },
    },
    {
      title = "A second GPU",
      task = "Make `Y`, a 2x3 random tensor (torch.rand) on the second GPU (try_gpu(1)).",
      expect = { { var = "Y", device = gpu(1), shape = { 2, 3 } } },
    },
    {
      title = "Devices do not mix",
      explain = [[
X is on cuda:0 and Y on cuda:1. An operation needs all its tensors on one
device; gshell never copies behind your back.]],
      task = "Type `X + Y` and read the error.",
      setup = { { "X", "torch.ones(2, 3, {device = try_gpu()})" }, { "Y", "torch.rand(2, 3, {device = try_gpu(1)})" } },
      expect = { { error = "same device" } },
      done = "To combine them, one of them has to be copied first.",
    },
    {
      title = "Copying",
      task = "Copy X to the second GPU: `Z = X:cuda(1)` (note the `:`).",
      setup = { { "X", "torch.ones(2, 3, {device = try_gpu()})" } },
      expect = { { var = "Z", device = gpu(1), shape = { 2, 3 }, fill = 1 } },
    },
    {
      title = "Now they add",
      task = "Set `S = Y + Z`.",
      setup = { { "X", "torch.ones(2, 3, {device = try_gpu()})" }, { "Y", "torch.rand(2, 3, {device = try_gpu(1)})" }, { "Z", "X:to(try_gpu(1))" } },
      expect = { { var = "S", device = gpu(1), values = function(env) return env.Y + 1 end } },
    },
    {
      title = "No copy when already there",
      explain = "Moving a tensor to where it already is returns the very same tensor: no copy, no memory.",
      task = "Set `same = rawequal(Z:cuda(1), Z)`.",
      setup = { { "X", "torch.ones(2, 3, {device = try_gpu()})" }, { "Z", "X:to(try_gpu(1))" } },
      expect = { { var = "same", equals = true } },
    },
    {
      title = "A network on the GPU",
      explain = "A module's :to(device) moves its parameters in place (and returns the module).",
      task = "Make `net = nn.Sequential(nn.Linear(3, 1))` and move it with net:to(try_gpu()).",
      expect = { { var = "net", module_device = gpu(0) } },
    },
    {
      title = "Forward on the GPU",
      task = "Run the network on X: `out = net(X)`.",
      setup = { { "X", "torch.ones(2, 3, {device = try_gpu()})" }, { "net", "nn.Sequential(nn.Linear(3, 1)):to(try_gpu())" } },
      expect = { { var = "out", device = gpu(0), shape = { 2, 1 } } },
      done = "Inputs and parameters on the same GPU: the output is there too.",
    },
    {
      title = "Where the weights are",
      task = "Set `w_dev = net[1].weight.data.device` (positions are 1-based in Lua).",
      setup = { { "net", "nn.Sequential(nn.Linear(3, 1)):to(try_gpu())" } },
      expect = { { var = "w_dev", is = "device", device = gpu(0) } },
    },
    {
      title = "Exercise 1: a bigger job",
      explain = [[
GPUs pay off on large computations. %timeit times a statement (devices
are synchronised, so it measures work done). On a simulated device that
models a GPU (a V100 unless --gpu-model names another) it reports the time
that GPU would take, and beside it what computing it here took.]],
      task = "Make `A = torch.rand(500, 500, {device = try_gpu()})`, then `t = %timeit -o -q A:matmul(A)`. " ..
        "Compare with `%timeit A:cpu():matmul(A:cpu())` if you like.",
      expect = {
        { var = "A", device = gpu(0), shape = { 500, 500 } },
        { var = "t", type = "table", test = function(v)
            return type(v.average) == "number"
          end,
          hint = "t should be what `%timeit -o` returns: `t = %timeit -o -q A:matmul(A)` (-o gives the " ..
            "measurement back as a value, -q prints nothing)" },
      },
    },
    {
      title = "Exercise 2: saving parameters on the GPU",
      explain = [[
torch.save writes a state dict; each tensor's device is kept and restored
on load (map_location changes it). lesson_dir is a scratch directory.]],
      task = "Save net's state dict to lesson_dir .. '/net.safetensors', then load it back into `sd`.",
      setup = { { "net", "nn.Sequential(nn.Linear(3, 1)):to(try_gpu())" } },
      expect = {
        { var = "sd", type = "table", test = function(v, env)
            local w = v["1.weight"]
            if not torch.is_tensor(w) then return false, "sd['1.weight'] should be the saved weight" end
            if tostring(w.device) ~= tostring(try_gpu()) then
              return false, "the loaded weight is on " .. tostring(w.device) .. "; it was saved on " ..
                tostring(try_gpu()) .. " (did you pass map_location?)"
            end
            return torch.equal(w, env.net[1].weight.data), "sd['1.weight'] differs from net's weight"
          end },
      },
    },
    {
      title = "Exercise 3: keep the log on the GPU",
      explain = [[
Reading a value back to the CPU (item(), print) waits for the GPU. Logging
one norm per step that way stalls every step; keeping the norms on the GPU
and copying once at the end does not.]],
      task = "Make `M = torch.rand(100, 100, {device = try_gpu()})`; in a loop of 100 steps put " ..
        "torch.linalg.norm(M:matmul(M)) into a list, then `norms = torch.stack(list)` (100 norms, still on the GPU).",
      expect = {
        { var = "norms", device = gpu(0), shape = { 100 }, values = function(env)
            return torch.linalg.norm(env.M:matmul(env.M)):expand(100)
          end },
      },
      done = "norms:cpu() would now copy all 100 values in one go.",
    },
    {
      title = "Exercise 4: two GPUs at once",
      explain = "Work queued on two GPUs runs at the same time; each result stays on its GPU.",
      task = "Make `A0 = torch.rand(300, 300, {device = try_gpu(0)})` and `A1 = A0:to(try_gpu(1))`, " ..
        "then `C0, C1 = A0:matmul(A0), A1:matmul(A1)`.",
      expect = {
        { var = "C0", device = gpu(0), shape = { 300, 300 } },
        { var = "C1", device = gpu(1), values = function(env) return env.C0 end,
          hint = "C1 should be computed on the second GPU, not copied there: `C1 = A1:matmul(A1)` with " ..
            "A1 = A0:to(try_gpu(1)), so both GPUs work at once" },
      },
      done = "Same numbers, computed on two devices.",
    },
  },
  outro = [[
That is the chapter: devices, tensors and networks on them, copies, and the
four exercises. examples/ has the chapter and the exercises as scripts.]],
}
