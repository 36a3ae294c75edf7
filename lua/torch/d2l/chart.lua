-- torch.d2l.chart: a line chart described once (series, axes, labels), then
-- shown through torch.display by whichever view the front end takes:
-- chart_term.lua (Unicode braille at a terminal), chart_svg.lua (SVG for
-- Jupyter and --notebook --md) or one summary line.
--
--   local c = Chart.new({xlabel =, ylabel =, legend = {...}, xlim = {a, b},
--                        ylim =, xscale = 'linear'|'log', yscale =, fmts =})
--   c:set_series(i, xs, ys)       series i (1-based) holds these points
-- The format strings are matplotlib's as the book writes them: a colour
-- letter (b g r c m y k), a line style ('-', '--', '-.', ':') and
-- optionally a marker ('o', '.', 'x', '+', '*'). Without a colour, series
-- take matplotlib's default colour cycle.
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options

local Chart = {}
Chart.__index = Chart
Chart.__name = "d2l.Chart"

-- matplotlib's colour letters and its default cycle (tab10's first four)
Chart.colors = {
  b = "#1f77b4", g = "#008000", r = "#ff0000", c = "#00bfbf", m = "#bf00bf", y = "#bfbf00", k = "#000000",
}
Chart.cycle = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b" }
Chart.default_fmts = { "-", "m--", "g-.", "r:" }

