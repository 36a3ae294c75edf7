-- torch.d2l.heatmaps: d2l.show_heatmaps (the attention chapters), a grid
-- of matrices coloured by value, described once and shown by torch.display:
--   a terminal:  two characters per entry (or per block of entries, averaged,
--                for a large matrix), coloured with the colour map (24-bit or
--                the 256-colour cube), or shades without colour; titles over
--                the columns, the y label beside the first, the x label under
--                the last row, and a colour bar line
--   not one:     a summary line
--   Jupyter, --notebook --md: SVG, one rectangle per entry (an embedded PNG
--                for a matrix of more than 2500 entries) and a colour bar
-- As matplotlib's imshow, each matrix is coloured over its own range, and
-- the colour bar shows the last one's (the book's figures).
local torch = require("torch")
local E = require("torch.utils.errors")
local fail, check_options, describe = E.fail, E.check_options, E.describe
local display = require("torch.display")
local clean = require("torch.d2l.chart").clean_text

local M = {}

-- matplotlib's sequential colour maps: ColorBrewer's nine-step ramps,
-- interpolated linearly
local CMAPS = {
  Reds = { 0xfff5f0, 0xfee0d2, 0xfcbba1, 0xfc9272, 0xfb6a4a, 0xef3b2c, 0xcb181d, 0xa50f15, 0x67000d },
  Blues = { 0xf7fbff, 0xdeebf7, 0xc6dbef, 0x9ecae1, 0x6baed6, 0x4292c6, 0x2171b5, 0x08519c, 0x08306b },
  Greens = { 0xf7fcf5, 0xe5f5e0, 0xc7e9c0, 0xa1d99b, 0x74c476, 0x41ab5d, 0x238b45, 0x006d2c, 0x00441b },
  Greys = { 0xffffff, 0xf0f0f0, 0xd9d9d9, 0xbdbdbd, 0x969696, 0x737373, 0x525252, 0x252525, 0x000000 },
  Oranges = { 0xfff5eb, 0xfee6ce, 0xfdd0a2, 0xfdae6b, 0xfd8d3c, 0xf16913, 0xd94801, 0xa63603, 0x7f2704 },
  Purples = { 0xfcfbfd, 0xefedf5, 0xdadaeb, 0xbcbddc, 0x9e9ac8, 0x807dba, 0x6a51a3, 0x54278f, 0x3f007d },
}
M.CMAPS = CMAPS

