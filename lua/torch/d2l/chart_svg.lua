-- torch.d2l.chart_svg: a chart (chart.lua) as SVG, for Jupyter
-- (image/svg+xml) and the files beside --notebook --md. The size is the
-- book's figsize in inches at 100 pixels per inch (3.5 x 2.5 by default),
-- with the legend in a row below the x label.
--
--   render(chart) -> SVG text (a standalone document)
local Chart = require("torch.d2l.chart")

local M = {}

local DASH = { ["-"] = nil, ["--"] = "6,3", ["-."] = "6,3,1.5,3", [":"] = "1.5,2.5" }

local function esc(s)
  return (tostring(s):gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end
M.escape = esc

-- Coordinates are clamped to a million pixels: a point far outside the
-- limits (1e300) still gives its line the right direction where it is
-- seen (clipped to the plot), without a 300-digit number.
local function f(v)
  if v > 1e6 then v = 1e6 elseif v < -1e6 then v = -1e6 end
  return string.format("%.2f", v)
end

function M.render(chart)
  local tr = Chart.transform
  local W = math.floor((chart.figsize[1] or 3.5) * 100 + 0.5)
  local H = math.floor((chart.figsize[2] or 2.5) * 100 + 0.5)
  local named = 0
  for k = 1, math.max(#chart.series, #chart.legend) do if chart.legend[k] then named = named + 1 end end
  local left, right, top = 52, 12, chart.title and 26 or 12
  local bottom = 34 + (chart.xlabel and 16 or 0)
  local legend_h = named > 0 and 22 or 0
  local total_h = H + legend_h
  local pw, ph = W - left - right, H - top - bottom
  local x0, x1, xticks = chart:axis("x")
  local y0, y1, yticks = chart:axis("y")
  local function px(x) return left + (tr(x, chart.xscale) - x0) / (x1 - x0) * pw end
  local function py(y) return top + (1 - (tr(y, chart.yscale) - y0) / (y1 - y0)) * ph end
  local function tx(t) return left + (t - x0) / (x1 - x0) * pw end
  local function ty(t) return top + (1 - (t - y0) / (y1 - y0)) * ph end

  local o = {}
  o[#o + 1] = string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
    .. 'font-family="DejaVu Sans, Arial, sans-serif" font-size="10">', W, total_h, W, total_h)
  o[#o + 1] = string.format('<rect width="%d" height="%d" fill="white"/>', W, total_h)
  if chart.title then
    o[#o + 1] = string.format('<text x="%s" y="16" text-anchor="middle" font-size="12">%s</text>',
      f(left + pw / 2), esc(chart.title))
  end
  -- grid lines and ticks
  o[#o + 1] = '<g stroke="#b0b0b0" stroke-width="0.8">'
  for _, t in ipairs(xticks) do
    o[#o + 1] = string.format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke-dasharray="2,2"/>', f(tx(t.pos)),
      f(top), f(tx(t.pos)), f(top + ph))
  end
  for _, t in ipairs(yticks) do
    o[#o + 1] = string.format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke-dasharray="2,2"/>', f(left),
      f(ty(t.pos)), f(left + pw), f(ty(t.pos)))
  end
  o[#o + 1] = '</g>'
  o[#o + 1] = '<g fill="black">'
  for _, t in ipairs(xticks) do
    o[#o + 1] = string.format('<text x="%s" y="%s" text-anchor="middle">%s</text>', f(tx(t.pos)),
      f(top + ph + 14), esc(t.label))
  end
  for _, t in ipairs(yticks) do
    o[#o + 1] = string.format('<text x="%s" y="%s" text-anchor="end">%s</text>', f(left - 5),
      f(ty(t.pos) + 3.5), esc(t.label))
  end
  o[#o + 1] = '</g>'
  if chart.xlabel then
    o[#o + 1] = string.format('<text x="%s" y="%s" text-anchor="middle">%s</text>', f(left + pw / 2),
      f(top + ph + 30), esc(chart.xlabel))
  end
  if chart.ylabel then
    o[#o + 1] = string.format('<text transform="translate(12,%s) rotate(-90)" text-anchor="middle">%s</text>',
      f(top + ph / 2), esc(chart.ylabel))
  end
  -- the curves, clipped to the plot area
  o[#o + 1] = string.format('<clipPath id="plotarea"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath>',
    left, top, pw, ph)
  o[#o + 1] = '<g clip-path="url(#plotarea)" fill="none" stroke-width="1.5">'
  for k = 1, #chart.series do
    local s = chart.series[k]
    local st = chart:style(k)
    if s then
      local pts = {}
      for i = 1, #s.x do
        local x, y = s.x[i], s.y[i]
        if chart:drawable(x, y) then
          pts[#pts + 1] = f(px(x)) .. "," .. f(py(y))
        end
      end
      if st.style and #pts > 0 then
        local dash = DASH[st.style]
        o[#o + 1] = string.format('<polyline class="series" data-name="%s" stroke="%s"%s points="%s"/>',
          esc(st.name or ("y" .. k)), st.color, dash and (' stroke-dasharray="' .. dash .. '"') or "",
          table.concat(pts, " "))
      end
      if st.marker then
        for _, p in ipairs(pts) do
          local cx, cy = p:match("([^,]+),(.+)")
          o[#o + 1] = string.format('<circle cx="%s" cy="%s" r="2.5" fill="%s" stroke="none"/>', cx, cy, st.color)
        end
      end
    end
  end
  o[#o + 1] = '</g>'
  o[#o + 1] = string.format('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black" '
    .. 'stroke-width="0.8"/>', left, top, pw, ph)
  -- the legend, in a row under the plot
  if named > 0 then
    local x = left
    local y = H + 8
    o[#o + 1] = '<g class="legend">'
    for k = 1, math.max(#chart.series, #chart.legend) do
      local st = chart:style(k)
      if st.name then
        local dash = st.style and DASH[st.style]
        o[#o + 1] = string.format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5"%s/>',
          f(x), f(y), f(x + 20), f(y), st.color, dash and (' stroke-dasharray="' .. dash .. '"') or "")
        o[#o + 1] = string.format('<text x="%s" y="%s">%s</text>', f(x + 24), f(y + 3.5), esc(st.name))
        x = x + 30 + 6 * #st.name
      end
    end
    o[#o + 1] = '</g>'
  end
  o[#o + 1] = '</svg>'
  return table.concat(o, "\n") .. "\n"
end

return M
