-- torch/explain.lua: torch.cuda.explain(fn) (and %explain stmt): runs fn
-- under the profiler and places each op it ran on a device that models a
-- GPU (issue 29; docs/time-model.md) on that model's roofline: its
-- arithmetic intensity (FLOPs per byte moved), the rate it achieved in the
-- model, the roof at that intensity (the smaller of the unit's peak and
-- intensity x bandwidth) and why its time is what it is. The bound of each
-- task is the time model's own (src/backend/sim/sim_prof.c): compute,
-- memory, launch or copy. docs/profiling.md, "torch.cuda.explain".
local torch = require("torch")
local profiler = require("torch.profiler")

local M = {}

local Explanation = { __name = "torch.cuda.explanation" }
Explanation.__index = Explanation

-- The units' names for people (the keys of gpu_model(i).peak).
local unit_label = { fp32 = "FP32", fp64 = "FP64", fp64_tc = "FP64 tensor-core", tf32_tc = "TF32 tensor-core",
  fp16_tc = "FP16 tensor-core", bf16_tc = "BF16 tensor-core" }

local function g3(x) return string.format("%.3g", x) end

-- Why an op's time is what it is, in words.
local function why(r, m)
  local short = m.key:upper()
  if r.bound == "copy" then
    local over = r.name == "copy_d2d" and (m.nvlink > 0 and "NVLink" or "PCIe")
      or string.format("PCIe %d x%d", m.pcie_gen, m.pcie_lanes)
    return string.format("copy: %s over %s at %s (the %s's pinned rate is %s; pageable memory gets half)",
      profiler.format_rate(r.bytes, "B"), over, profiler.format_rate(r.achieved_bps, "B/s"), short,
      profiler.format_rate(m.pcie_pinned, "B/s"))
  end
  if r.bound == "launch" then
    return string.format("launch-bound: %s a call, and each kernel pays the %s's %s launch; its work is shorter "
      .. "(fewer, larger ops would spread it)", profiler.format_time(r.time_ns / r.calls), short,
      profiler.format_time(m.launch * 1e9))
  end
  local side = r.intensity < r.ridge and "below" or "above"
  if r.bound == "memory" then
    return string.format("memory-bound: %s FLOP/byte, %s the %s's ridge at %s FLOP/byte; its bytes move at %s, %.0f%% of %s",
      g3(r.intensity), side, short, g3(r.ridge), profiler.format_rate(r.achieved_bps, "B/s"),
      100 * r.achieved_bps / m.bandwidth, profiler.format_rate(m.bandwidth, "B/s"))
  end
  local because = r.name == "mm" and "; a product reaches at most 92% of it (80% on tensor cores), less when its "
    .. "128x128 output tiles leave SMs idle or its depth K is small"
    or r.name:find("^conv2d") and "; a convolution (cuDNN's implicit GEMM) reaches at most 75% of it (65% on tensor "
    .. "cores), less when its output tiles leave SMs idle or its depth (input channels x kernel area) is small" or ""
  return string.format("compute-bound: %s FLOP/byte, %s the %s's ridge at %s FLOP/byte; %.0f%% of its %s peak (%s)%s",
    g3(r.intensity), side, short, g3(r.ridge), 100 * r.achieved / r.peak, unit_label[r.unit] or r.unit,
    profiler.format_rate(r.peak, "FLOP/s"), because)
end

