-- torch.display: the session's one display/update_display pair.
--
-- A picture (a chart, an image grid) is one object that offers views of
-- itself, and whoever shows it picks the view its front end can use:
--   obj:_repr_term_(opts)  text for a terminal (opts.color: ANSI colours)
--   obj:_repr_line_()      one summary line, for output that is not a terminal
--   obj:_repr_svg_()       SVG text (Jupyter, --notebook --md)
--   obj:_repr_png_()       PNG bytes (Jupyter, --notebook --md)
-- display(obj) shows it and returns a display id; update_display(obj, id)
-- shows it again in place of what that id showed. The front end decides
-- what "in place" means: the terminal redraws over the previous frame, a
-- Jupyter kernel sends update_display_data, anything else prints a line.
--
-- Front ends other than the plain one (the Jupyter kernel, --notebook) are
-- installed by the shell with set_frontend({display =, update =}); both
-- functions receive (obj, id). The library itself never names the shell.
local torch = require("torch")

local M = {}

local frontend          -- nil: the plain front end below
local counter = 0

-- ---- the plain front end: stdout, a terminal or not ------------------------

-- Is stdout a terminal, and does it take colours? GSHELL_PICTURES=term or
-- =line overrides the guess (specs, and users piping through a pager).
function M.stdout_kind()
  local forced = os.getenv("GSHELL_PICTURES")
  if forced == "term" or forced == "line" then return forced end
  return torch._isatty(1) and "term" or "line"
end

-- Colours when the terminal has them: not with NO_COLOR set (no-color.org)
-- nor on a dumb terminal, unless CLICOLOR_FORCE is set (bixense.com/clicolors).
function M.use_color()
  local nc = os.getenv("NO_COLOR")
  if nc and nc ~= "" then return false end
  local force = os.getenv("CLICOLOR_FORCE")
  if force and force ~= "" and force ~= "0" then return true end
  local term = os.getenv("TERM") or ""
  return term ~= "" and term ~= "dumb"
end

-- What the terminal front end drew last: redrawing in place is moving up
-- over exactly those lines, which is only right while nothing else was
-- printed after them (the Animator's loop prints nothing in between).
local last_id, last_lines = nil, 0

local function count_lines(s)
  local _, n = s:gsub("\n", "")
  if s ~= "" and s:sub(-1) ~= "\n" then n = n + 1 end
  return n
end

-- The terminal's width in columns (COLUMNS, else asked of the terminal,
-- else 80): pictures fit in it rather than wrap.
function M.columns()
  local c = tonumber(os.getenv("COLUMNS") or "")
  if c and c >= 20 then return math.floor(c) end
  c = torch._term_size(1)
  return c or 80
end

local function plain_show(obj, id, update)
  io.stdout:flush()
  if M.stdout_kind() == "term" and obj._repr_term_ then
    local text = obj:_repr_term_({ color = M.use_color(), columns = M.columns() })
    if text:sub(-1) ~= "\n" then text = text .. "\n" end
    local out = {}
    if update and last_id == id and last_lines > 0 then
      -- cursor up to the first line of the old frame, erase to the end
      out[#out + 1] = string.format("\27[%dF\27[J", last_lines)
    end
    out[#out + 1] = text
    io.stdout:write(table.concat(out))
    last_id, last_lines = id, count_lines(text)
  else
    local line = obj._repr_line_ and obj:_repr_line_() or tostring(obj)
    io.stdout:write(line, "\n")
    last_id, last_lines = nil, 0
  end
  io.stdout:flush()
end

-- ---- the pair ------------------------------------------------------------------

local function check(obj, who)
  if type(obj) ~= "table" then
    error(who .. ": expected a picture (a chart or an image grid), got " .. type(obj), 3)
  end
end

-- display(obj[, {display_id =}]) -> the display id (a string).
function M.display(obj, opts)
  check(obj, "display")
  local id = opts and opts.display_id
  if id == nil then
    counter = counter + 1
    id = string.format("gshell-%d-%d", math.floor(torch.clock() * 1000) % 1000000, counter)
  end
  if frontend then frontend.display(obj, id) else plain_show(obj, id, false) end
  return id
end

-- update_display(obj, id): the picture shown under id becomes obj.
function M.update_display(obj, id)
  check(obj, "update_display")
  if type(id) ~= "string" then
    error("update_display: expected the display id that display() returned, got " .. type(id), 2)
  end
  if frontend then frontend.update(obj, id) else plain_show(obj, id, true) end
end

-- Installs a front end ({display = fn(obj, id), update = fn(obj, id)}, or
-- nil for the plain one); returns the previous one.
function M.set_frontend(fe)
  if fe ~= nil and (type(fe) ~= "table" or type(fe.display) ~= "function" or type(fe.update) ~= "function") then
    error("display.set_frontend: expected {display = function, update = function} or nil", 2)
  end
  local old = frontend
  frontend = fe
  last_id, last_lines = nil, 0
  return old
end

-- Writes the picture to a file: .svg (its SVG view) or .png (its PNG view).
function M.save(obj, path)
  check(obj, "display.save")
  local data
  if path:match("%.svg$") and obj._repr_svg_ then data = obj:_repr_svg_()
  elseif path:match("%.png$") and obj._repr_png_ then data = obj:_repr_png_()
  else
    error("display.save: " .. path .. ": this picture can be saved as "
          .. (obj._repr_svg_ and ".svg" or "") .. (obj._repr_png_ and " .png" or ""), 2)
  end
  local ok, err = torch._save_text(path, data)
  if not ok then error("display.save: " .. tostring(err), 2) end
  return path
end

-- Base64 (RFC 4648) of a byte string: Jupyter carries PNG bytes this way.
local b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
function M.base64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = a * 65536 + (b or 0) * 256 + (c or 0)
    local c1, c2 = n >> 18, (n >> 12) & 63
    local c3, c4 = (n >> 6) & 63, n & 63
    out[#out + 1] = b64:sub(c1 + 1, c1 + 1) .. b64:sub(c2 + 1, c2 + 1)
      .. (b and b64:sub(c3 + 1, c3 + 1) or "=") .. (c and b64:sub(c4 + 1, c4 + 1) or "=")
  end
  return table.concat(out)
end

-- The Jupyter mime bundle of a picture: its SVG or PNG view, and its line
-- as text/plain (what a front end without pictures shows).
function M.mime_bundle(obj)
  local data = {}
  if obj._repr_svg_ then data["image/svg+xml"] = obj:_repr_svg_() end
  if obj._repr_png_ then data["image/png"] = M.base64(obj:_repr_png_()) end
  data["text/plain"] = obj._repr_line_ and obj:_repr_line_() or tostring(obj)
  return data
end

return M
