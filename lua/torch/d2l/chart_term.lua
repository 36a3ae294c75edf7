-- torch.d2l.chart_term: a chart (chart.lua) drawn with Unicode braille for
-- a terminal. Each character cell holds 2 x 4 dots, so a 56 x 12 cell plot
-- is 112 x 48 dots; a cell takes the colour of the last series drawn in
-- it. Axes have ticks and labels, line styles become dot patterns, and a
-- legend repeats each series' style and colour.
--
--   render(chart, {color = bool, width = cells, height = cells}) -> text
local Chart = require("torch.d2l.chart")

local M = {}

M.WIDTH, M.HEIGHT = 56, 12

-- braille dot bits, indexed [column 0..1][row 0..3]
local BITS = { [0] = { [0] = 0x01, 0x02, 0x04, 0x40 }, [1] = { [0] = 0x08, 0x10, 0x20, 0x80 } }

-- ANSI colours for matplotlib's letters and its default cycle
local ANSI_LETTER = { b = 34, g = 32, r = 31, c = 36, m = 35, y = 33, k = 39 }
local ANSI_CYCLE = { 34, 33, 32, 31, 35, 33 }

-- on/off dot patterns along a line, per style
local PATTERN = { ["-"] = { 1 }, ["--"] = { 1, 1, 1, 1, 0, 0, 0 }, ["-."] = { 1, 1, 1, 1, 0, 0, 1, 0, 0 },
  [":"] = { 1, 0, 0 } }
local LEGEND_LINE = { ["-"] = "──", ["--"] = "╌╌", ["-."] = "─·", [":"] = "┈┈" }

local function utf8_len(s) return utf8.len(s) or #s end

-- The part of the segment (x0, y0)-(x1, y1) inside [-1, W] x [-1, H]
-- (Liang-Barsky), or nil when none of it is.
local function clip(x0, y0, x1, y1, W, H)
  local t0, t1 = 0, 1
  local dx, dy = x1 - x0, y1 - y0
  local checks = { { -dx, x0 + 1 }, { dx, W - x0 }, { -dy, y0 + 1 }, { dy, H - y0 } }
  for _, c in ipairs(checks) do
    local p, q = c[1], c[2]
    if p == 0 then
      if q < 0 then return nil end
    else
      local r = q / p
      if p < 0 then
        if r > t1 then return nil end
        if r > t0 then t0 = r end
      else
        if r < t0 then return nil end
        if r < t1 then t1 = r end
      end
    end
  end
  return x0 + t0 * dx, y0 + t0 * dy, x0 + t1 * dx, y0 + t1 * dy
end
M.clip = clip

local function pad_left(s, n) return string.rep(" ", n - utf8_len(s)) .. s end

