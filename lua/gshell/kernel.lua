-- gshell.kernel: the session side of `gshell --kernel` (src/jupyter/kernel_main.c
-- speaks the Jupyter protocol and calls these). Everything here is the
-- prompt's own machinery: the same session (locals, `_`, magics), the same
-- printer for Out[n], the same completer, help and continuation test.
--
--   kernel.start()                      the session (the prompt's)
--   kernel.execute(code, n, silent, store)     runs cell n: {status, result, html, svg, ename, evalue, traceback}
--   kernel.complete(code, cursor)       matches, cursor_start, cursor_end
--   kernel.inspect(code, cursor)        help text for the name at the cursor, or nil
--   kernel.is_complete(code)            "complete", "incomplete" or "invalid"
--   kernel.evaluate(expr)               ok, text (user_expressions)
--   kernel.history(req)                 this session's cells, as history_request asks
--   kernel.banner()
--
-- Cursor positions are in Unicode code points, as the protocol counts them.
local Session = require "gshell.session"
local repl = require "gshell.repl"
local complete = require "gshell.complete"
local help = require "gshell.help"
local html = require "gshell.html"

local M = {}

-- ---- io.read through the frontend ---------------------------------------
-- A cell's io.read (and io.stdin:read, io.lines()) asks the frontend for a
-- line with an input_request: one request per format. "n" converts the
-- line as tonumber does, "a" is the whole line typed, a number k its first
-- k bytes. io.lines() stops at an empty line. After io.input(file), io.read
-- reads that file as usual.
local function install_input(kio)
  local real_read, real_input, real_stdin = io.read, io.input, io.stdin
  local function ask(i, fmt)
    local line = kio.input("", false)
    if math.type(fmt) == "integer" then return line:sub(1, fmt) end
    if type(fmt) ~= "string" then
      error(string.format("bad argument #%d to 'read' (invalid format)", i), 3)
    end
    local f = fmt:gsub("^%*", ""):sub(1, 1)
    if f == "l" or f == "a" then return line end
    if f == "L" then return line .. "\n" end
    if f == "n" then return tonumber(line) end
    error(string.format("bad argument #%d to 'read' (invalid format)", i), 3)
  end
  local function read(...)
    local n = select("#", ...)
    if n == 0 then return ask(1, "l") end
    local out = {}
    for i = 1, n do out[i] = ask(i, (select(i, ...))) end
    return table.unpack(out, 1, n)
  end
  local stdin = setmetatable({}, {
    __name = "FILE*",
    __tostring = function() return "file (frontend stdin)" end,
    __index = {
      read = function(_, ...) return read(...) end,
      lines = function(_, ...)
        local fmts = table.pack(...)
        return function()
          local v = read(table.unpack(fmts, 1, fmts.n))
          if v == "" then return nil end
          return v
        end
      end,
      close = function() return nil, "the frontend's stdin cannot be closed" end,
      setvbuf = function() return true end,
    },
  })
  io.stdin = stdin
  io.read = function(...)
    if real_input() ~= real_stdin then return real_read(...) end
    return read(...)
  end
  local real_lines = io.lines
  io.lines = function(name, ...)
    if name == nil and real_input() == real_stdin then return stdin:lines(...) end
    return real_lines(name, ...)
  end
end

-- Pictures (torch.display: d2l's Animator, plot, show_images) go out as
-- display_data with a display_id, then update_display_data with the same
-- id, while the cell runs.
local function install_display(kio)
  local display = require "torch.display"
  display.set_frontend({
    display = function(obj, id) kio.display(display.mime_bundle(obj), id, false) end,
    update = function(obj, id) kio.display(display.mime_bundle(obj), id, true) end,
  })
end

function M.start()
  local s = repl.start()
  if not M.started then
    M.started = true
    install_input(require "gshell.kernel_io")
    install_display(require "gshell.kernel_io")
  end
  return s
end

-- ---- history -------------------------------------------------------------
-- The cells run in this kernel's life (session 1; nothing is kept across
-- restarts), each {line = n, input = code, output = shown text or nil}.
local history = {}

local function remember(n, code, result)
  history[#history + 1] = { line = n, input = code, output = result }
end

-- A glob ("*" any text, "?" one character) as an anchored Lua pattern.
local function glob_pattern(glob)
  local p = glob:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0"):gsub("%*", ".*"):gsub("%?", ".")
  return "^" .. p .. "$"
end

-- req: hist_access_type ("tail", "range" or "search"), session, start,
-- stop, n, pattern, unique. Returns {session, line, input, output} lists.
function M.history(req)
  local picked = {}
  local kind = req.hist_access_type
  if kind == "tail" then
    local n = req.n or #history
    for i = math.max(1, #history - n + 1), #history do picked[#picked + 1] = history[i] end
  elseif kind == "range" then
    local session = req.session or 0
    if session == 0 or session == 1 then         -- 0: the current session
      local start, stop = req.start or 1, req.stop
      for _, h in ipairs(history) do
        if h.line >= start and (stop == nil or h.line < stop) then picked[#picked + 1] = h end
      end
    end
  elseif kind == "search" then
    local pat, seen = glob_pattern(req.pattern or "*"), {}
    for i = #history, 1, -1 do                       -- newest first, for unique
      local h = history[i]
      if h.input:match(pat) and not (req.unique and seen[h.input]) then
        seen[h.input] = true
        table.insert(picked, 1, h)
      end
    end
    if req.n and #picked > req.n then picked = { table.unpack(picked, #picked - req.n + 1) } end
  end
  local out = {}
  for i, h in ipairs(picked) do out[i] = { 1, h.line, h.input, h.output } end
  return out
end

-- ---- execute ----------------------------------------------------------------

-- The traceback lines that belong to the user's code: the message, then the
-- frames down to where the session called the cell.
local function traceback_lines(tb)
  local lines = {}
  for line in (tb .. "\n"):gmatch("(.-)\n") do
    if line:find("in function 'xpcall'", 1, true) then break end
    lines[#lines + 1] = line
  end
  return lines
end

local function is_interrupt(msg)
  return msg:find("interrupted!$") ~= nil
end

-- A value that draws itself (a profile's timeline: its _repr_svg_, as
-- IPython's) as SVG text, or nil. The kernel shows it as image/svg+xml
-- before the cell's Out[n], which stays the text the prompt prints.
local function svg_of(v)
  if type(v) ~= "table" then return nil end
  local ok, f = pcall(function() return v._repr_svg_ end)
  if not ok or type(f) ~= "function" then return nil end
  local ok2, svg = pcall(f, v)
  if ok2 and type(svg) == "string" then return svg end
  return nil
end

-- Runs cell n as the prompt would; what it prints goes out as it is
-- written (stdout is the iopub stream), the shown value is the result.
function M.execute(code, n, silent, store)
  local s = M.start()
  local r = { status = "ok" }
  local saved = s.err
  -- %tb in this cell shows the previous cell's traceback: keep it, and
  -- tell this cell's own from it by the session's count of tracebacks
  local serial = s.tb_serial
  local hints = {}
  s.err = function(msg)   -- the error first, then any hints the session adds
    r.status = "error"
    if r.message then hints[#hints + 1] = msg else r.message = msg end
  end
  -- the shown value itself, for its HTML (one value only)
  local show_text = getmetatable(s).__index.show_text
  s.show_text = function(self, results)
    if results and results.n == 1 then r.value = results[1] end
    return show_text(self, results)
  end
  local ok, err = pcall(s.run_cell, s, code, {
    chunkname = string.format("=In[%d]", n),
    show = function(text) r.result = text end,
  })
  s.err = saved
  s.show_text = nil
  if r.result and r.value ~= nil then
    r.html = html.repr(r.value)
    r.svg = svg_of(r.value)
  end
  r.value = nil
  io.stdout:flush()
  if not ok then
    r.status, r.message = "error", Session.error_text(err)
  end
  if r.status == "error" then
    local msg = r.message or "error"
    r.result = nil
    r.evalue = msg
    local tb = s.tb_serial ~= serial and s.last_traceback or nil
    if is_interrupt(msg) then
      r.ename = "Interrupted"
    elseif tb then
      r.ename = "Error"
    else
      r.ename = "SyntaxError"      -- the cell did not compile: nothing ran
    end
    r.traceback = tb and traceback_lines(tb) or { msg }
    for _, h in ipairs(hints) do r.traceback[#r.traceback + 1] = h end
  end
  if silent then r.result = nil end
  if store then remember(n, code, r.result) end
  return r
end

-- user_expressions: the value of expr in the session, shown as at the prompt.
function M.evaluate(expr)
  local s = M.start()
  local fn, err = load("return " .. expr, "=(expression)", "t", s.env)
  if not fn then return false, err end
  local ok, res = s:call(fn)
  if not ok then return false, res end
  return true, require("gshell.pretty").repr_values(res.n, table.unpack(res, 1, res.n))
end

-- ---- complete, inspect, is_complete ---------------------------------------

-- Byte offset of code point position pos (0-based) in s: the prefix length.
local function byte_prefix(s, pos)
  if pos < 0 then return #s end
  local ok, b = pcall(utf8.offset, s, pos + 1)
  if not ok or b == nil then return #s end
  return b - 1
end

local function cp_len(s)
  return utf8.len(s) or #s
end

function M.complete(code, cursor)
  local s = M.start()
  local upto = byte_prefix(code, cursor)
  local before = code:sub(1, upto)
  local word = complete.word_before(before)
  local matches = complete.complete(s, word, before:sub(1, #before - #word))
  local pos = cp_len(before)
  return matches, pos - cp_len(word), pos
end

-- The dotted name at the cursor: the word around it, or the function
-- before an open parenthesis ("torch.ones(2, |" asks about torch.ones).
local function name_at(code, cursor)
  local upto = byte_prefix(code, cursor)
  local left = code:sub(1, upto):match("[%w_%.:]*$")
  local right = code:sub(upto + 1):match("^[%w_%.:]*")
  local name = (left .. right):gsub("^[%.:]+", ""):gsub("[%.:]+$", "")
  if name ~= "" then return name end
  -- inside a call: the callee before the innermost unclosed "("
  local depth = 0
  local before = code:sub(1, upto)
  for i = #before, 1, -1 do
    local c = before:sub(i, i)
    if c == ")" then depth = depth + 1
    elseif c == "(" then
      if depth == 0 then
        return (before:sub(1, i - 1):match("([%a_][%w_%.:]*)%s*$"))
      end
      depth = depth - 1
    end
  end
  return nil
end

function M.inspect(code, cursor)
  local s = M.start()
  local name = name_at(code, cursor)
  if not name or not name:match("^[%a_]") then return nil end
  return help.name_text(s, name)
end

function M.is_complete(code)
  local s = M.start()
  if code:match("^%s*$") then return "complete" end
  local fn, why = s:compile(code, { chunkname = "=In[?]", allow_incomplete = true })
  if fn then return "complete" end
  if why == "incomplete" then return "incomplete" end
  return "invalid"
end

function M.banner()
  return repl.banner(true)
end

return M