local function cmap_names()
  local n = {}
  for k in pairs(CMAPS) do n[#n + 1] = k end
  table.sort(n)
  return table.concat(n, ", ")
end

-- The colour of f in [0, 1] (nil: NaN, white) as r, g, b in 0..255.
local function colour(cmap, f)
  if f == nil then return 255, 255, 255 end
  local stops = CMAPS[cmap]
  local x = math.max(0, math.min(1, f)) * (#stops - 1)
  local i = math.min(#stops - 2, math.floor(x))
  local t = x - i
  local a, b = stops[i + 1], stops[i + 2]
  local function ch(shift)
    local u, v = (a >> shift) & 255, (b >> shift) & 255
    return math.floor(u + (v - u) * t + 0.5)
  end
  return ch(16), ch(8), ch(0)
end
M.colour = colour

local Heatmaps = {}
Heatmaps.__index = Heatmaps
Heatmaps.__name = "d2l.Heatmaps"
M.Heatmaps = Heatmaps

-- One matrix: its values (row-major, NaN kept) and finite range.
local function matrix_of(t)
  local h, w = t:size(1), t:size(2)
  local vals = t:reshape(-1):tolist()
  local lo, hi = math.huge, -math.huge
  for _, v in ipairs(vals) do
    if v == v and v ~= math.huge and v ~= -math.huge then
      if v < lo then lo = v end
      if v > hi then hi = v end
    end
  end
  if lo > hi then lo, hi = 0, 0 end
  return { h = h, w = w, vals = vals, lo = lo, hi = hi }
end

-- An entry's place in its matrix's range, 0..1, or nil for NaN.
local function frac(m, v)
  if v ~= v then return nil end
  if v == math.huge then return 1 end
  if v == -math.huge or not (m.hi > m.lo) then return 0 end
  return (v - m.lo) / (m.hi - m.lo)
end

-- show_heatmaps(matrices, xlabel, ylabel[, {titles =, figsize = {2.5, 2.5},
-- cmap = "Reds"}]): matrices [rows, cols, h, w], one heatmap each; titles
-- name the columns. The labels may also come in the options table, and
-- titles as a fourth argument (a list). Returns nothing: the picture is
-- shown, not printed again as the cell's value.
function M.show_heatmaps(matrices, xlabel, ylabel, opts, ...)
  local who = "d2l.show_heatmaps(matrices, xlabel, ylabel[, {titles =, figsize =, cmap =}])"
  if type(xlabel) == "table" and ylabel == nil and opts == nil then opts, xlabel = xlabel, nil end
  if type(opts) == "table" and opts[1] ~= nil then
    -- the book's positional order: titles, figsize, cmap
    local figsize, cmap = ...
    opts = { titles = opts, figsize = figsize, cmap = cmap }
  end
  opts = opts or {}
  if type(opts) ~= "table" then fail(who .. ": the options must be a table, got " .. describe(opts)) end
  check_options(opts, "d2l.show_heatmaps", { "xlabel", "ylabel", "titles", "figsize", "cmap" })
  xlabel = xlabel or opts.xlabel
  ylabel = ylabel or opts.ylabel
  for _, l in ipairs({ { "xlabel", xlabel }, { "ylabel", ylabel } }) do
    if l[2] ~= nil and type(l[2]) ~= "string" then fail(("%s: %s must be a string, got %s"):format(who, l[1], describe(l[2]))) end
  end
  if not torch.is_tensor(matrices) or matrices:dim() ~= 4 then
    fail(who .. ": matrices must be a 4-d tensor (rows, columns, height, width) of the grid, got " .. describe(matrices)
      .. (torch.is_tensor(matrices) and matrices:dim() == 2 and "; show one matrix m as m:reshape(1, 1, h, w)" or ""))
  end
  local cmap = opts.cmap or "Reds"
  if CMAPS[cmap] == nil then
    fail(("%s: unknown cmap '%s'; gshell draws %s"):format(who, tostring(cmap), cmap_names()))
  end
  local figsize = opts.figsize or { 2.5, 2.5 }
  if type(figsize) ~= "table" or type(figsize[1]) ~= "number" or type(figsize[2]) ~= "number" or figsize[1] <= 0
      or figsize[2] <= 0 then
    fail(who .. ": figsize must be {width, height} in inches, got " .. describe(figsize))
  end
  local titles = opts.titles
  if titles ~= nil and type(titles) ~= "table" then fail(who .. ": titles must be a list of strings, got " .. describe(titles)) end
  local rows, cols = matrices:size(1), matrices:size(2)
  local m = matrices:detach():to("cpu"):to(torch.float64)
  local self = setmetatable({ rows = rows, cols = cols, mats = {}, titles = {}, cmap = cmap,
    xlabel = clean(xlabel), ylabel = clean(ylabel), figsize = { figsize[1], figsize[2] } }, Heatmaps)
  for i = 1, rows do
    for j = 1, cols do self.mats[(i - 1) * cols + j] = matrix_of(m[i][j]) end
  end
  for j = 1, cols do
    if titles and titles[j] ~= nil then self.titles[j] = clean(tostring(titles[j])) end
  end
  display.display(self)
end

-- ---- the terminal ---------------------------------------------------------------

local SHADES = { " ", "░", "▒", "▓", "█" }
M.MAX_LINES, M.MAX_COLS = 16, 24   -- blocks a matrix shows at most

local function utf8_len(s) return utf8.len(s) or #s end
local function pad(s, n) return s .. string.rep(" ", math.max(0, n - utf8_len(s))) end
local function centre(s, n)
  local l = utf8_len(s)
  if l >= n then return s end
  local left = (n - l) // 2
  return string.rep(" ", left) .. s .. string.rep(" ", n - l - left)
end

local function fmt(v) return (string.format("%.3g", v)) end

-- The average of a block of entries, NaN left out (NaN when all are).
local function block(mat, r0, r1, c0, c1)
  local s, n = 0, 0
  for r = r0, r1 do
    for c = c0, c1 do
      local v = mat.vals[(r - 1) * mat.w + c]
      if v == v then s, n = s + v, n + 1 end
    end
  end
  return n > 0 and s / n or 0 / 0
end

-- How a matrix is cut into blocks: lines, columns and the entries each
-- spans (1 when the matrix fits).
local function blocks_of(mat, max_cols)
  local bh = math.max(1, math.ceil(mat.h / M.MAX_LINES))
  local bw = math.max(1, math.ceil(mat.w / max_cols))
  return math.ceil(mat.h / bh), math.ceil(mat.w / bw), bh, bw
end

-- n characters (2 for an entry, 1 in the colour bar): a coloured
-- background, or a shade (denser for larger values).
local function cell(self, mat, v, color, truecolor, n)
  n = n or 2
  local f = frac(mat, v)
  if not color then
    if f == nil then return string.rep(" ", n) end
    return string.rep(SHADES[math.min(5, math.floor(f * 5) + 1)], n)
  end
  local r, g, b = colour(self.cmap, f)
  local blank = string.rep(" ", n)
  if truecolor then return string.format("\27[48;2;%d;%d;%dm%s\27[0m", r, g, b, blank) end
  -- the 6 x 6 x 6 cube of the 256-colour palette
  local function q(x) return math.floor(x / 255 * 5 + 0.5) end
  return string.format("\27[48;5;%dm%s\27[0m", 16 + 36 * q(r) + 6 * q(g) + q(b), blank)
end

function Heatmaps:_repr_term_(opts)
  local color = opts and opts.color
  local truecolor = color and (os.getenv("COLORTERM") == "truecolor" or os.getenv("COLORTERM") == "24bit")
  local ylab = self.ylabel or ""
  local margin = utf8_len(ylab) > 0 and utf8_len(ylab) + 1 or 0
  -- the columns each matrix may take: the terminal's width shared
  local room = M.MAX_COLS
  if opts and opts.columns then
    room = math.max(2, math.min(M.MAX_COLS, ((opts.columns - margin) // self.cols - 2) // 2))
  end
  local lines = {}
  local shapes = {}
  for k, mat in ipairs(self.mats) do
    local nl, nc, bh, bw = blocks_of(mat, room)
    shapes[k] = { nl = nl, nc = nc, bh = bh, bw = bw }
  end
  local colw = {}
  for j = 1, self.cols do
    local w = 0
    for i = 1, self.rows do w = math.max(w, 2 * shapes[(i - 1) * self.cols + j].nc) end
    w = math.max(w, utf8_len(self.titles[j] or ""))
    colw[j] = w
  end
  local function row_line(parts) return (table.concat(parts, "  "):gsub("%s+$", "")) end
  if next(self.titles) then
    local t = {}
    for j = 1, self.cols do t[j] = centre(self.titles[j] or "", colw[j]) end
    lines[#lines + 1] = string.rep(" ", margin) .. row_line(t)
  end
  local blocked = false
  for i = 1, self.rows do
    local nl = 0
    for j = 1, self.cols do nl = math.max(nl, shapes[(i - 1) * self.cols + j].nl) end
    local mid = (nl + 1) // 2
    for y = 1, nl do
      local parts = {}
      for j = 1, self.cols do
        local k = (i - 1) * self.cols + j
        local mat, s = self.mats[k], shapes[k]
        if s.bh > 1 or s.bw > 1 then blocked = true end
        local cells = {}
        if y <= s.nl then
          for x = 1, s.nc do
            local r0, c0 = (y - 1) * s.bh + 1, (x - 1) * s.bw + 1
            local v = block(mat, r0, math.min(mat.h, r0 + s.bh - 1), c0, math.min(mat.w, c0 + s.bw - 1))
            cells[x] = cell(self, mat, v, color, truecolor)
          end
        end
        parts[j] = table.concat(cells) .. string.rep(" ", colw[j] - 2 * (y <= s.nl and s.nc or 0))
      end
      local lead = margin > 0 and pad(y == mid and ylab or "", margin) or ""
      lines[#lines + 1] = lead .. row_line(parts)
    end
  end
  if self.xlabel and self.xlabel ~= "" then
    local t = {}
    for j = 1, self.cols do t[j] = centre(self.xlabel, colw[j]) end
    lines[#lines + 1] = string.rep(" ", margin) .. row_line(t)
  end
  -- the colour bar: the last matrix's range, in eight steps
  local last = self.mats[#self.mats]
  if last then
    local bar = {}
    for s = 0, 7 do
      local v = last.lo + (last.hi - last.lo) * s / 7
      bar[#bar + 1] = cell(self, last, v, color, truecolor, 1)
    end
    lines[#lines + 1] = string.rep(" ", margin) .. fmt(last.lo) .. " " .. table.concat(bar) .. " " .. fmt(last.hi)
      .. (blocked and "  (blocks of entries averaged)" or "")
  end
  return table.concat(lines, "\n") .. "\n"
end

function Heatmaps:_repr_line_()
  local first = self.mats[1]
  local s = string.format("show_heatmaps: %d x %d matrices of %d x %d", self.rows, self.cols, first and first.h or 0,
    first and first.w or 0)
  if self.ylabel or self.xlabel then s = s .. string.format(" (%s x %s)", self.ylabel or "rows", self.xlabel or "columns") end
  local last = self.mats[#self.mats]
  if last then s = s .. ", values " .. fmt(last.lo) .. " to " .. fmt(last.hi) end
  if next(self.titles) then
    local t = {}
    for j = 1, self.cols do t[j] = self.titles[j] or "" end
    s = s .. ": " .. table.concat(t, ", ")
  end
  return s
end

function Heatmaps:__tostring() return self:_repr_line_() end

-- ---- SVG ------------------------------------------------------------------------

M.MAX_RECTS = 2500   -- entries a matrix draws as rectangles; more: a PNG

local function hex(r, g, b) return string.format("#%02x%02x%02x", r, g, b) end

-- A matrix as a PNG, one pixel per entry.
local function png_of(self, mat)
  local px = {}
  for i, v in ipairs(mat.vals) do px[i] = string.char(colour(self.cmap, frac(mat, v))) end
  return torch._png_encode(table.concat(px), mat.w, mat.h, 3)
end

function Heatmaps:_repr_svg_()
  local esc = require("torch.d2l.chart_svg").escape
  local W = math.floor(self.figsize[1] * 100 + 0.5)
  local H = math.floor(self.figsize[2] * 100 + 0.5)
  local left, right, gap = self.ylabel and 46 or 30, 64, 12
  local top = next(self.titles) and 22 or 10
  local bottom = self.xlabel and 40 or 24
  -- square entries, as imshow: the largest that fits every panel
  local mh, mw = 1, 1
  for _, mat in ipairs(self.mats) do mh, mw = math.max(mh, mat.h), math.max(mw, mat.w) end
  local pw = (W - left - right - gap * (self.cols - 1)) / self.cols
  local ph = (H - top - bottom - (gap + top) * (self.rows - 1)) / self.rows
  local u = math.max(0.5, math.min(pw / mw, ph / mh))
  local o = { string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
    .. 'font-family="DejaVu Sans, Arial, sans-serif" font-size="10">', W, H, W, H),
    string.format('<rect width="%d" height="%d" fill="white"/>', W, H) }
  local function f(v) return string.format("%.2f", v) end
  for i = 1, self.rows do
    for j = 1, self.cols do
      local mat = self.mats[(i - 1) * self.cols + j]
      local x0 = left + (j - 1) * (mw * u + gap)
      local y0 = top + (i - 1) * (mh * u + gap + top)
      if self.titles[j] then
        o[#o + 1] = string.format('<text class="title" x="%s" y="%s" text-anchor="middle">%s</text>',
          f(x0 + mat.w * u / 2), f(y0 - 6), esc(self.titles[j]))
      end
      if mat.h * mat.w <= M.MAX_RECTS then
        o[#o + 1] = '<g class="cells" shape-rendering="crispEdges">'
        for r = 1, mat.h do
          for c = 1, mat.w do
            local v = mat.vals[(r - 1) * mat.w + c]
            o[#o + 1] = string.format('<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>',
              f(x0 + (c - 1) * u), f(y0 + (r - 1) * u), f(u), f(u), hex(colour(self.cmap, frac(mat, v))), fmt(v))
          end
        end
        o[#o + 1] = "</g>"
      else
        o[#o + 1] = string.format('<image x="%s" y="%s" width="%s" height="%s" style="image-rendering:pixelated" '
          .. 'preserveAspectRatio="none" href="data:image/png;base64,%s"/>', f(x0), f(y0), f(mat.w * u), f(mat.h * u),
          display.base64(png_of(self, mat)))
      end
      o[#o + 1] = string.format('<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#333" '
        .. 'stroke-width="0.6"/>', f(x0), f(y0), f(mat.w * u), f(mat.h * u))
      -- 1-based ticks at the first and last entry
      local ty = y0 + mat.h * u + 10
      o[#o + 1] = string.format('<text x="%s" y="%s" text-anchor="middle" font-size="8">1</text>', f(x0 + u / 2), f(ty))
      if mat.w > 1 then
        o[#o + 1] = string.format('<text x="%s" y="%s" text-anchor="middle" font-size="8">%d</text>',
          f(x0 + (mat.w - 0.5) * u), f(ty), mat.w)
      end
      if j == 1 then
        o[#o + 1] = string.format('<text x="%s" y="%s" text-anchor="end" font-size="8">1</text>', f(x0 - 3),
          f(y0 + u / 2 + 3))
        if mat.h > 1 then
          o[#o + 1] = string.format('<text x="%s" y="%s" text-anchor="end" font-size="8">%d</text>', f(x0 - 3),
            f(y0 + (mat.h - 0.5) * u + 3), mat.h)
        end
      end
      if i == self.rows and self.xlabel then
        o[#o + 1] = string.format('<text class="xlabel" x="%s" y="%s" text-anchor="middle">%s</text>',
          f(x0 + mat.w * u / 2), f(ty + 14), esc(self.xlabel))
      end
      if j == 1 and self.ylabel then
        local cx, cy = left - 24, y0 + mat.h * u / 2
        o[#o + 1] = string.format('<text class="ylabel" x="%s" y="%s" text-anchor="middle" '
          .. 'transform="rotate(-90 %s %s)">%s</text>', f(cx), f(cy), f(cx), f(cy), esc(self.ylabel))
      end
    end
  end
  -- the colour bar: the last matrix's range, bottom to top
  local last = self.mats[#self.mats]
  if last then
    -- as tall as the grid of panels
    local bx, by = W - right + 14, top
    local bh = math.max(20, self.rows * mh * u + (self.rows - 1) * (gap + top))
    local n = 32
    o[#o + 1] = '<g class="colorbar" shape-rendering="crispEdges">'
    for s = 0, n - 1 do
      o[#o + 1] = string.format('<rect x="%s" y="%s" width="10" height="%s" fill="%s"/>', f(bx),
        f(by + bh - (s + 1) * bh / n), f(bh / n + 0.3), hex(colour(self.cmap, (s + 0.5) / n)))
    end
    o[#o + 1] = "</g>"
    o[#o + 1] = string.format('<text x="%s" y="%s" font-size="8">%s</text>', f(bx + 13), f(by + 7), esc(fmt(last.hi)))
    o[#o + 1] = string.format('<text x="%s" y="%s" font-size="8">%s</text>', f(bx + 13), f(by + bh), esc(fmt(last.lo)))
  end
  o[#o + 1] = "</svg>"
  return table.concat(o, "\n") .. "\n"
end

-- Saves the picture (.svg).
function Heatmaps:save(path) return display.save(self, path) end

return M
