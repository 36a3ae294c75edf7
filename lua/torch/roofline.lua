-- torch.roofline: the roofline picture of a torch.cuda.explain explanation
-- (lua/torch/explain.lua), as a picture object of torch.display: log-log
-- axes of arithmetic intensity (FLOP/byte) across and achieved FLOP/s up,
-- the model's compute roofs (FP32; the TF32 tensor-core roof when
-- torch.backends.cuda.matmul.allow_tf32 is on; any other unit an op ran
-- on), the bandwidth slope rising to them, the ridge point where the
-- FP32 roof meets the slope, and one labelled point per op.
--   _repr_term_(opts)  braille roofs and lettered points, within opts.columns (80)
--   _repr_svg_()       SVG, in the style of the d2l charts (Jupyter, --notebook --md)
--   _repr_line_()      one summary line
local profiler = require("torch.profiler")
local esc = require("torch.d2l.chart_svg").escape

local M = {}

local Roofline = { __name = "torch.roofline" }
Roofline.__index = Roofline

local unit_short = { fp32 = "FP32", fp64 = "FP64", fp64_tc = "FP64 TC", tf32_tc = "TF32 TC", fp16_tc = "FP16 TC",
  bf16_tc = "BF16 TC" }

local function g3(x) return string.format("%.3g", x) end
local function log10(x) return math.log(x, 10) end

