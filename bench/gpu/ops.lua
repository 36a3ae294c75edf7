-- bench/gpu/ops.lua: gshell's side of the GPU benchmarks (bench/gpu/ops.py
-- is PyTorch's, the same work in the same order). One "name value unit"
-- line per benchmark. Run on a GPU machine:
--   gshell bench/gpu/ops.lua [cuda:N] [--small]
-- (--small: 1/64 of the sizes and 512^3 products, for a dry run on
-- simulated devices: GSHELL_SIM_GPUS=1 gshell bench/gpu/ops.lua --small)
-- Time per iteration: warm-up, synchronize, a timed loop, synchronize;
-- the best of 3 repetitions.
local torch = rawget(_G, "torch") or require("torch")
local args = rawget(_G, "arg") or {}
local dev, small = "cuda:0", false
for _, a in ipairs(args) do
  if a == "--small" then small = true elseif a:match("^cuda") then dev = a end
end
if torch.cuda.device_count() == 0 then
  io.stderr:write("bench/gpu/ops.lua: no CUDA device: " .. tostring(torch.cuda.unavailable_reason()) .. "\n")
  os.exit(2)
end

local function time(fn, iters)
  fn(); torch.cuda.synchronize()
  local best = math.huge
  for _ = 1, 3 do
    local t0 = torch.clock()
    for _ = 1, iters do fn() end
    torch.cuda.synchronize()
    best = math.min(best, (torch.clock() - t0) / iters)
  end
  return best
end
local function report(name, value, unit) print(("%s %.4g %s"):format(name, value, unit)) end
local function gbps(name, bytes, fn, iters) report(name, bytes / time(fn, iters) / 1e9, "GB/s") end

torch.manual_seed(0)
local N = small and 1024 * 1024 or 64 * 1024 * 1024 -- 64M float32 = 256 MiB
local a = torch.randn(N, {device = dev})
local b = torch.randn(N, {device = dev})
gbps("copy_d2d_256MiB", 2 * 4 * N, function() return a:clone() end, 20)
gbps("add_64M_f32", 3 * 4 * N, function() return a + b end, 20)
gbps("mul_scalar_64M_f32", 2 * 4 * N, function() return a * 2 end, 20)
gbps("exp_64M_f32", 2 * 4 * N, function() return a:exp() end, 20)
local ah = a:half()
gbps("half_to_float_64M", (2 + 4) * N, function() return ah:float() end, 20)
gbps("sum_64M_f32", 4 * N, function() return a:sum() end, 20)
local side = small and 1024 or 8192
local m = a:reshape(side, side)
gbps("sum_rows_8192x8192", 4 * N, function() return m:sum(2) end, 20)
gbps("sum_cols_8192x8192", 4 * N, function() return m:sum(1) end, 20)
local rows = small and (1 << 14) or (1 << 20)
local few = torch.randn(rows, 16, {device = dev})
gbps("sum_cols_1Mx16", 4 * 16 * rows, function() return few:sum(1) end, 50)
gbps("softmax_rows_8192x8192", 2 * 4 * N, function() return m:softmax(2) end, 10)
gbps("mt_transpose_copy_8192x8192", 2 * 4 * N, function() return m:t():contiguous() end, 10)
a, b, ah, m, few = nil, nil, nil, nil, nil
collectgarbage(); collectgarbage()

for _, dt in ipairs({torch.float32, torch.bfloat16}) do
  local n = small and 512 or 8192
  local x = torch.randn(n, n, {device = dev}):to(dt)
  local y = torch.randn(n, n, {device = dev}):to(dt)
  local s = time(function() return x:mm(y) end, 5)
  report("matmul_8192_" .. tostring(dt):gsub("torch%.", ""), 2 * n ^ 3 / s / 1e12, "TFLOP/s")
end
collectgarbage(); collectgarbage()

-- convolution: ResNet's 3x3 64->64 layer at 56x56, batch 64, forward +
-- backward (input, weight, bias gradients) in TFLOP/s (3 products)
do
  local x = torch.randn(64, 64, 56, 56, {device = dev, requires_grad = true})
  local w = torch.randn(64, 64, 3, 3, {device = dev, requires_grad = true})
  local bias = torch.randn(64, {device = dev, requires_grad = true})
  local gy = torch.randn(64, 64, 56, 56, {device = dev})
  local s = time(function()
    x.grad, w.grad, bias.grad = nil, nil, nil
    torch.conv2d(x, w, bias, {padding = 1}):backward(gy)
  end, 5)
  report("conv3x3_64_56x56_b64_fwd_bwd", 3 * 2 * 64 * 64 * 576 * 3136 / s / 1e12, "TFLOP/s")
end
collectgarbage(); collectgarbage()

local t1, t2 = torch.ones(1, {device = dev}), torch.ones(1, {device = dev})
report("launch_tiny_add", time(function() return t1 + t2 end, small and 1000 or 10000) * 1e6, "us")
local h = torch.randn(N)
gbps("h2d_256MiB", 4 * N, function() return h:to(dev) end, 5)
local g = h:to(dev)
gbps("d2h_256MiB", 4 * N, function() return g:cpu() end, 5)
