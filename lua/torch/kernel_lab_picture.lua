-- torch/kernel_lab_picture.lua: r:picture() for a kernel lab launch
-- (issue 30; docs/kernel-lab.md, "A picture of a block"). The launch
-- records what each thread of its first block read and wrote
-- (torch/kernel_lab.lua's trace); this draws that block as a grid of
-- cells, one per thread, laid out as the block is (x across, y down; a
-- 1-d block wraps into rows), each cell listing the elements the thread
-- touched: "r a[0]" (read), "w out[0]" (wrote), "a out[0]" (an atomic),
-- with ranges folded ("a[0..31]", "b[0,32..992]": every 32nd) and repeats
-- counted ("×4"). Big blocks show their first rows and columns only.
local M = {}

local WIDTH = 80    -- the terminal's width the grid fits in
local MAX_CELL = 24 -- a cell's widest text; longer lines end in ".."
local MAX_ROWS = 4  -- rows of cells shown
local MAX_LINES = 8 -- lines per cell (one per array and kind)

-- Display width: box characters and × are one column each.
local function width(s) return utf8.len(s) or #s end

local function cut(s, w)
  if width(s) <= w then return s .. string.rep(" ", w - width(s)) end
  return s:sub(1, w - 2) .. ".."
end

-- The indices a thread touched in one array, folded: one element, a run
-- of consecutive ones, a progression, or the first few and how many.
function M.indices(l)
  local seen, u = {}, {}
  for k = 1, math.min(l.n, #l) do
    local i = l[k]
    if not seen[i] then seen[i] = true; u[#u + 1] = i end
  end
  table.sort(u)
  local s
  if #u == 1 then s = tostring(u[1])
  elseif #u == 2 then s = u[1] .. "," .. u[2]
  else
    local d, even = u[2] - u[1], true
    for k = 3, #u do if u[k] - u[k - 1] ~= d then even = false; break end end
    if even and d == 1 then s = u[1] .. ".." .. u[#u]
    elseif even then s = u[1] .. "," .. u[2] .. ".." .. u[#u]
    else s = u[1] .. "," .. u[2] .. ",.. " .. #u .. " elements" end
  end
  local more = l.n > #l and "+" or ""
  return "[" .. s .. "]" .. ((l.n > #u) and ("×" .. l.n .. more) or "")
end

local function cell_lines(t)
  if not t then return { "-" } end
  local lines = {}
  for k, key in ipairs(t.keys) do
    if k == MAX_LINES and #t.keys > MAX_LINES then
      lines[k] = string.format("+%d more", #t.keys - MAX_LINES + 1)
      break
    end
    lines[k] = key .. M.indices(t[key])
  end
  return lines
end

function M.render(r)
  local tr = r._trace
  local bx, by, bz = r.block[1], r.block[2], r.block[3]
  local n = bx * by * bz
  local head = string.format("%s: block (0,0,0) of %dx%dx%d threads; r read, w wrote, a atomic (indices from 0)",
    r.name, bx, by, bz)
  if not tr then return head .. "\n(nothing recorded)" end
  -- the cells shown: (label, thread) in rows
  local rows = {}
  local two_d = by > 1 or bz > 1
  local labels, lines, w = {}, {}, 1
  local function measure(t)
    labels[t] = two_d and string.format("(%d,%d)", t % bx, (t // bx) % by) or ("t" .. t)
    lines[t] = cell_lines(tr[t])
    w = math.max(w, width(labels[t]))
    for _, l in ipairs(lines[t]) do w = math.max(w, width(l)) end
  end
  for t = 0, math.min(n, 64 * MAX_ROWS) - 1 do measure(t) end
  w = math.min(w, MAX_CELL)
  local cols = math.max(1, (WIDTH - 1) // (w + 1))
  local shown
  if two_d then
    cols = math.min(cols, bx)
    for y = 0, math.min(by, MAX_ROWS) - 1 do
      local row = {}
      for x = 0, cols - 1 do row[#row + 1] = y * bx + x end
      rows[#rows + 1] = row
    end
    shown = string.format("threads x 0..%d of %d, y 0..%d of %d%s", cols - 1, bx, #rows - 1, by,
      bz > 1 and string.format(", z 0 of %d", bz) or "")
    if cols == bx and #rows == by and bz == 1 then shown = nil end
  else
    cols = math.min(cols, bx)
    for t = 0, math.min(n, cols * MAX_ROWS) - 1 do
      local row = rows[t // cols + 1] or {}
      rows[t // cols + 1] = row
      row[#row + 1] = t
    end
    local last = math.min(n, cols * MAX_ROWS)
    if last < n then shown = string.format("threads 0..%d of %d", last - 1, n) end
  end
  local bar = string.rep("─", w)
  local function rule(l, m, rr, k) return l .. string.rep(bar .. m, k - 1) .. bar .. rr end
  -- between a row of `above` cells and one of k (k <= above: only a 1-d
  -- block's last row is shorter)
  local function between(above, k)
    local s = "├"
    for j = 1, above do
      s = s .. bar .. (j == above and (k == above and "┤" or "┘") or (j <= k and "┼" or "┴"))
    end
    return s
  end
  local out = { head }
  for ri, row in ipairs(rows) do
    local k = #row
    out[#out + 1] = ri == 1 and rule("┌", "┬", "┐", k) or between(#rows[ri - 1], k)
    local depth = 0
    for _, t in ipairs(row) do depth = math.max(depth, #lines[t]) end
    local function line(get)
      local parts = {}
      for _, t in ipairs(row) do parts[#parts + 1] = cut(get(t), w) end
      out[#out + 1] = "│" .. table.concat(parts, "│") .. "│"
    end
    line(function(t) return labels[t] end)
    for d = 1, depth do line(function(t) return lines[t][d] or "" end) end
    if ri == #rows then out[#out + 1] = rule("└", "┴", "┘", k) end
  end
  if shown then out[#out + 1] = "(" .. shown .. " shown)" end
  return table.concat(out, "\n")
end

return M