-- A rate's decade as a short label: 1G, 10G, 100G, 1T, ...
local function decade_label(k)
  local prefixes = { [0] = "", [3] = "K", [6] = "M", [9] = "G", [12] = "T", [15] = "P", [18] = "E" }
  local base = 3 * (k // 3)
  local p = prefixes[base]
  if not p then return "1e" .. k end
  return string.format("%d%s", math.floor(10 ^ (k - base) + 0.5), p)
end
local function intensity_label(k)
  if k >= 0 and k <= 4 then return string.format("%d", math.floor(10 ^ k + 0.5)) end
  if k < 0 and k >= -3 then return string.format("%." .. (-k) .. "f", 10 ^ k) end
  return "1e" .. k
end

-- new(ex, device): the picture of the explanation's ops on `device` (the
-- first modelled device with ops when nil); nil when no op there has
-- FLOPs (copies and fills have no place on a roofline).
function M.new(ex, device)
  local devs = {}
  for _, r in ipairs(ex.rows) do
    if r.flops > 0 and r.bytes > 0 and r.bound ~= "copy" and not devs[r.device] then
      devs[r.device] = true
      devs[#devs + 1] = r.device
    end
  end
  table.sort(devs)
  device = device or devs[1]
  if not device or not devs[device] then return nil end
  local m = ex.models[device]
  local self = setmetatable({ device = device, model = m, bandwidth = m.bandwidth, roofs = {}, points = {},
    devices = devs }, Roofline)
  -- the roofs: FP32, TF32 when allowed (and the model has it), each unit an op used
  local units, seen = { "fp32" }, { fp32 = true }
  if ex.allow_tf32 and (m.peak.tf32_tc or 0) > 0 then units[2], seen.tf32_tc = "tf32_tc", true end
  for _, r in ipairs(ex.rows) do
    if r.device == device and r.flops > 0 and r.bytes > 0 and r.bound ~= "copy" then
      local u = r.unit or "fp32"
      if not seen[u] and (m.peak[u] or 0) > 0 then seen[u] = true; units[#units + 1] = u end
      self.points[#self.points + 1] = { key = string.char(96 + math.min(#self.points + 1, 26)), name = r.name,
        intensity = r.intensity, achieved = r.achieved, bound = r.bound }
    end
  end
  for _, u in ipairs(units) do
    self.roofs[#self.roofs + 1] = { unit = u, label = unit_short[u] or u, peak = m.peak[u] }
  end
  table.sort(self.roofs, function(a, b) return a.peak < b.peak end)
  self.ridge = m.peak.fp32 / m.bandwidth
  -- the axes, in whole decades: every point, the ridges and a decade either side
  local top = self.roofs[#self.roofs].peak
  local ilo, ihi = self.ridge / 10, top / m.bandwidth * 10
  local flo = math.huge
  for _, p in ipairs(self.points) do
    ilo, ihi = math.min(ilo, p.intensity), math.max(ihi, p.intensity)
    flo = math.min(flo, p.achieved)
  end
  self.xlo, self.xhi = math.floor(log10(ilo)), math.ceil(log10(ihi))
  self.yhi = math.ceil(log10(top * 1.5))
  flo = math.min(flo, m.bandwidth * 10 ^ self.xlo)
  -- at most 8 decades up: a launch-bound op far below sits on the floor
  self.ylo = math.max(math.floor(log10(flo)), self.yhi - 8)
  return self
end

-- the roofs at intensity i: each is min(peak, i x bandwidth)
function Roofline:roof_at(i, roof) return math.min(roof.peak, i * self.bandwidth) end

function Roofline:_repr_line_()
  local names = {}
  for _, p in ipairs(self.points) do names[#names + 1] = p.name end
  return string.format("<roofline of %s on %s: %d op%s (%s), ridge at %s FLOP/byte>", self.device, self.model.a_name,
    #self.points, #self.points == 1 and "" or "s", table.concat(names, ", "), g3(self.ridge))
end
Roofline.__tostring = Roofline._repr_line_

-- braille dot bits, [column 0..1][row 0..3] (as chart_term.lua)
local BITS = { [0] = { [0] = 0x01, 0x02, 0x04, 0x40 }, [1] = { [0] = 0x08, 0x10, 0x20, 0x80 } }

function Roofline:_repr_term_(opts)
  opts = opts or {}
  local columns = opts.columns or 80
  local margin = 4                             -- "100T"
  local W = math.max(24, math.min(60, columns - margin - 3))
  local H = 14
  local DW, DH = 2 * W, 4 * H
  local color = opts.color
  local function dx_of(i) return (log10(i) - self.xlo) / (self.xhi - self.xlo) * (DW - 1) end
  local function dy_of(f) return (1 - (log10(f) - self.ylo) / (self.yhi - self.ylo)) * (DH - 1) end
  local dots, owner, chars = {}, {}, {}
  local function plot(x, y, k)
    x, y = math.floor(x + 0.5), math.floor(y + 0.5)
    if x < 0 or y < 0 or x >= DW or y >= DH then return end
    local idx = (y // 4) * W + x // 2
    dots[idx] = (dots[idx] or 0) | BITS[x % 2][y % 4]
    owner[idx] = owner[idx] or k
  end
  -- each roof, one dot column at a time, filled down to the previous dot
  -- so the slope has no gaps
  for k = #self.roofs, 1, -1 do
    local roof, prev = self.roofs[k], nil
    for x = 0, DW - 1 do
      local i = 10 ^ (self.xlo + x / (DW - 1) * (self.xhi - self.xlo))
      local y = dy_of(self:roof_at(i, roof))
      if prev then
        for yy = math.floor(math.min(prev, y) + 0.5), math.floor(math.max(prev, y) + 0.5) do plot(x, yy, k) end
      else
        plot(x, y, k)
      end
      prev = y
    end
  end
  local function cell(x, y)
    local cx, cy = math.floor(x + 0.5) // 2, math.floor(y + 0.5) // 4
    return math.max(0, math.min(W - 1, cx)), math.max(0, math.min(H - 1, cy))
  end
  -- the ridge point, then each roof's name just above its right end
  local rx, ry = cell(dx_of(self.ridge), dy_of(self.model.peak.fp32))
  chars[ry * W + rx] = { "◆", nil }
  for _, roof in ipairs(self.roofs) do
    local _, y = cell(0, dy_of(roof.peak))
    local text = roof.label
    local y1 = y > 0 and y - 1 or y + 1
    for j = 1, #text do
      local x = W - #text - 1 + j
      if not chars[y1 * W + x] and not dots[y1 * W + x] then chars[y1 * W + x] = { text:sub(j, j), 0 } end
    end
  end
  -- the ops, a letter each (clamped to the plot: a launch-bound op far
  -- below the floor sits on it)
  for _, p in ipairs(self.points) do
    local x, y = cell(dx_of(p.intensity), dy_of(math.max(p.achieved, 10 ^ self.ylo)))
    chars[y * W + x] = { p.key, -1 }
  end
  local ansi_roof = { 34, 35, 36, 32, 33 }
  local function paint(text, a)
    if not color or not a then return text end
    return string.format("\27[%sm%s\27[0m", a, text)
  end
  local row_label = {}
  for k = self.ylo, self.yhi do
    local r = math.floor(dy_of(10 ^ k) + 0.5) // 4
    if r >= 0 and r < H and not row_label[r] and (self.yhi - self.ylo <= H // 2 or (self.yhi - k) % 2 == 0) then
      row_label[r] = decade_label(k)
    end
  end
  local lines = { string.format("roofline of %s (%s): FLOP/s against FLOP/byte, both log", self.device,
    self.model.name) }
  for r = 0, H - 1 do
    local out = { row_label[r] and (string.rep(" ", margin - #row_label[r]) .. row_label[r] .. " ┤")
      or (string.rep(" ", margin) .. " │") }
    for c = 0, W - 1 do
      local idx = r * W + c
      local ch = chars[idx]
      if ch then
        out[#out + 1] = paint(ch[1], ch[2] == -1 and "1;31" or ch[2] == nil and "1" or nil)
      elseif dots[idx] then
        out[#out + 1] = paint(utf8.char(0x2800 + dots[idx]), tostring(ansi_roof[(owner[idx] - 1) % #ansi_roof + 1]))
      else
        out[#out + 1] = " "
      end
    end
    lines[#lines + 1] = (table.concat(out):gsub("%s+$", ""))
  end
  -- the x axis: decades, labels centred under their ticks
  local axis, labels = {}, {}
  for c = 0, W - 1 do axis[c] = "─" end
  for k = self.xlo, self.xhi do
    local c = math.floor(dx_of(10 ^ k) + 0.5) // 2
    if c >= 0 and c < W then axis[c] = "┬"; labels[#labels + 1] = { col = c, text = intensity_label(k) } end
  end
  lines[#lines + 1] = string.rep(" ", margin + 1) .. "└" .. table.concat(axis, "", 0, W - 1)
  local row, used = {}, -1
  for _, l in ipairs(labels) do
    local start = margin + 2 + l.col - #l.text // 2
    if start > used + 1 then
      while #row < start do row[#row + 1] = " " end
      row[#row + 1] = l.text
      for _ = 2, #l.text do row[#row + 1] = "" end
      used = start + #l.text - 1
    end
  end
  lines[#lines + 1] = (table.concat(row):gsub("%s+$", ""))
  lines[#lines + 1] = string.rep(" ", margin + 2 + math.max(0, (W - 26) // 2)) .. "arithmetic intensity (FLOP/byte)"
  local roofs = {}
  for _, roof in ipairs(self.roofs) do
    roofs[#roofs + 1] = string.format("%s %s", roof.label, profiler.format_rate(roof.peak, "FLOP/s"))
  end
  lines[#lines + 1] = string.format("  roofs: %s; the slope: %s", table.concat(roofs, ", "),
    profiler.format_rate(self.bandwidth, "B/s"))
  lines[#lines + 1] = string.format("  ◆ the ridge: %s FLOP/byte (FP32); an op left of it is memory-bound at best",
    g3(self.ridge))
  for _, p in ipairs(self.points) do
    lines[#lines + 1] = string.format("  %s %s: %s FLOP/byte, %s, %s", paint(p.key, "1;31"), p.name, g3(p.intensity),
      profiler.format_rate(p.achieved, "FLOP/s"), p.bound and (p.bound .. "-bound") or "-")
  end
  if #self.devices > 1 then -- the other devices' pictures
    local other = self.devices[1] == self.device and self.devices[2] or self.devices[1]
    lines[#lines + 1] = string.format("  (%s's ops; ex:roofline('%s') draws %s's)", self.device, other, other)
  end
  return table.concat(lines, "\n") .. "\n"
end

local svg_serial = 0

local function f(v)
  if v > 1e6 then v = 1e6 elseif v < -1e6 then v = -1e6 end
  return string.format("%.2f", v)
end

function Roofline:_repr_svg_()
  local W, H = 560, 380
  local left, right, top, bottom = 56, 16, 30, 44
  local key_h = 16 * #self.points + 8
  local pw, ph = W - left - right, H - top - bottom
  local function px(i) return left + (log10(i) - self.xlo) / (self.xhi - self.xlo) * pw end
  local function py(v) return top + (1 - (log10(v) - self.ylo) / (self.yhi - self.ylo)) * ph end
  -- ids are shared by every SVG in a notebook page: each picture its own
  svg_serial = svg_serial + 1
  local clip = string.format("roofline-area-%d", svg_serial)
  local o = {}
  o[#o + 1] = string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
    .. 'font-family="DejaVu Sans, Arial, sans-serif" font-size="10" class="roofline">', W, H + key_h, W, H + key_h)
  o[#o + 1] = string.format('<rect width="%d" height="%d" fill="white"/>', W, H + key_h)
  o[#o + 1] = string.format('<text x="%s" y="18" text-anchor="middle" font-size="12">Roofline of %s (%s)</text>',
    f(left + pw / 2), esc(self.device), esc(self.model.name))
  o[#o + 1] = '<g stroke="#b0b0b0" stroke-width="0.8">'
  for k = self.xlo, self.xhi do
    o[#o + 1] = string.format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke-dasharray="2,2"/>', f(px(10 ^ k)), f(top),
      f(px(10 ^ k)), f(top + ph))
  end
  for k = self.ylo, self.yhi do
    o[#o + 1] = string.format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke-dasharray="2,2"/>', f(left),
      f(py(10 ^ k)), f(left + pw), f(py(10 ^ k)))
  end
  o[#o + 1] = '</g>'
  o[#o + 1] = '<g fill="black">'
  for k = self.xlo, self.xhi do
    o[#o + 1] = string.format('<text x="%s" y="%s" text-anchor="middle">%s</text>', f(px(10 ^ k)), f(top + ph + 14),
      intensity_label(k))
  end
  for k = self.ylo, self.yhi do
    o[#o + 1] = string.format('<text x="%s" y="%s" text-anchor="end">%s</text>', f(left - 5), f(py(10 ^ k) + 3.5),
      decade_label(k))
  end
  o[#o + 1] = '</g>'
  o[#o + 1] = string.format('<text x="%s" y="%s" text-anchor="middle">arithmetic intensity (FLOP/byte)</text>',
    f(left + pw / 2), f(top + ph + 30))
  o[#o + 1] = string.format('<text transform="translate(12,%s) rotate(-90)" text-anchor="middle">FLOP/s</text>',
    f(top + ph / 2))
  o[#o + 1] = string.format('<clipPath id="%s"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath>', clip, left,
    top, pw, ph)
  o[#o + 1] = string.format('<g clip-path="url(#%s)">', clip)
  local colors = { "#1f77b4", "#9467bd", "#17becf", "#2ca02c", "#ff7f0e" }
  local ilo, ihi = 10 ^ self.xlo, 10 ^ self.xhi
  for k, roof in ipairs(self.roofs) do
    local knee = roof.peak / self.bandwidth
    o[#o + 1] = string.format('<polyline class="roof" data-unit="%s" data-peak="%.6g" fill="none" stroke="%s" '
      .. 'stroke-width="2" points="%s,%s %s,%s %s,%s"/>', roof.unit, roof.peak, colors[(k - 1) % #colors + 1],
      f(px(ilo)), f(py(ilo * self.bandwidth)), f(px(knee)), f(py(roof.peak)), f(px(ihi)), f(py(roof.peak)))
    o[#o + 1] = string.format('<text class="roof-label" x="%s" y="%s" text-anchor="end" fill="%s">%s roof %s</text>',
      f(left + pw - 4), f(py(roof.peak) - 4), colors[(k - 1) % #colors + 1], esc(roof.label),
      esc(profiler.format_rate(roof.peak, "FLOP/s")))
  end
  -- the slope's label, along it, a decade in from the left
  local x0, y0 = px(ilo), py(ilo * self.bandwidth)
  local x1, y1 = px(ilo * 10), py(ilo * 10 * self.bandwidth)
  o[#o + 1] = string.format('<text class="roof-label" transform="translate(%s,%s) rotate(%s)" fill="%s">%s</text>',
    f(x0 + 6), f(y0 - 6), f(math.deg(math.atan(y1 - y0, x1 - x0))), colors[1],
    esc(profiler.format_rate(self.bandwidth, "B/s")))
  local rx, ry = px(self.ridge), py(self.model.peak.fp32)
  o[#o + 1] = string.format('<circle class="ridge" data-intensity="%.6g" cx="%s" cy="%s" r="4" fill="white" '
    .. 'stroke="black" stroke-width="1.2"/>', self.ridge, f(rx), f(ry))
  -- under the slope, left of the ridge: the op labels sit right of their points
  o[#o + 1] = string.format('<text x="%s" y="%s" text-anchor="end">ridge %s FLOP/byte</text>', f(rx - 6),
    f(ry + 14), g3(self.ridge))
  local floor = 10 ^ self.ylo
  for _, p in ipairs(self.points) do
    local cx, cy = px(p.intensity), py(math.max(p.achieved, floor))
    o[#o + 1] = string.format('<circle class="op" data-name="%s" data-intensity="%.6g" data-flops="%.6g" cx="%s" '
      .. 'cy="%s" r="4" fill="#d62728"/>', esc(p.name), p.intensity, p.achieved, f(cx), f(math.min(cy, top + ph - 3)))
    o[#o + 1] = string.format('<text class="op-label" x="%s" y="%s" fill="#d62728">%s %s</text>', f(cx + 6),
      f(math.min(cy + 14, top + ph - 3)), p.key, esc(p.name))
  end
  o[#o + 1] = '</g>'
  o[#o + 1] = string.format('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black" '
    .. 'stroke-width="0.8"/>', left, top, pw, ph)
  o[#o + 1] = '<g class="key">'
  for j, p in ipairs(self.points) do
    o[#o + 1] = string.format('<text x="%d" y="%d">%s %s: %s FLOP/byte, %s, %s</text>', left, H + 16 * j - 4, p.key,
      esc(p.name), g3(p.intensity), esc(profiler.format_rate(p.achieved, "FLOP/s")),
      p.bound and (p.bound .. "-bound") or "-")
  end
  o[#o + 1] = '</g>'
  o[#o + 1] = '</svg>'
  return table.concat(o, "\n") .. "\n"
end

M.Roofline = Roofline
return M