-- Parses a format string: colour (or nil), style ('-', '--', '-.', ':' or
-- nil when only a marker is given), marker (or nil).
function Chart.parse_fmt(fmt, who)
  if type(fmt) ~= "string" then fail(who .. ": a format must be a string such as 'm--', got " .. type(fmt)) end
  local color, style, marker
  local rest = fmt
  local c = rest:match("^[bgrcmyk]")
  if c then color, rest = c, rest:sub(2) end
  local m = rest:match("^[o%.x%+%*]")
  if m then marker, rest = m, rest:sub(2) end
  for _, s in ipairs({ "--", "-.", "-", ":" }) do
    if rest:sub(1, #s) == s then style, rest = s, rest:sub(#s + 1); break end
  end
  if not marker then
    m = rest:match("^[o%.x%+%*]")
    if m then marker, rest = m, rest:sub(2) end
  end
  if not color then
    c = rest:match("^[bgrcmyk]")
    if c then color, rest = c, rest:sub(2) end
  end
  if rest ~= "" then
    fail(string.format("%s: cannot read the format '%s': expected a colour letter (b g r c m y k), a line "
      .. "style ('-', '--', '-.', ':') and/or a marker ('o', '.', 'x', '+', '*'), e.g. 'm--'", who, fmt))
  end
  if not style and not marker then style = "-" end
  return color, style, marker
end

local function check_lim(v, name, who)
  if v == nil then return nil end
  -- low == high is allowed (the book's xlim = {1, num_epochs} for one epoch)
  if type(v) ~= "table" or type(v[1]) ~= "number" or type(v[2]) ~= "number" or not (v[1] <= v[2]) then
    fail(string.format("%s: %s must be a pair {low, high} with low <= high, e.g. {1, 10}", who, name))
  end
  return { v[1], v[2] }
end

local function check_scale(v, name, who)
  if v == nil then return "linear" end
  if v ~= "linear" and v ~= "log" then
    fail(string.format("%s: %s must be 'linear' or 'log', got %s", who, name, tostring(v)))
  end
  return v
end

Chart.option_names = { "xlabel", "ylabel", "legend", "xlim", "ylim", "xscale", "yscale", "fmts", "title",
  "figsize", "width", "height" }

-- Text a picture shows (title, labels, legend names) without C0 control
-- characters or DEL: raw, "\27]0;...\7" would retitle the terminal and
-- "\27[2J" clear it, and any of them makes the SVG invalid XML. Line
-- breaks and tabs become spaces, the others U+FFFD.
function Chart.clean_text(v)
  if type(v) ~= "string" then return v end
  return (v:gsub("[%z\1-\31\127]", function(c)
    if c == "\n" or c == "\r" or c == "\t" then return " " end
    return "\u{FFFD}"
  end))
end

function Chart.new(opts, who)
  who = who or "Chart"
  opts = opts or {}
  if type(opts) ~= "table" then fail(who .. ": expected an options table, got " .. type(opts)) end
  check_options(opts, who, Chart.option_names)
  local self = setmetatable({
    xlabel = Chart.clean_text(opts.xlabel), ylabel = Chart.clean_text(opts.ylabel), title = Chart.clean_text(opts.title),
    legend = opts.legend or {},
    xlim = check_lim(opts.xlim, "xlim", who), ylim = check_lim(opts.ylim, "ylim", who),
    xscale = check_scale(opts.xscale, "xscale", who), yscale = check_scale(opts.yscale, "yscale", who),
    fmts = opts.fmts or Chart.default_fmts,
    series = {},
    who = who,
    -- sizes: figsize in inches as the book's (3.5 x 2.5), terminal cells
    figsize = opts.figsize or { 3.5, 2.5 },
    width = opts.width, height = opts.height,
  }, Chart)
  if type(self.legend) ~= "table" then fail(who .. ": legend must be a list of names") end
  local legend = {}
  for i, name in pairs(self.legend) do legend[i] = Chart.clean_text(name) end
  self.legend = legend
  if type(self.fmts) == "string" then self.fmts = { self.fmts } end
  for _, f in ipairs(self.fmts) do Chart.parse_fmt(f, who) end
  return self
end

-- The style of series i: {color = "#rrggbb", style =, marker =, name =}.
function Chart:style(i)
  local fmt = self.fmts[(i - 1) % #self.fmts + 1]
  local c, style, marker = Chart.parse_fmt(fmt, self.who)
  return {
    color = c and Chart.colors[c] or Chart.cycle[(i - 1) % #Chart.cycle + 1],
    letter = c, style = style, marker = marker, name = self.legend[i],
  }
end

function Chart:set_series(i, xs, ys)
  self.series[i] = { x = xs, y = ys }
end

-- ---- axes ----------------------------------------------------------------------

local function tr(v, scale) if scale == "log" then return math.log(v, 10) end return v end
Chart.transform = tr

-- Can a point be drawn? Not NaN or infinite (a diverging loss), and
-- positive on a log axis; views skip the others.
function Chart:drawable(x, y)
  if x == nil or y == nil then return false end
  if x ~= x or y ~= y or x == math.huge or x == -math.huge or y == math.huge or y == -math.huge then
    return false
  end
  if self.xscale == "log" and x <= 0 then return false end
  if self.yscale == "log" and y <= 0 then return false end
  return true
end

-- The data range of the points one axis can show (positive only for log);
-- for y, only points inside xlim count (the Animator's first points, before
-- epoch 1, would otherwise squash the curves).
local function data_range(self, key, scale)
  local lo, hi = math.huge, -math.huge
  local xl = key == "y" and self.xlim
  for _, s in pairs(self.series) do
    for i, v in ipairs(s[key]) do
      local x = s.x[i]
      if v == v and v ~= math.huge and v ~= -math.huge and (scale ~= "log" or v > 0)
         and (not xl or (x >= xl[1] and x <= xl[2])) then
        if v < lo then lo = v end
        if v > hi then hi = v end
      end
    end
  end
  if lo > hi then return nil end
  return lo, hi
end

-- "Nice" tick step for a range: 1, 2 or 5 times a power of ten, about n ticks.
local function nice_step(span, n)
  local raw = span / n
  local p = 10 ^ math.floor(math.log(raw, 10))
  local f = raw / p
  local step = (f < 1.5 and 1) or (f < 3.5 and 2) or (f < 7.5 and 5) or 10
  return step * p
end

-- A linear axis's tick label: fixed-point while that stays short; else
-- (1e-200, 1e200) as many significant digits as tell the ticks apart
-- (string.format refuses more than 99 decimals).
local function tick_label(v, step, decimals)
  if decimals <= 12 and math.abs(v) < 1e15 then return string.format("%." .. decimals .. "f", v) end
  if v == 0 then return "0" end
  local sig = math.floor(math.log(math.abs(v), 10)) - math.floor(math.log(step, 10)) + 1
  return string.format("%." .. math.max(1, math.min(17, sig)) .. "g", v)
end

-- The shown range (in transformed units) and the ticks of one axis:
-- lo, hi, ticks = {{pos = transformed, label = text}, ...}; about nticks
-- ticks (default 4) on a linear axis.
function Chart:axis(key, nticks)
  local scale = key == "x" and self.xscale or self.yscale
  local lim
  if key == "x" then lim = self.xlim else lim = self.ylim end
  local lo, hi
  if lim then
    lo, hi = lim[1], lim[2]
    if scale == "log" and lo <= 0 then lo = hi / 1000 end
    if lo == hi then
      if scale == "log" then lo, hi = lo / 2, hi * 2 else lo, hi = lo - 0.5, hi + 0.5 end
    end
  else
    lo, hi = data_range(self, key, scale)
    if not lo then lo, hi = (scale == "log" and 1 or 0), (scale == "log" and 10 or 1) end
    if lo == hi then
      local d = lo == 0 and 1 or math.abs(lo) * 0.1
      if scale == "log" then lo, hi = lo / 2, hi * 2 else lo, hi = lo - d, hi + d end
    elseif key == "y" and scale == "linear" then
      -- matplotlib's 5% margin, so curves do not run along the frame
      local m = hi * 0.05 - lo * 0.05 -- not (hi - lo) * 0.05: that overflows for -1e308..1e308
      lo, hi = lo - m, hi + m
    end
  end
  local tlo, thi = tr(lo, scale), tr(hi, scale)
  local ticks = {}
  if scale == "log" then
    for e = math.ceil(tlo - 1e-9), math.floor(thi + 1e-9) do
      ticks[#ticks + 1] = { pos = e, label = (e >= 0 and e <= 4) and string.format("%d", 10 ^ e)
        or string.format("1e%d", e) }
    end
  else
    -- a span past the largest double is measured in halves
    local span = thi - tlo
    local step = span < math.huge and nice_step(span, nticks or 4) or nice_step(thi / 2 - tlo / 2, nticks or 4) * 2
    local first = math.ceil(tlo / step - 1e-9)
    local decimals = math.max(0, -math.floor(math.log(step, 10) + 1e-9))
    for k = first, math.floor(thi / step + 1e-9) do
      local v = k * step
      if math.abs(v) < step * 1e-9 then v = 0 end
      ticks[#ticks + 1] = { pos = v, label = tick_label(v, step, decimals) }
    end
  end
  return tlo, thi, ticks
end

-- ---- the summary line ----------------------------------------------------------

local function num(v)
  if v == nil then return "-" end
  if math.type(v) == "integer" then return tostring(v) end
  return string.format("%.3f", v)
end
Chart.num = num

-- A static chart (d2l.plot): its curves, their sizes and ranges, e.g.
-- "plot of sin(x), cos(x): 30 points each, x 0..2.9, y -0.99..1".
local function static_line(self)
  local names, counts = {}, {}
  local xlo, xhi, ylo, yhi = math.huge, -math.huge, math.huge, -math.huge
  for i = 1, #self.series do
    local s = self.series[i]
    names[#names + 1] = self.legend[i] or ("y" .. i)
    counts[#s.y] = true
    for k = 1, #s.y do
      local x, y = s.x[k], s.y[k]
      if x and x == x then xlo, xhi = math.min(xlo, x), math.max(xhi, x) end
      if y and y == y then ylo, yhi = math.min(ylo, y), math.max(yhi, y) end
    end
  end
  if #names == 0 then return "plot: no curves" end
  local n = next(counts)
  local each = next(counts, n) == nil and string.format("%d point%s%s", n, n == 1 and "" or "s",
    #names > 1 and " each" or "") or "points"
  local g = function(v) return string.format("%.4g", v) end
  if xlo > xhi then return string.format("plot of %s: %s", table.concat(names, ", "), each) end
  return string.format("plot of %s: %s, %s %s..%s, %s %s..%s", table.concat(names, ", "), each,
    self.xlabel or "x", g(xlo), g(xhi), self.ylabel or "y", g(ylo), g(yhi))
end

-- One line: each series' last point, e.g.
-- "epoch 2.00: train loss 0.512, train acc 0.812".
function Chart:_repr_line_()
  if self.static then return static_line(self) end
  local parts = {}
  local lastx
  for i = 1, #self.series do
    local s = self.series[i]
    -- an Animator's line names only the series its last add() gave a point
    if s and #s.y > 0 and (not self.last_added or self.last_added[i]) then
      lastx = s.x[#s.x]
      parts[#parts + 1] = string.format("%s %s", self.legend[i] or ("y" .. i), num(s.y[#s.y]))
    end
  end
  if #parts == 0 then return "chart: no points yet" end
  local xs = math.type(lastx) == "integer" and tostring(lastx) or string.format("%.2f", lastx)
  return string.format("%s %s: %s", self.xlabel or "x", xs, table.concat(parts, ", "))
end

function Chart:__tostring() return self:_repr_line_() end

function Chart:_repr_term_(opts)
  return require("torch.d2l.chart_term").render(self, opts)
end

function Chart:_repr_svg_()
  return require("torch.d2l.chart_svg").render(self)
end

return Chart