function M.render(chart, opts)
  opts = opts or {}
  local W = opts.width or chart.width or M.WIDTH
  local H = opts.height or chart.height or M.HEIGHT
  -- a narrow terminal: the plot shrinks to fit (labels take about 8 columns)
  if opts.columns and not opts.width and not chart.width then W = math.max(16, math.min(W, opts.columns - 9)) end
  local color = opts.color
  local DW, DH = 2 * W, 4 * H
  -- about one x tick per 12 columns and one y tick per 3 rows
  local x0, x1, xticks = chart:axis("x", math.max(2, W // 12))
  local y0, y1, yticks = chart:axis("y", math.max(2, H // 3))
  local tr = Chart.transform

  local dots, owner = {}, {}   -- [cell index] = bits / series number
  local function plot(dx, dy, k)
    if dx < 0 or dy < 0 or dx >= DW or dy >= DH then return end
    local cx, cy = dx // 2, dy // 4
    local idx = cy * W + cx
    dots[idx] = (dots[idx] or 0) | BITS[dx % 2][dy % 4]
    owner[idx] = k
  end
  -- data -> dot coordinates (floating; rounded when drawn)
  local function to_dot(x, y)
    local fx = (tr(x, chart.xscale) - x0) / (x1 - x0)
    local fy = (tr(y, chart.yscale) - y0) / (y1 - y0)
    -- far points are pulled in to a million dots: the direction of their
    -- line where it is seen barely changes, and clipping it stays exact
    local function near(v) return math.max(-1e6, math.min(1e6, v)) end
    return near(fx * (DW - 1)), near((1 - fy) * (DH - 1))
  end
  local function valid(x, y) return chart:drawable(x, y) end

  local styles = {}
  for k = 1, #chart.series do
    local s = chart.series[k]
    local st = chart:style(k)
    st.ansi = st.letter and ANSI_LETTER[st.letter] or ANSI_CYCLE[(k - 1) % #ANSI_CYCLE + 1]
    styles[k] = st
    if s then
      local pat = st.style and PATTERN[st.style]
      local step = 0
      local px, py
      for i = 1, #s.x do
        local x, y = s.x[i], s.y[i]
        if valid(x, y) then
          local dx, dy = to_dot(x, y)
          if pat and px then
            -- a line from the previous point, sampled every half dot; only
            -- its part inside the plot (a point far outside would make
            -- the sampling endless)
            local ax, ay, bx, by = clip(px, py, dx, dy, DW, DH)
            local n = ax and math.max(1, math.ceil(math.max(math.abs(bx - ax), math.abs(by - ay)) * 2)) or 0
            for j = 1, n do
              local t = j / n
              local qx, qy = ax + (bx - ax) * t, ay + (by - ay) * t
              if j % 2 == 0 or j == n then
                step = step + 1
                if pat[(step - 1) % #pat + 1] == 1 then plot(math.floor(qx + 0.5), math.floor(qy + 0.5), k) end
              end
            end
          elseif pat then
            plot(math.floor(dx + 0.5), math.floor(dy + 0.5), k)
          end
          if st.marker then
            local rx, ry = math.floor(dx + 0.5), math.floor(dy + 0.5)
            plot(rx, ry, k); plot(rx - 1, ry, k); plot(rx + 1, ry, k); plot(rx, ry - 1, k); plot(rx, ry + 1, k)
          end
          px, py = dx, dy
        end
      end
    end
  end

  local function paint(text, ansi)
    if not color or ansi == nil then return text end
    return string.format("\27[%dm%s\27[0m", ansi, text)
  end

  -- the y labels: which cell row each tick falls in
  local margin = 1
  for _, t in ipairs(yticks) do margin = math.max(margin, utf8_len(t.label)) end
  local row_label = {}
  for _, t in ipairs(yticks) do
    local r = math.floor((1 - (t.pos - y0) / (y1 - y0)) * (DH - 1) + 0.5) // 4
    if r >= 0 and r < H and not row_label[r] then row_label[r] = t.label end
  end

  local lines = {}
  if chart.title then lines[#lines + 1] = string.rep(" ", margin + 2) .. chart.title end
  if chart.ylabel then lines[#lines + 1] = chart.ylabel end
  for r = 0, H - 1 do
    local out = {}
    local lab = row_label[r]
    out[1] = lab and (pad_left(lab, margin) .. " ┤") or (string.rep(" ", margin) .. " │")
    local run_ansi, run = nil, {}
    local function flush()
      if #run > 0 then out[#out + 1] = paint(table.concat(run), run_ansi) end
      run = {}
    end
    for c = 0, W - 1 do
      local idx = r * W + c
      local bits = dots[idx]
      local ch = bits and utf8.char(0x2800 + bits) or " "
      local ansi = bits and styles[owner[idx]].ansi or nil
      if ansi ~= run_ansi then flush(); run_ansi = ansi end
      run[#run + 1] = ch
    end
    flush()
    lines[#lines + 1] = (table.concat(out):gsub("%s+$", ""))
  end

  -- the x axis: a rule with a tick mark under each label's column
  local axis = {}
  for c = 0, W - 1 do axis[c] = "─" end
  local labels = {}
  for _, t in ipairs(xticks) do
    local c = math.floor((t.pos - x0) / (x1 - x0) * (DW - 1) + 0.5) // 2
    if c >= 0 and c < W then
      axis[c] = "┬"
      labels[#labels + 1] = { col = c, text = t.label }
    end
  end
  lines[#lines + 1] = string.rep(" ", margin + 1) .. "└" .. table.concat(axis, "", 0, W - 1)
  -- labels centred under their tick, skipping one that would overlap
  local row, used = {}, -1
  for _, l in ipairs(labels) do
    local len = utf8_len(l.text)
    local start = margin + 2 + l.col - len // 2
    if start > used + 1 then
      while #row < start do row[#row + 1] = " " end
      row[#row + 1] = l.text
      for _ = 2, len do row[#row + 1] = "" end
      used = start + len - 1
    end
  end
  lines[#lines + 1] = (table.concat(row):gsub("%s+$", ""))
  if chart.xlabel then
    local len = utf8_len(chart.xlabel)
    lines[#lines + 1] = string.rep(" ", math.max(0, margin + 2 + (W - len) // 2)) .. chart.xlabel
  end
  -- the legend: each named series' line style in its colour, then its name
  local legend = {}
  for k = 1, math.max(#chart.series, #chart.legend) do
    local st = styles[k] or chart:style(k)
    if st.name then
      local sample = st.style and LEGEND_LINE[st.style] or (" " .. (st.marker or "o"))
      local ansi = st.ansi or (st.letter and ANSI_LETTER[st.letter]) or ANSI_CYCLE[(k - 1) % #ANSI_CYCLE + 1]
      legend[#legend + 1] = paint(sample, ansi) .. " " .. st.name
    end
  end
  if #legend > 0 then lines[#lines + 1] = string.rep(" ", margin + 2) .. table.concat(legend, "   ") end
  return table.concat(lines, "\n") .. "\n"
end

return M
