-- torch/profiler_svg.lua: a profile as an SVG timeline (p:export_timeline).
-- One lane per device stream and one for the host, a time axis with
-- gridlines, each kernel a box labelled with its op where the name fits
-- (a tooltip always), copies in orange, the host's waits for a device
-- hatched, idle stretches of a lane marked with their length, a legend.
-- Events narrower than a pixel that touch are drawn as one box ("12 ops")
-- so that a long profile stays a small file a browser opens at once.
local profiler = require("torch.profiler")

local M = {}

local WIDTH, LEFT, RIGHT = 1100, 150, 24
local TOP, LANE_H, BOX_H = 64, 36, 24
local CHAR_W = 6.6             -- an estimate of an 11px sans-serif character

-- Kernels get a colour per op name (white text is readable on all);
-- copies and waits have their own.
local PALETTE = { "#4e79a7", "#59a14f", "#b07aa1", "#9c755f", "#3f8f8a", "#6b6ecf", "#8c6d31", "#5a8fcb" }
local COPY_FILL, IDLE_FILL, LANE_FILL = "#f28e2b", "#999999", "#f2f2f2"

-- Text as XML allows it: bytes that are not UTF-8 and the control
-- characters XML 1.0 forbids (all below 32 but tab, newline and return)
-- become U+FFFD, so any title (a file name, user text) gives a
-- well-formed file.
local function xml_text(s)
  local out, i = {}, 1
  while i <= #s do
    local ok, bad = utf8.len(s, i)
    if ok then out[#out + 1] = s:sub(i); break end
    out[#out + 1] = s:sub(i, bad - 1)
    out[#out + 1] = "\u{FFFD}"
    i = bad + 1
  end
  return (table.concat(out):gsub("[%z\1-\8\11\12\14-\31]", "\u{FFFD}"))
end

local function esc(s)
  return (xml_text(tostring(s)):gsub("[&<>\"']", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;",
    ["'"] = "&apos;" }))
end

local function colour(name)
  local h = 0
  for i = 1, #name do h = (h * 31 + name:byte(i)) % 1000003 end
  return PALETTE[h % #PALETTE + 1]
end

local function fmt(v) return string.format("%.2f", v) end

-- A tick step of 1, 2 or 5 times a power of ten giving about 8 ticks,
-- and the unit its labels use.
local function ticks(duration)
  local raw = duration / 8
  local mag = 10 ^ math.floor(math.log(raw, 10))
  local step = mag
  for _, m in ipairs({ 1, 2, 5, 10 }) do
    if m * mag >= raw then step = m * mag; break end
  end
  local unit, scale = "ns", 1
  if step >= 1e9 then unit, scale = "s", 1e9
  elseif step >= 1e6 then unit, scale = "ms", 1e6
  elseif step >= 1e3 then unit, scale = "µs", 1e3 end
  return step, unit, scale
end

local function label_for(t, scale, unit)
  local v = t / scale
  local s = string.format("%.3f", v):gsub("0+$", ""):gsub("%.$", "")
  return s .. " " .. unit
end

-- The boxes of one lane: events in start order, narrow neighbours merged.
local function boxes_of(events, x_of)
  local boxes = {}
  local cur
  for _, e in ipairs(events) do
    local x0, x1 = x_of(e.t0), x_of(e.t1)
    local narrow = x1 - x0 < 1
    if cur and narrow and cur.narrow and cur.kind == e.kind and x0 <= cur.x1 + 0.5 then
      cur.x1 = math.max(cur.x1, x1)
      cur.n = cur.n + 1
      cur.ns = cur.ns + (e.t1 - e.t0)
      cur.bytes = cur.bytes + e.bytes
      if cur.name ~= e.name then cur.mixed = true end
    else
      cur = { x0 = x0, x1 = x1, kind = e.kind, name = e.name, n = 1, ns = e.t1 - e.t0, bytes = e.bytes,
        narrow = narrow, device = e.device, lane = e.lane }
      boxes[#boxes + 1] = cur
    end
  end
  return boxes
end

-- The idle stretches of a lane: [a, b) in ns where none of its events runs.
local function gaps_of(events, duration)
  local gaps, upto = {}, 0
  for _, e in ipairs(events) do
    if e.t0 > upto then gaps[#gaps + 1] = { upto, e.t0 } end
    upto = math.max(upto, e.t1)
  end
  if duration > upto then gaps[#gaps + 1] = { upto, duration } end
  return gaps
end

local function bytes_text(n)
  if n >= 1e9 then return string.format("%.2f GB", n / 1e9) end
  if n >= 1e6 then return string.format("%.2f MB", n / 1e6) end
  if n >= 1e3 then return string.format("%.1f KB", n / 1e3) end
  return string.format("%d B", n)
end

-- A label that fits in w pixels: the text, or its start and "…", or nil.
local function fit(text, w)
  local room = math.floor((w - 6) / CHAR_W)
  if room >= #text then return text end
  if room >= 4 then return text:sub(1, room - 1) .. "…" end
  return nil
end

-- The legend's entries: the kernels' colours, then copies, waits, idle.
local function legend_items(p)
  local items = {
    { COPY_FILL, "copy between memories" }, { "url(#wait)", "host waiting for a device" },
    { LANE_FILL, "device idle / host in Lua between ops" },
  }
  -- the kernels' colours: one key per op, the longest first (at most 8)
  local total, names = {}, {}
  for _, e in ipairs(p.events) do
    if e.kind ~= "copy" and e.kind ~= "sync" then
      if not total[e.name] then names[#names + 1] = e.name; total[e.name] = 0 end
      total[e.name] = total[e.name] + (e.t1 - e.t0)
    end
  end
  table.sort(names, function(a, b) if total[a] ~= total[b] then return total[a] > total[b] end return a < b end)
  for i = 1, math.min(#names, 8) do table.insert(items, i, { colour(names[i]), names[i] }) end
  return items
end

-- How many rows the legend takes (the render loop wraps the same way).
local function legend_rows(items)
  local x, rows = LEFT, 1
  for _, it in ipairs(items) do
    local w = 44 + math.floor(#it[2] * CHAR_W)
    if x + w > WIDTH - RIGHT and x > LEFT then x, rows = LEFT, rows + 1 end
    x = x + w
  end
  return rows
end

function M.render(p, opts)
  opts = opts or {}
  local title = opts.title or "gshell profile"
  local lanes = p:lanes()
  local duration = math.max(p.duration_ns, 1)
  local plot_w = WIDTH - LEFT - RIGHT
  local function x_of(t) return LEFT + plot_w * t / duration end
  local height = TOP + math.max(#lanes, 1) * LANE_H + 40 + 20 * legend_rows(legend_items(p))
  local out = {}
  local function add(s) out[#out + 1] = s end
  add(string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" ' ..
    'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">', WIDTH, height, WIDTH, height))
  add('<defs><pattern id="wait" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">' ..
    '<rect width="6" height="6" fill="#e6e6e6"/><line x1="0" y1="0" x2="0" y2="6" stroke="#8a8a8a" stroke-width="2.5"/>' ..
    '</pattern></defs>')
  add(string.format('<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>', WIDTH, height))
  add(string.format('<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>', 10, esc(title)))
  add(string.format('<text x="%d" y="20" text-anchor="end" fill="#555555">wall %s, %d events</text>',
    WIDTH - RIGHT, esc(profiler.format_time(p.duration_ns)), #p.events))

  -- the time axis: ticks and labels above the lanes, faint gridlines through them
  local step, unit, scale = ticks(duration)
  local lanes_bottom = TOP + math.max(#lanes, 1) * LANE_H
  add('<g class="axis">')
  add(string.format('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333333"/>', LEFT, TOP - 8, LEFT + plot_w, TOP - 8))
  local t = 0
  while t <= duration + step * 1e-9 do
    local x = fmt(x_of(t))
    add(string.format('<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333333"/>', x, TOP - 13, x, TOP - 8))
    add(string.format('<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#dddddd"/>', x, TOP - 8, x, lanes_bottom))
    add(string.format('<text x="%s" y="%d" text-anchor="middle" fill="#333333">%s</text>', x, TOP - 17,
      esc(label_for(t, scale, unit))))
    t = t + step
  end
  add(string.format('<text x="%d" y="%d" fill="#555555">time</text>', 10, TOP - 17))
  add('</g>')

  if #lanes == 0 then
    add(string.format('<text x="%d" y="%d" fill="#555555">no events: nothing ran on a device or the CPU</text>',
      LEFT, TOP + 22))
  end
  local by_lane = {}
  for _, e in ipairs(p.events) do
    local l = by_lane[e.lane]
    if not l then l = {}; by_lane[e.lane] = l end
    l[#l + 1] = e
  end
  for i, l in ipairs(lanes) do
    local y = TOP + (i - 1) * LANE_H
    local by = y + (LANE_H - BOX_H) / 2
    local events = by_lane[l.lane]
    add(string.format('<g class="lane" data-lane="%s">', esc(l.lane)))
    add(string.format('<text class="lane-label" x="%d" y="%s" dominant-baseline="middle" font-weight="bold">%s</text>',
      10, fmt(y + LANE_H / 2), esc(profiler.lane_label(l.lane))))
    add(string.format('<rect x="%d" y="%s" width="%d" height="%d" fill="%s"/>', LEFT, fmt(by), plot_w, BOX_H, LANE_FILL))
    for _, g in ipairs(gaps_of(events, duration)) do
      local x0, x1 = x_of(g[1]), x_of(g[2])
      -- a device with nothing queued is idle; the host between ops is busy
      -- running the program (Lua, the interpreter), just not in an op
      local text = (l.lane == "host" and "Lua " or "idle ") .. profiler.format_time(g[2] - g[1])
      if x1 - x0 >= #text * CHAR_W + 10 then
        add(string.format('<text class="idle" x="%s" y="%s" text-anchor="middle" dominant-baseline="middle" ' ..
          'fill="%s" font-style="italic" font-size="10">%s</text>', fmt((x0 + x1) / 2), fmt(by + BOX_H / 2),
          IDLE_FILL, esc(text)))
      end
    end
    for _, b in ipairs(boxes_of(events, x_of)) do
      local w = math.max(b.x1 - b.x0, 0.8)
      local fill = b.kind == "copy" and COPY_FILL or b.kind == "sync" and "url(#wait)" or colour(b.name)
      local what = b.n > 1 and string.format("%d %s%s", b.n, b.mixed and "ops" or b.name, b.mixed and "" or " calls")
                   or b.name
      -- a wait names the device it waited for when its recorder knew it
      local waited = b.device ~= "cpu" and b.device or "a device"
      local where = b.kind == "sync" and ("host waiting for " .. waited) or profiler.lane_label(b.lane)
      add(string.format('<rect class="%s" x="%s" y="%s" width="%s" height="%d" fill="%s" stroke="#ffffff" ' ..
        'stroke-width="0.5"><title>%s on %s: %s%s</title></rect>', b.kind, fmt(b.x0), fmt(by), fmt(w), BOX_H,
        fill, esc(what), esc(where), esc(profiler.format_time(b.ns)),
        b.bytes > 0 and esc(", " .. bytes_text(b.bytes)) or ""))
      local text = fit(b.kind == "sync" and (b.device ~= "cpu" and "wait " .. b.device or "wait") or what, w)
      if text then
        local ink = (b.kind == "copy" or b.kind == "sync") and "#000000" or "#ffffff"
        add(string.format('<text class="label" x="%s" y="%s" text-anchor="middle" dominant-baseline="middle" ' ..
          'fill="%s">%s</text>', fmt(b.x0 + w / 2), fmt(by + BOX_H / 2), ink, esc(text)))
      end
    end
    add('</g>')
  end

  -- the legend
  local ly = lanes_bottom + 22
  local items = legend_items(p)
  local x = LEFT
  add('<g class="legend">')
  for _, it in ipairs(items) do
    local w = 44 + math.floor(#it[2] * CHAR_W)
    if x + w > WIDTH - RIGHT and x > LEFT then x, ly = LEFT, ly + 20 end  -- wrap to a new row
    add(string.format('<rect x="%d" y="%d" width="14" height="14" fill="%s" stroke="#999999" stroke-width="0.5"/>',
      x, ly, it[1]))
    add(string.format('<text class="key" x="%d" y="%d" dominant-baseline="middle">%s</text>', x + 20, ly + 7, esc(it[2])))
    x = x + w
  end
  add('</g>')
  add('</svg>')
  return table.concat(out, "\n") .. "\n"
end

return M