-- The explanation of a profile: one row per (device, op name) of its
-- modelled events, by total time.
function M.from_profile(p)
  local ex = setmetatable({ profile = p, rows = {}, models = p.models }, Explanation)
  if not p.models then return ex end
  local index = {}
  for _, e in ipairs(p.events) do
    local m = e.modelled and p.models[e.device]
    if m and e.kind ~= "sync" then
      local key = e.device .. "\0" .. e.name
      local r = index[key]
      if not r then
        r = { name = e.name, device = e.device, kind = e.kind, calls = 0, total_ns = 0, bytes = 0, flops = 0,
          bound_ns = {}, modelled = true }
        index[key] = r
        ex.rows[#ex.rows + 1] = r
      end
      r.calls = r.calls + 1
      r.total_ns = r.total_ns + (e.t1 - e.t0)
      r.bytes, r.flops = r.bytes + e.bytes, r.flops + e.flops
      r.unit = r.unit or e.unit
      if e.bound then r.bound_ns[e.bound] = (r.bound_ns[e.bound] or 0) + (e.t1 - e.t0) end
    end
  end
  for _, r in ipairs(ex.rows) do
    local m = p.models[r.device]
    profiler._explain_row(r, m)
    r.time_ns = r.total_ns
    local s = math.max(r.total_ns, 1) * 1e-9
    r.intensity = r.bytes > 0 and r.flops / r.bytes or math.huge
    r.achieved = r.flops / s
    r.achieved_bps = r.bytes / s
    r.peak = m.peak[r.unit or "fp32"] or m.peak.fp32
    r.ridge = r.peak / m.bandwidth
    r.roof = math.min(r.peak, r.intensity * m.bandwidth)
    r.why = why(r, m)
  end
  table.sort(ex.rows, function(a, b)
    if a.total_ns ~= b.total_ns then return a.total_ns > b.total_ns end
    return a.name < b.name
  end)
  return ex
end

-- explain(fn): the explanation, then fn's results.
function M.explain(fn, ...)
  if select("#", ...) > 0 then error("torch.cuda.explain: expected one function, got more arguments", 2) end
  local mt = getmetatable(fn)
  if type(fn) ~= "function" and not (type(mt) == "table" and mt.__call) then
    error("torch.cuda.explain: expected a function to run, got " .. type(fn), 2)
  end
  local res = table.pack(profiler.profile(fn))
  return M.from_profile(res[1]), table.unpack(res, 2, res.n)
end

local function pad(s, w, right)
  local len = utf8.len(s) or #s
  if len >= w then return s end
  return right and (string.rep(" ", w - len) .. s) or (s .. string.rep(" ", w - len))
end

function Explanation:text()
  if not self.models then
    return "torch.cuda.explain: nothing is modelled: no op ran on a simulated GPU that models a real one "
      .. "(the CPU, or GSHELL_GPU_MODEL / --gpu-model host), so every time is this machine's own and there is "
      .. "no roofline to place it on. Run it on cuda:i with a model (the default, v100; docs/gpu-models.md)."
  end
  local out = {}
  local devs = {}
  for d in pairs(self.models) do devs[#devs + 1] = d end
  table.sort(devs)
  for _, d in ipairs(devs) do
    local m = self.models[d]
    out[#out + 1] = string.format("%s is modelled on a %s: %s FP32 peak, %s memory, ridge at %s FLOP/byte "
      .. "(FP32); %s launch per kernel", d, m.name, profiler.format_rate(m.peak.fp32, "FLOP/s"),
      profiler.format_rate(m.bandwidth, "B/s"), g3(m.peak.fp32 / m.bandwidth), profiler.format_time(m.launch * 1e9))
  end
  local head = { "Op", "Device", "Calls", "Time", "FLOP/byte", "Achieved", "Roof there", "Bound" }
  local right = { false, false, true, true, true, true, true, false }
  local cells = {}
  for _, r in ipairs(self.rows) do
    local copy = r.bound == "copy"
    cells[#cells + 1] = { r.name, r.device, tostring(r.calls), profiler.format_time(r.total_ns),
      (copy or r.flops == 0) and "-" or g3(r.intensity),
      copy and profiler.format_rate(r.achieved_bps, "B/s") or r.flops == 0 and "-" or profiler.format_rate(r.achieved, "FLOP/s"),
      (copy or r.flops == 0) and "-" or profiler.format_rate(r.roof, "FLOP/s"), r.bound or "-" }
  end
  local w = {}
  for j, h in ipairs(head) do w[j] = #h end
  for _, c in ipairs(cells) do for j, s in ipairs(c) do w[j] = math.max(w[j], utf8.len(s) or #s) end end
  local function line(c)
    local l = {}
    for j, s in ipairs(c) do l[j] = pad(s, w[j], right[j]) end
    return (table.concat(l, "  "):gsub("%s+$", ""))
  end
  out[#out + 1] = line(head)
  for _, c in ipairs(cells) do out[#out + 1] = line(c) end
  if #cells == 0 then out[#out + 1] = "(no kernel or copy ran on a modelled device)" end
  for _, r in ipairs(self.rows) do out[#out + 1] = string.format("  %s on %s: %s", r.name, r.device, r.why) end
  local pic = self:picture()
  if pic then out[#out + 1] = pic end
  return table.concat(out, "\n")
end

-- A roofline picture at the terminal: log-log, intensity across (1/64 to
-- 4096 FLOP/byte), attainable FLOP/s up; '/' the bandwidth roof, '_' the
-- compute roof (the first device's FP32 peak), each op a letter where it
-- sits, the key under it. nil when no op has FLOPs.
function Explanation:picture()
  local pts = {}
  for _, r in ipairs(self.rows) do
    if r.flops > 0 and r.bytes > 0 and r.bound ~= "copy" then pts[#pts + 1] = r end
  end
  if #pts == 0 then return nil end
  local m = self.models[pts[1].device]
  local W, H = 60, 14
  local xlo, xhi = math.log(1 / 64, 2), math.log(4096, 2)
  local peak = m.peak.fp32
  for _, r in ipairs(pts) do peak = math.max(peak, r.peak) end
  local yhi = math.log(peak * 2, 10)
  local ylo = yhi - 6
  local grid = {}
  for y = 1, H do grid[y] = {}; for x = 1, W do grid[y][x] = " " end end
  local function col(ai) return math.floor((math.log(ai, 2) - xlo) / (xhi - xlo) * (W - 1) + 1.5) end
  local function row(f) return H - math.floor((math.log(f, 10) - ylo) / (yhi - ylo) * (H - 1) + 0.5) end
  for x = 1, W do
    local ai = 2 ^ (xlo + (x - 1) / (W - 1) * (xhi - xlo))
    local f = math.min(m.peak.fp32, ai * m.bandwidth)
    local y = row(f)
    if y >= 1 and y <= H then grid[y][x] = f < m.peak.fp32 and "/" or "_" end
  end
  local key = {}
  for i, r in ipairs(pts) do
    local ch = string.char(96 + math.min(i, 26))
    local x = math.max(1, math.min(W, col(math.max(r.intensity, 2 ^ xlo))))
    local y = math.max(1, math.min(H, row(math.max(r.achieved, 10 ^ ylo))))
    grid[y][x] = ch
    key[#key + 1] = ch .. " " .. r.name
  end
  local out = { string.format("FLOP/s (log; roof: %s FP32 peak, %s)", profiler.format_rate(m.peak.fp32, "FLOP/s"),
    profiler.format_rate(m.bandwidth, "B/s")) }
  for y = 1, H do
    local label = (y == 1 or y == H) and profiler.format_rate(10 ^ (ylo + (H - y) / (H - 1) * (yhi - ylo)), "") or ""
    out[#out + 1] = pad(label, 9, true) .. " |" .. table.concat(grid[y])
  end
  out[#out + 1] = string.rep(" ", 10) .. "+" .. string.rep("-", W)
  out[#out + 1] = string.rep(" ", 11) .. pad("1/64", 10) .. pad("FLOP/byte (log)", W - 20) .. pad("4096", 10, true)
  out[#out + 1] = "  " .. table.concat(key, ", ")
  return table.concat(out, "\n")
end

Explanation.__tostring = function(e) return e:text() end

M.Explanation = Explanation
return M
