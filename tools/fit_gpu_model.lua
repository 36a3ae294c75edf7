-- tools/fit_gpu_model.lua: fits the time model's efficiency factors
-- (src/core/gs_gpu_model.h, GS_MODEL_*) to a GPU's measurements from
-- tools/gpu_calib.lua, and prints the measured profile beside the
-- published one (issue 29's calibration; record it in bench/results/):
--
--   build/gshell tools/fit_gpu_model.lua MODEL calib.txt
--
-- MODEL is the model the GPU should match (h100, h200, ...). Each factor
-- is the model's own constant scaled by how much faster or slower the
-- measurement was than the model's formula (so a measurement the model
-- predicts exactly gives the constant back):
--   bandwidth share   bytes / (time - launch) / the datasheet's bandwidth
--   GEMM best share   0.92 (CUDA cores), 0.80 (tensor cores) x modelled
--                     compute time / measured, the median over N >= 2048
--                     (the largest N when none is that large)
--   PCIe share        pinned rate / the link's encoded rate (model: 0.78)
--   pageable share    pageable rate / pinned rate (model: 0.5)
--   host launch       an empty kernel back to back (model: launch on the
--                     host, 3 us, beside the device's 2 us)
-- It prints Markdown and, last, a Lua table of the fitted values.
local torch = require("torch")

local key, path = (arg or {})[1], (arg or {})[2]
if not key or not path then
  io.stderr:write("usage: gshell tools/fit_gpu_model.lua MODEL calib.txt\n")
  os.exit(2)
end
local m = torch.cuda.gpu_model(key)
local f = assert(io.open(path, "r"))
local r = { gemm = { fp32 = {}, tf32 = {} }, h2d = {}, d2h = {}, step = {} }
for line in f:lines() do
  local w = {}
  for x in line:gmatch("%S+") do w[#w + 1] = x end
  if w[1] == "device" then r.device = line:sub(8)
  elseif w[1] == "copy" then r.copy = { bytes = tonumber(w[2]), t = tonumber(w[3]) }
  elseif w[1] == "gemm" then r.gemm[w[2]][tonumber(w[3])] = tonumber(w[4])
  elseif w[1] == "launch" then r.launch = tonumber(w[2])
  elseif w[1] == "h2d" or w[1] == "d2h" then r[w[1]][w[2]] = { bytes = tonumber(w[3]), t = tonumber(w[4]) }
  elseif w[1] == "step" then r.step[w[2]] = { batch = tonumber(w[3]), t = tonumber(w[4]) }
  end
end
f:close()

local BEST = { fp32 = 0.92, tf32 = 0.80 }
local COPY_LATENCY = 10e-6
local fit = {}

local function median(xs)
  table.sort(xs)
  if #xs == 0 then return nil end
  local i = (#xs + 1) // 2
  return #xs % 2 == 1 and xs[i] or (xs[i] + xs[i + 1]) / 2
end

local rows = {}
local function row(figure, published, measured, fitted)
  rows[#rows + 1] = string.format("| %s | %s | %s | %s |", figure, published, measured, fitted)
end

if r.copy then
  local rate = r.copy.bytes / (r.copy.t - m.launch)
  fit.bandwidth_share = rate / m.bandwidth
  row("memory bandwidth (copy_)", string.format("%.0f GB/s", m.bandwidth / 1e9), string.format("%.0f GB/s", rate / 1e9),
    string.format("%.2f of the datasheet", fit.bandwidth_share))
end

for _, kind in ipairs({ "fp32", "tf32" }) do
  local peak = kind == "fp32" and m.peak.fp32 or m.peak.tf32_tc
  local sizes = {}
  for n in pairs(r.gemm[kind]) do sizes[#sizes + 1] = n end
  table.sort(sizes)
  if peak > 0 and #sizes > 0 then
    local old = torch._allow_tf32()
    torch._set_allow_tf32(kind == "tf32")
    local shares, best_rate = {}, 0
    for _, n in ipairs(sizes) do
      local t = r.gemm[kind][n]
      local modelled = torch.cuda._model_time(key, "gemm", { m = n, n = n, k = n }) - m.launch
      local share = BEST[kind] * modelled / (t - m.launch)
      if n >= 2048 or n == sizes[#sizes] then shares[#shares + 1] = share end
      best_rate = math.max(best_rate, 2 * n ^ 3 / t)
      row(string.format("%s %d", kind == "fp32" and "SGEMM" or "TF32 GEMM", n),
        string.format("%.1f TFLOP/s modelled", 2 * n ^ 3 / (modelled + m.launch) / 1e12),
        string.format("%.1f TFLOP/s", 2 * n ^ 3 / t / 1e12), string.format("best share %.3f", share))
    end
    torch._set_allow_tf32(old)
    fit["gemm_best_" .. kind] = median(shares)
  end
end

if r.launch then
  fit.host_launch = r.launch
  row("empty kernel, back to back", string.format("%.1f us (host %.0f us, device %.0f us)",
    math.max(m.host_launch, m.launch) * 1e6, m.host_launch * 1e6, m.launch * 1e6),
    string.format("%.1f us", r.launch * 1e6), string.format("host launch %.2f us", r.launch * 1e6))
end

local link = 8e9 * 128 / 130 / 8 * 2 ^ (m.pcie_gen - 3) * m.pcie_lanes
local function rate(c) return c and c.bytes / (c.t - COPY_LATENCY) or nil end
for _, dir in ipairs({ "h2d", "d2h" }) do
  local pinned, pageable = rate(r[dir].pinned), rate(r[dir].pageable)
  if pinned then
    fit[dir .. "_pcie_share"] = pinned / link
    row(dir:upper() .. " pinned", string.format("%.1f GB/s modelled", m.pcie_pinned / 1e9),
      string.format("%.1f GB/s", pinned / 1e9), string.format("%.2f of the link", pinned / link))
  end
  if pinned and pageable then
    fit[dir .. "_pageable_share"] = pageable / pinned
    row(dir:upper() .. " pageable", string.format("%.1f GB/s modelled", m.pcie_pageable / 1e9),
      string.format("%.1f GB/s", pageable / 1e9), string.format("%.2f of pinned", pageable / pinned))
  end
end

for _, name in ipairs({ "lenet", "resnet18" }) do
  local s = r.step[name]
  if s then
    row(name .. " training step, batch " .. s.batch, "-", string.format("%.0f examples/s", s.batch / s.t), "-")
  end
end

print(string.format("## %s against the %s model (%s)\n", r.device or "?", key, m.name))
print("| figure | published or modelled | measured | fitted |")
print("| --- | --- | --- | --- |")
for _, l in ipairs(rows) do print(l) end
print("\nfitted = {")
local ks = {}
for k in pairs(fit) do ks[#ks + 1] = k end
table.sort(ks)
for _, k in ipairs(ks) do print(string.format("  %s = %.4g,", k, fit[k])) end
print("}")
