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
  -- allow_tf32 as it was: the picture draws the TF32 roof when it was on
  local ex = setmetatable({ profile = p, rows = {}, models = p.models, allow_tf32 = torch._allow_tf32() },
    Explanation)
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
    out[#out + 1] = string.format("%s is modelled on %s: %s FP32 peak, %s memory, ridge at %s FLOP/byte "
      .. "(FP32); %s launch per kernel", d, m.a_name, profiler.format_rate(m.peak.fp32, "FLOP/s"),
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

-- The roofline picture of the ops on `device` (the first modelled device
-- with ops that have FLOPs, when nil): a torch.display picture
-- (lua/torch/roofline.lua), nil when no op has FLOPs.
function Explanation:roofline(device)
  if device ~= nil and type(device) ~= "string" then
    error("explanation:roofline: expected a device name such as 'cuda:0', got " .. type(device), 2)
  end
  if not self.models then return nil end
  return require("torch.roofline").new(self, device)
end

-- The terminal picture that ends the text (80 columns, no colour).
function Explanation:picture()
  local r = self:roofline()
  return r and r:_repr_term_({ columns = 80 }):gsub("\n$", "") or nil
end

-- Jupyter shows an explanation (a cell's value: %explain, or explain's
-- result) as its roofline's SVG above the text; --notebook --md writes it
-- beside the Markdown.
function Explanation:_repr_svg_()
  local r = self:roofline()
  return r and r:_repr_svg_() or nil
end

Explanation.__tostring = function(e) return e:text() end

M.Explanation = Explanation
return M
